// implicit-sync-call on hand-built traces: a managed buffer freed and allocated again in each
// iteration makes every iteration's kernel fault its pages in anew; the fix (one allocation before
// the loop) keeps them on the device after the first, so the later kernels' fault service time is
// part of what the fix saves. Faults on other blocks, or after the host touched the block, are not.
#include <catch2/catch.hpp>

#include "findings_test_util.h"
#include "trace_builder.h"

namespace cuoverlap {
namespace {

using test::TraceBuilder;
using test::kUs;

constexpr std::uint64_t kBuffer = 0x7f0000000000ull;  // 2 MiB aligned

void faultGroup(TraceBuilder& b, double start_us, double end_us, std::uint64_t address) {
  UmPageFaultGroup f;
  f.start = TraceBuilder::ns(start_us);
  f.end = TraceBuilder::ns(end_us);
  f.address = address;
  f.faults = 8;
  f.pid = 4242;
  f.access = schema::UmAccessType::kWrite;
  b.trace().unified_memory.gpu_faults.push_back(f);
}

// Three iterations of: cudaMallocManaged, a 1 ms kernel that spends 960 µs waiting for its page
// faults (the first fault group at `addresses[i]`, a second one 1 MiB on, in the same 2 MiB
// block), a synchronize, cudaFree.
TraceBuilder allocLoop(const std::uint64_t (&addresses)[3]) {
  TraceBuilder b;
  for (int i = 0; i < 3; ++i) {
    const double t = 1050.0 * i;
    b.call("cudaMallocManaged_v6000", t + 1, t + 10);
    b.launch(13, t + 11, t + 12, t + 15, t + 1015);
    faultGroup(b, t + 20, t + 500, addresses[i]);
    faultGroup(b, t + 500, t + 980, addresses[i] + (1u << 20));
    b.call("cudaStreamSynchronize_v3020", t + 13, t + 1016);
    b.call("cudaFree_v3020", t + 1017, t + 1050);
  }
  return b;
}

}  // namespace

TEST_CASE("implicit-sync-call: a managed buffer allocated anew faults again; kept, it would not") {
  TraceBuilder b = allocLoop({kBuffer, kBuffer + 0x2000, kBuffer});
  const auto findings = test::findingsOf(b.build());
  const Finding* f = test::findingById(findings, "implicit-sync-call");
  REQUIRE(f != nullptr);
  // The first kernel still faults (the one allocation before the loop is fresh too); the other two
  // run 40 µs. With the calls gone: kernel 1 at 15-1015, the synchronize returns 1 µs later, free
  // and allocation take no time (the µs between calls stay), launch 2 released at 1020 -> kernel
  // 2 at 1020-1060, kernel 3 at 1065-1105: span 3115 - 15 -> 1105 - 15.
  CHECK(fixSavingNs(*f) == Approx(static_cast<double>(2010 * kUs)).margin(10 * kUs));
  bool named = false;
  for (const Evidence& e : f->evidence) named |= e.detail.find("allocated again") != std::string::npos;
  CHECK(named);
}

TEST_CASE("implicit-sync-call: a re-faulted kernel runs no faster than its fault-free runs") {
  // The loop above, then the same kernel once more without faults (3165-3765: 600 µs). Its runs
  // served their faults while the rest of the grid ran on, so kept, kernels 2 and 3 take that run's
  // 600 µs, not their runs less the faults' 960 µs of service (40 µs). With the calls gone: kernel
  // 2 at 1020-1620, kernel 3 at 1625-2225, the sync returns 1 µs later, and the last kernel, with
  // the µs between calls kept (the last free goes), at about 2240-2840: span 3750 -> about 2830.
  TraceBuilder b = allocLoop({kBuffer, kBuffer + 0x2000, kBuffer});
  b.launch(13, 3160, 3161, 3165, 3765);
  const auto findings = test::findingsOf(b.build());
  const Finding* f = test::findingById(findings, "implicit-sync-call");
  REQUIRE(f != nullptr);
  CHECK(fixSavingNs(*f) == Approx(static_cast<double>(920 * kUs)).margin(10 * kUs));
}

TEST_CASE("implicit-sync-call: faults on new blocks or after the host touched them stay") {
  SECTION("each allocation on its own blocks: every kernel's faults are first touches") {
    TraceBuilder b = allocLoop({kBuffer, kBuffer + (4u << 20), kBuffer + (8u << 20)});
    const auto findings = test::findingsOf(b.build());
    const Finding* f = test::findingById(findings, "implicit-sync-call");
    REQUIRE(f != nullptr);
    CHECK(fixSavingNs(*f) < 200 * kUs);
    CHECK(f->ideal_reduction_ns == 0);
  }
  SECTION("the host touched the block between iterations 1 and 2: only kernel 3 re-faults") {
    TraceBuilder b = allocLoop({kBuffer, kBuffer, kBuffer});
    b.trace().unified_memory.cpu_faults.push_back({TraceBuilder::ns(1030), kBuffer + 0x1000, 4242});
    const auto findings = test::findingsOf(b.build());
    const Finding* f = test::findingById(findings, "implicit-sync-call");
    REQUIRE(f != nullptr);
    CHECK(fixSavingNs(*f) == Approx(static_cast<double>(1050 * kUs)).margin(10 * kUs));
  }
}

TEST_CASE("implicit-sync-call: the allocation hoisted before the loop stays between GPU work") {
  // A kernel, then a loop of cudaMalloc, kernel, synchronize, cudaFree. The fix allocates once
  // before the loop: that call, after the first kernel, still holds the host 50 µs; only the free
  // and allocation between the iterations go (30 + 50 µs, the µs between calls stay), so kernel 3
  // starts 82 µs sooner. (The last free, after the last kernel started, was never counted.)
  TraceBuilder b;
  b.launch(13, 1, 3, 5, 100);
  b.call("cudaStreamSynchronize_v3020", 4, 101);
  b.call("cudaMalloc_v3020", 102, 152);
  b.launch(13, 153, 155, 157, 257);
  b.call("cudaStreamSynchronize_v3020", 156, 258);
  b.call("cudaFree_v3020", 259, 289);
  b.call("cudaMalloc_v3020", 290, 340);
  b.launch(13, 341, 343, 345, 445);
  b.call("cudaStreamSynchronize_v3020", 344, 446);
  b.call("cudaFree_v3020", 447, 477);
  const auto findings = test::findingsOf(b.build());
  const Finding* f = test::findingById(findings, "implicit-sync-call");
  REQUIRE(f != nullptr);
  CHECK(f->count == 3);
  CHECK(fixSavingNs(*f) == Approx(static_cast<double>(82 * kUs)).margin(2 * kUs));
}

TEST_CASE("implicit-sync-call: the free moved after the loop still takes its own time there") {
  // A loop of cudaMalloc, a 100 µs kernel, cudaFree (it waits for the kernel, then takes 30 µs
  // of its own), then a device synchronize and a last kernel. The fix frees once after the loop:
  // that free waits for the second kernel as the synchronize does, then takes its 30 µs, so it
  // adds them to the synchronize. Without the first free and the second allocation the second
  // kernel queues behind the first (110-210); the synchronize returns 31 µs after it and the last
  // kernel starts its recorded 8 µs later: 249-349 for 300-400, 51 µs saved (81 had the moved
  // free gone too).
  TraceBuilder b;
  b.call("cudaMalloc_v3020", 0, 1);  // before the first op: never counted
  b.launch(13, 2, 4, 6, 110);
  b.call("cudaFree_v3020", 11, 140);
  b.call("cudaMalloc_v3020", 141, 151);
  b.launch(13, 152, 154, 160, 260);
  b.call("cudaFree_v3020", 155, 290);
  b.call("cudaDeviceSynchronize_v3020", 291, 292);
  b.launch(13, 293, 295, 300, 400);
  const auto findings = test::findingsOf(b.build());
  const Finding* f = test::findingById(findings, "implicit-sync-call");
  REQUIRE(f != nullptr);
  CHECK(f->count == 3);
  CHECK(fixSavingNs(*f) == Approx(static_cast<double>(51 * kUs)).margin(2 * kUs));
}

TEST_CASE("implicit-sync-call: the free after the loop goes after the last iteration's calls") {
  // After a first kernel, two iterations of cudaMalloc, a 100 µs kernel, cudaFree (waits for it, then `own` µs of its
  // own), a device synchronize and a 50 µs kernel; then the thread's final synchronize. The last
  // free sits in the last iteration's middle; the fix frees after the loop, after the last kernel,
  // where its own time costs the span nothing: the iteration begun by the last allocation makes
  // as many calls as the one before it, so the free goes to the final synchronize, not to the
  // iteration's own. With 30 µs of its own it saves those 30 µs more than with none.
  const auto saving = [](double own) {
    TraceBuilder b;
    const double d = own - 30;  // everything after the last free moves with its own time
    b.launch(13, 0, 0.5, 1, 1.1);
    b.call("cudaMalloc_v3020", 1.2, 1.5);  // stays: the allocation before the loop
    b.launch(13, 2, 4, 6, 106);
    b.call("cudaFree_v3020", 8, 136);
    b.call("cudaDeviceSynchronize_v3020", 137, 138);
    b.launch(13, 139, 141, 143, 193);
    b.call("cudaMalloc_v3020", 142, 152);
    b.launch(13, 153, 155, 195, 295);
    b.call("cudaFree_v3020", 156, 326 + d - 1);
    b.call("cudaDeviceSynchronize_v3020", 326 + d, 327 + d);
    b.launch(13, 328 + d, 330 + d, 332 + d, 382 + d);
    b.call("cudaDeviceSynchronize_v3020", 331 + d, 383 + d);
    const auto findings = test::findingsOf(b.build());
    const Finding* f = test::findingById(findings, "implicit-sync-call");
    REQUIRE(f != nullptr);
    CHECK(f->count == 4);
    return static_cast<double>(fixSavingNs(*f));
  };
  const double with = saving(30), without = saving(1);
  INFO("saving with 30 us of its own " << with << " ns, with 1 us " << without);
  CHECK(with - without == Approx(static_cast<double>(29 * kUs)).margin(2 * kUs));
}

TEST_CASE("implicit-sync-call: a later loop of other work keeps its own allocation") {
  // After a first kernel, two loops of two iterations each: cudaMallocHost (100 µs), an upload
  // from the buffer, a 50 µs kernel, a synchronize, cudaFreeHost (20 µs, the device idle); the
  // first loop uploads 1 MiB, the second 512 KiB, and a device synchronize comes between them.
  // The fix allocates once before each loop: the first loop's allocation (the thread's first call)
  // and the second loop's stay, and the first loop's last free moves after it, to the device
  // synchronize. Only the first loop's first free and second allocation and the second loop's
  // first free and second allocation go: 20 + 100 + 20 + 100 µs. (Taken for one loop, every call
  // between went: 360 µs.)
  TraceBuilder b;
  b.launch(13, 0, 1, 2, 10);
  double t = 11;
  for (int loop = 0; loop < 2; ++loop) {
    for (int i = 0; i < 2; ++i) {
      const std::uint64_t bytes = loop == 0 ? (1u << 20) : (1u << 19);
      const double copy_us = loop == 0 ? 20 : 10;
      b.call("cudaMallocHost_v3020", t, t + 100);
      b.copyCall("cudaMemcpyAsync_v3020", 13, t + 101, t + 102, t + 103, t + 103 + copy_us,
                 CopyKind::kHtoD)
          .bytes = bytes;
      const double k = t + 104 + copy_us;
      b.launch(13, k, k + 1, k + 2, k + 52);
      b.call("cudaStreamSynchronize_v3020", k + 2, k + 53);
      b.call("cudaFreeHost_v3020", k + 54, k + 74);
      t = k + 75;
    }
    if (loop == 0) {
      b.call("cudaDeviceSynchronize_v3020", t, t + 1);
      t += 2;
    }
  }
  const auto findings = test::findingsOf(b.build());
  const Finding* f = test::findingById(findings, "implicit-sync-call");
  REQUIRE(f != nullptr);
  CHECK(f->count == 7);
  CHECK(fixSavingNs(*f) == Approx(static_cast<double>(240 * kUs)).margin(5 * kUs));
}

TEST_CASE("implicit-sync-call: another thread's call held by a removed free gets that time back") {
  // Thread 1: a 100 µs kernel on stream 13 (5-105), cudaFree after it (106-406: the device idle,
  // all of it the free's own time, in which it holds the context's lock), cudaMalloc, a second
  // kernel. Thread 2, after a synchronize of its own at 3, calls cudaLaunchKernel at 150, inside
  // the free: it returns at 410, right after the free, and its 400 µs kernel on stream 14 runs
  // 411-811, the span's end. Hoisted, the free and the allocation go, and thread 2's launch no
  // longer waits the 256 µs it spent inside the free: its kernel runs 155-555, 256 µs saved (none
  // with the launch still held: thread 1's calls are not on the span's path). A free of 40 µs
  // (106-146, the launch called at 120) holds nothing the fix gives back. A kernel that shows
  // starting 2 µs before its held launch returned (an op launched onto an idle stream starts as
  // the driver submits it, the call returns after that) was submitted after the hold too: it gets
  // the same time back.
  const auto saving = [](double free_end, double launch_start, double op_start_after_free = 5) {
    TraceBuilder b;
    b.call("cudaMalloc_v3020", 0, 1);  // before the first op: never counted
    b.launch(13, 2, 4, 5, 105);
    b.call("cudaFree_v3020", 106, free_end);
    b.call("cudaMalloc_v3020", free_end + 1, free_end + 2);
    b.launch(13, free_end + 3, free_end + 5, free_end + 6, free_end + 106);
    b.call("cudaStreamSynchronize_v3020", 3, 4);  // thread 2's: its launch follows it
    b.trace().runtime_calls.back().tid = 2;
    b.launch(14, launch_start, free_end + 4, free_end + op_start_after_free,
             free_end + op_start_after_free + 400);
    b.trace().runtime_calls.back().tid = 2;
    const auto findings = test::findingsOf(b.build());
    const Finding* f = test::findingById(findings, "implicit-sync-call");
    return f == nullptr ? Ns{0} : fixSavingNs(*f);
  };
  SECTION("a free of 300 µs holds the launch") {
    CHECK(saving(406, 150) == Approx(static_cast<double>(256 * kUs)).margin(5 * kUs));
  }
  SECTION("a free of 40 µs is no longer than calls that overlap anyway: nothing given back") {
    CHECK(saving(146, 120) < 10 * kUs);
  }
  SECTION("a kernel that started inside its held launch call gets the hold back too") {
    CHECK(saving(406, 150, 2) == Approx(static_cast<double>(256 * kUs)).margin(5 * kUs));
  }
}

namespace {

// Thread 1 of the held-call tests below: a kernel (5-105), then cudaFree (106-406, the device
// idle: all of it the free's own time, holding the context's lock), cudaMalloc, a second kernel;
// and thread 2's stream synchronize (3-4), before the call the free holds.
void addFreeHoldingThread(TraceBuilder& b) {
  b.call("cudaMalloc_v3020", 0, 1);  // before the first op: never counted
  b.launch(13, 2, 4, 5, 105);
  b.call("cudaFree_v3020", 106, 406);
  b.call("cudaMalloc_v3020", 407, 408);
  b.launch(13, 409, 411, 412, 512);
  b.call("cudaStreamSynchronize_v3020", 3, 4);
  b.trace().runtime_calls.back().tid = 2;
}

}  // namespace

TEST_CASE("implicit-sync-call: a launch already in the driver when a removed free locked gets that time back") {
  // Thread 1 as above: a kernel (5-105), then cudaFree (106-406, the device idle: all of it the
  // free's own time, holding the context's lock), cudaMalloc, a second kernel. Thread 2 called
  // cudaLaunchKernel at 100, before the free began, and it was still in the driver when the free
  // locked: it returned at 410, right after the free, and its 400 µs kernel runs 411-811, the
  // span's end. It waited for the free from the free's start, 300 µs: hoisted, its kernel runs
  // about 300 µs sooner (none with the call counted as held only when begun inside the free).
  TraceBuilder b;
  addFreeHoldingThread(b);
  b.launch(14, 100, 410, 411, 811);
  b.trace().runtime_calls.back().tid = 2;
  const auto findings = test::findingsOf(b.build());
  const Finding* f = test::findingById(findings, "implicit-sync-call");
  REQUIRE(f != nullptr);
  CHECK(fixSavingNs(*f) == Approx(static_cast<double>(300 * kUs)).margin(15 * kUs));
}

TEST_CASE("implicit-sync-call: a staged copy held by a removed free gets that time back") {
  // Thread 1 as above: a kernel (5-105), then cudaFree (106-406, the device idle: all of it the
  // free's own time, holding the context's lock), cudaMalloc, a second kernel. Thread 2 began a
  // pageable cudaMemcpyAsync at 50, before the free: staged, it returned at 410, after the free,
  // its copy running 408-425; its 400 µs kernel then runs 425-825, the span's end. The host
  // timeline counts the staged call's 360 µs as its own; 300 of them lay in the free's time after
  // its drain. Hoisted, the call returns at 110 and the kernel runs about 300 µs sooner (none
  // with the staged call whole: thread 1's work is not on the span's path).
  TraceBuilder b;
  addFreeHoldingThread(b);
  b.copyCall("cudaMemcpyAsync_v3020", 14, 50, 410, 408, 425, CopyKind::kHtoD, MemKind::kPageable);
  b.trace().runtime_calls.back().tid = 2;
  b.launch(14, 411, 413, 425, 825);
  b.trace().runtime_calls.back().tid = 2;
  const auto findings = test::findingsOf(b.build());
  const Finding* f = test::findingById(findings, "implicit-sync-call");
  REQUIRE(f != nullptr);
  CHECK(fixSavingNs(*f) == Approx(static_cast<double>(300 * kUs)).margin(15 * kUs));
}

TEST_CASE("implicit-sync-call: a blocking copy held by a removed free submits its copy sooner") {
  // Thread 1 as above: a kernel (5-105), then cudaFree (106-406, the device idle: all of it the
  // free's own time, holding the context's lock), cudaMalloc, a second kernel. Thread 2 called a
  // synchronous cudaMemcpy (DtoH) at 150, inside the free: the driver took it only after the free,
  // so its copy ran 410-420 and the call returned at 422; its 400 µs kernel then runs 426-826, the
  // span's end. The copy waited for nothing but the free (from its call's start, 256 µs); hoisted,
  // it runs about 256 µs sooner and the kernel with it (none with the copy's release kept: thread
  // 1's work is not on the span's path).
  TraceBuilder b;
  addFreeHoldingThread(b);
  b.copyCall("cudaMemcpy_v3020", 14, 150, 422, 410, 420, CopyKind::kDtoH);
  b.trace().runtime_calls.back().tid = 2;
  b.launch(14, 423, 425, 426, 826);
  b.trace().runtime_calls.back().tid = 2;
  const auto findings = test::findingsOf(b.build());
  const Finding* f = test::findingById(findings, "implicit-sync-call");
  REQUIRE(f != nullptr);
  CHECK(fixSavingNs(*f) == Approx(static_cast<double>(256 * kUs)).margin(15 * kUs));
}

TEST_CASE("implicit-sync-call: without the frees, legacy-stream work still waits at the barrier") {
  // Thread 2 keeps blocking stream 14's HtoD engine busy (copies 10-400 and 460-850 µs). Thread 1
  // runs three steps of: cudaMalloc, a 100 µs kernel on blocking stream 13, cudaFree (which waits
  // for the device, thread 2's copy included), a cudaMemset on the legacy stream. Hoisted, the
  // memset is called sooner but the legacy barrier still holds it behind the copy, as it held the
  // free: each step starts as it did, and the fix saves only the last free's microsecond. (A
  // what-if without the barrier ran each memset right after the kernel's launch.)
  TraceBuilder b;
  b.busyUploadsOnThread(2, 14, {1, 450}, {10, 400}, {460, 850});
  const double free_end[3] = {401, 851, 971};
  for (int i = 0; i < 3; ++i) {
    const double t = i == 0 ? 0.0 : free_end[i - 1] + 8;
    b.call("cudaMalloc_v3020", t + 4, t + 5);
    b.launch(13, t + 6, t + 8, t + 10, t + 110);
    b.call("cudaFree_v3020", t + 111, free_end[i]);
    b.memset(test::kNullStream, free_end[i] + 2, free_end[i] + 6,
             b.call("cudaMemset_v3020", free_end[i] + 1, free_end[i] + 7));
  }
  const auto findings = test::findingsOf(b.build());
  const Finding* f = test::findingById(findings, "implicit-sync-call");
  CHECK((f == nullptr || fixSavingNs(*f) < 10 * kUs));
}

}  // namespace cuoverlap
