// Host-synchronization findings: pageable-memcpy, sync-memcpy, sync-memset, blocking-sync-call,
// implicit-sync-call; each with a case that must fire and cases that must not.
#include <catch2/catch.hpp>

#include "findings_test_util.h"
#include "trace_builder.h"

namespace cuoverlap {
namespace {

using test::findingById;
using test::findingsOf;
using test::idsOf;
using test::kNullStream;
using test::TraceBuilder;

TEST_CASE("pageable-memcpy counts async copies from pageable memory") {
  TraceBuilder b;
  b.copyCall("cudaMemcpyAsync_v3020", 13, 0, 60, 10, 50, CopyKind::kHtoD, MemKind::kPageable);
  b.launch(13, 61, 62, 60, 100);
  b.copyCall("cudaMemcpyAsync_v3020", 13, 63, 140, 100, 130, CopyKind::kDtoH, MemKind::kPageable);
  b.copyCall("cudaMemcpyAsync_v3020", 13, 141, 142, 140, 150, CopyKind::kHtoD, MemKind::kPinned);
  const auto findings = findingsOf(b.build());
  const Finding* f = findingById(findings, "pageable-memcpy");
  REQUIRE(f != nullptr);
  CHECK(f->count == 2);
  // Pinned, the HtoD copy takes the 10 µs the pinned 1 MiB copy took (its bytes at the rate of
  // that copy less its 1.5 µs fixed cost, plus that cost) instead of 40, both copies start 5 µs
  // after their calls instead of after staging, and the calls return at once: the what-if span is
  // 100 µs instead of 140, with the 5 µs handoffs from the HtoD copy to the kernel and from the
  // DtoH copy to the last copy (the trace shows no op queued behind another,
  // DeviceView::streamHandoff). 10 µs of the 40 lower the ideal (the kernel's 40 µs now bounds it
  // instead of the HtoD engine's 50). Before, the rate was the copy's bytes over its whole 10 µs
  // and the fixed cost came on top: 11.5 µs, 38.5 saved.
  CHECK(f->time_ns == 40'000);
  CHECK(f->ideal_reduction_ns == 10'000);
  REQUIRE(f->evidence.size() == 2);
  CHECK(f->evidence[0].api == "cudaMemcpyAsync");
  CHECK(f->evidence[0].time < f->evidence[1].time);
  CHECK(f->advice.find("cudaMallocHost") != std::string::npos);
}

TEST_CASE("pageable-memcpy does not fire when memory kinds are unknown or pinned") {
  TraceBuilder b;
  b.copy(13, 10, 50, CopyKind::kHtoD, MemKind::kUnknown);
  b.copy(13, 60, 100, CopyKind::kHtoD, MemKind::kPinned);
  CHECK(idsOf(findingsOf(b.build())).count("pageable-memcpy") == 0);
}

TEST_CASE("evidence keeps the five most costly examples") {
  TraceBuilder b;
  for (int i = 0; i < 8; ++i) {
    b.copy(13, 100.0 * (i + 1), 100.0 * (i + 1) + 10 + i, CopyKind::kHtoD, MemKind::kPageable);
  }
  const auto findings = findingsOf(b.build());
  const Finding* f = findingById(findings, "pageable-memcpy");
  REQUIRE(f != nullptr);
  CHECK(f->count == 8);
  REQUIRE(f->evidence.size() == 5);
  CHECK(f->evidence.front().time == 400'000);  // copies 3..7 are the longest
  CHECK(f->evidence.front().api == "memcpy HtoD 1.0 MiB");  // no runtime data: the op itself
}

TEST_CASE("sync-memcpy fires for a cudaMemcpy between GPU work with the idle after it") {
  // A kernel's result read back (pinned) between two kernels: the host reads it before it
  // launches the next kernel (readRightAfter), so the fix's synchronize sits right after the copy
  // and saves nothing; the cost stays the call's charge, the idle after it (150-175 µs). Where
  // the next call is the next stage's upload instead (a result read later), the download made
  // asynchronous returns at once, the upload's call comes 8 µs after it and its copy follows the
  // download on the stream they share: the idle after the download shrinks to the turnaround.
  for (const bool upload_next : {false, true}) {
    INFO((upload_next ? "an upload" : "a kernel launch") << " after the download");
    TraceBuilder b;
    b.launch(kNullStream, 0, 2, 5, 100);
    b.copyCall("cudaMemcpy_v3020", kNullStream, 3, 152, 100, 150, CopyKind::kDtoH);
    if (upload_next) {
      b.copyCall("cudaMemcpyAsync_v3020", kNullStream, 160, 162, 175, 300, CopyKind::kHtoD);
    } else {
      b.launch(kNullStream, 160, 162, 175, 300);
    }
    const auto findings = findingsOf(b.build());
    const Finding* f = findingById(findings, "sync-memcpy");
    REQUIRE(f != nullptr);
    CHECK(f->count == 1);
    CHECK(f->evidence.at(0).api == "cudaMemcpy");
    if (upload_next) {
      CHECK(fixSavingNs(*f) > 10'000);
    } else {
      CHECK(f->time_ns == 25'000);
      CHECK(fixSavingNs(*f) == 0);
    }
  }
}

TEST_CASE("sync-memcpy's asynchronous copy still feeds the kernel launched after it") {
  // A cudaMemcpy HtoD on the legacy stream (call 60-165 µs, copy 62-162) between two kernels of
  // stream 13; the second is launched 15 µs after the call returned. Made asynchronous (the call
  // returns after its own 3 µs), the copy moves to stream 13 ahead of the kernel that reads it:
  // the kernel runs 167-267 instead of 182-282 (5 µs after the copy: the handoff from a copy to a
  // kernel, which the trace never shows queued), saving 15 µs. Letting it run as soon as the host
  // launched it (80 µs), beside its own input's copy, would have claimed 102 µs.
  TraceBuilder b;
  b.launch(13, 0, 1, 2, 52);
  b.copyCall("cudaMemcpy_v3020", kNullStream, 60, 165, 62, 162, CopyKind::kHtoD);
  b.launch(13, 180, 182, 183, 283);
  const auto findings = findingsOf(b.build());
  const Finding* f = findingById(findings, "sync-memcpy");
  REQUIRE(f != nullptr);
  CHECK(fixSavingNs(*f) == 16'000);
}

TEST_CASE("sync-memcpy is not charged for a gap that began after its call returned") {
  // Issue 21: a cudaMemcpy that returned 1.5 ms before a gap was charged for it. Here its call
  // returns at 120 µs while another stream's kernel keeps the device busy until 500 µs; the host
  // then runs its own code until 2000 µs. The gap [500, 2005) is not the copy's.
  for (const double kernel_end : {500.0, 115.0}) {
    INFO("the other stream's kernel ends at " << kernel_end << " µs");
    TraceBuilder b;
    b.addStream(16, StreamFlag::kNonBlocking);
    b.launch(13, 0, 2, 5, kernel_end);
    b.copyCall("cudaMemcpy_v3020", 16, 10, 120, 20, 110, CopyKind::kDtoH);
    b.launch(13, 2000, 2002, 2005, 2100);
    const auto findings = findingsOf(b.build());
    const Finding* f = findingById(findings, "sync-memcpy");
    if (kernel_end > 120) {
      CHECK(f == nullptr);
      if (f != nullptr) { INFO("cost " << f->time_ns << " count " << f->count); CHECK(false); }  // returned while the device was busy: no idle of its own
      const Finding* busy = findingById(findings, "host-busy");
      REQUIRE(busy != nullptr);
      CHECK(busy->time_ns == 1'500'000);  // the host's own code, [500, 2000): all of it
    } else {
      REQUIRE(f != nullptr);  // returned into the idle it left: charged, at most lead + drain
      CHECK(f->count == 1);
    }
  }
}

TEST_CASE("sync-memcpy: where the what-if finds its fix saves nothing, the fix alone saves nothing") {
  // A kernel's result read back into pageable memory by a cudaMemcpy (call 3-150, copy 106-116),
  // then 20 µs of the host's own code and the next kernel. The fix (cudaMemcpyAsync on the
  // kernel's stream) still returns only once the copy is out of the staging buffer: the what-if
  // saves nothing. The call still blocked the host while the device went idle: the cost stays its
  // charge (the idle from its return to the next kernel, 25 µs), and what its fix alone saves is
  // nothing (it had been the charge). Into pinned memory the call returns at once, and the next
  // op starts sooner where the host issues it right after the call and it is no kernel (an
  // upload: the next stage's input); where the host runs 20 µs of its own code first, or launches
  // a kernel next, it reads the data there (readRightAfter): the fix's synchronize sits right
  // after the copy, and it saves nothing either.
  struct Case {
    MemKind host;
    double next_call;
    bool upload_next;
    bool saves;
  };
  for (const Case c : {Case{MemKind::kPageable, 170, false, false}, Case{MemKind::kPinned, 170, false, false},
                       Case{MemKind::kPinned, 155, false, false}, Case{MemKind::kPinned, 155, true, true}}) {
    INFO("host memory " << (c.host == MemKind::kPinned ? "pinned" : "pageable") << ", next call at "
                        << c.next_call << " µs, " << (c.upload_next ? "an upload" : "a launch"));
    TraceBuilder b;
    b.launch(kNullStream, 0, 2, 5, 100);
    b.copyCall("cudaMemcpy_v3020", kNullStream, 3, 150, 106, 116, CopyKind::kDtoH, c.host);
    if (c.upload_next) {
      b.copyCall("cudaMemcpyAsync_v3020", kNullStream, c.next_call, c.next_call + 2, 175, 300, CopyKind::kHtoD);
    } else {
      b.launch(kNullStream, c.next_call, c.next_call + 2, 175, 300);
    }
    const auto findings = findingsOf(b.build());
    const Finding* f = findingById(findings, "sync-memcpy");
    REQUIRE(f != nullptr);
    if (!c.saves) {
      if (c.host == MemKind::kPageable) CHECK(f->time_ns == 25'000);
      CHECK(fixSavingNs(*f) == 0);
    } else {
      CHECK(fixSavingNs(*f) > 30'000);
    }
  }
}

TEST_CASE("sync-memcpy: a pageable upload made asynchronous no longer waits for its stream first") {
  // A cudaMemcpy from pageable memory (call 10-130 µs, copy 125-135) on the legacy stream behind a
  // kernel (5-100): cudaMemcpy first synchronizes its stream, then stages the data and returns
  // before the DMA ends (the call waited for the kernel, not for its copy). cudaMemcpyAsync
  // stages at once: the call returns after its 30 µs of staging (10-40), the host launches the
  // next kernel at 50 instead of 140, and that kernel follows the copy (after the first kernel,
  // on the stream they share: 120-220 instead of 150-250) instead of its late launch. The what-if
  // used to take the call's wait for the kernel as its wait for its own op, and kept it.
  TraceBuilder b;
  b.launch(kNullStream, 0, 2, 5, 100);
  b.copyCall("cudaMemcpy_v3020", kNullStream, 10, 130, 125, 135, CopyKind::kHtoD, MemKind::kPageable);
  b.launch(kNullStream, 140, 142, 150, 250);
  const auto findings = findingsOf(b.build());
  const Finding* f = findingById(findings, "sync-memcpy");
  REQUIRE(f != nullptr);
  CHECK(fixSavingNs(*f) == 30'000);
}

TEST_CASE("sync-memcpy: a pageable upload made asynchronous still stages its data in its call") {
  // A cudaMemcpy from pageable memory on the legacy stream (call 110-200 µs) after its stream's
  // last op ended (100): its 90 µs are staging (the copy runs 195-215, the call returned before
  // its DMA ended). The host then launches the copy's consumer on stream 13 (a 28 µs call) and
  // an independent 400 µs kernel on stream 14. cudaMemcpyAsync returns only once the buffer is
  // staged too, so the host launches them no sooner: the fix saves nothing of the span. Taken as
  // an asynchronous call's 5 µs, the call would have returned at 115 and the kernel of stream 14
  // started 85 µs sooner.
  TraceBuilder b;
  b.addStream(13, StreamFlag::kNonBlocking);
  b.addStream(14, StreamFlag::kNonBlocking);
  b.addStream(15, StreamFlag::kNonBlocking);
  b.launch(kNullStream, 0, 2, 5, 100);
  b.launch(15, 102, 104, 106, 195);
  b.copyCall("cudaMemcpy_v3020", kNullStream, 110, 200, 195, 215, CopyKind::kHtoD, MemKind::kPageable);
  b.launch(13, 202, 230, 235, 335);
  b.launch(14, 231, 233, 238, 638);
  const auto findings = findingsOf(b.build());
  const Finding* f = findingById(findings, "sync-memcpy");
  REQUIRE(f != nullptr);
  CHECK(fixSavingNs(*f) < 10'000);
}

TEST_CASE("sync-memcpy: a pageable upload made asynchronous drops its cudaMemcpy's synchronize") {
  // Three 8 µs cudaMemcpy calls from pageable memory on an idle legacy stream (55-63, 78-86,
  // 101-109, 15 µs of host code between; each copy runs after its call returned), then their
  // consumer kernel, its result read back (pageable) and one more kernel. cudaMemcpy
  // synchronizes its stream before it stages, and that synchronize takes as long to return as
  // the thread's other synchronizes do after what they waited for: here a cudaDeviceSynchronize
  // that returned 4 µs after its kernel ended (in the other trace 0.5 µs). cudaMemcpyAsync stages
  // at once, without it: the calls take 4 µs instead of 8 (7.5 in the other trace), and the kernel
  // is launched 12 µs sooner (1.5) (g000008: 4 KiB pageable uploads took 6.2-7.5 µs as cudaMemcpy on an idle stream,
  // 4.0 as cudaMemcpyAsync, where its pinned downloads returned 4.6 µs after their copies).
  const auto saving = [](double kernel_end) {
    TraceBuilder b;
    b.launch(kNullStream, 0, 2, 5, kernel_end);
    b.call("cudaDeviceSynchronize_v3020", 3, 54);
    b.copyCall("cudaMemcpy_v3020", kNullStream, 55, 63, 64, 65, CopyKind::kHtoD, MemKind::kPageable);
    b.copyCall("cudaMemcpy_v3020", kNullStream, 78, 86, 87, 88, CopyKind::kHtoD, MemKind::kPageable);
    b.copyCall("cudaMemcpy_v3020", kNullStream, 101, 109, 110, 111, CopyKind::kHtoD, MemKind::kPageable);
    b.launch(kNullStream, 124, 126, 128, 228);
    b.copyCall("cudaMemcpy_v3020", kNullStream, 127, 240, 229, 233, CopyKind::kDtoH, MemKind::kPageable);
    b.launch(kNullStream, 241, 243, 245, 260);
    const auto findings = findingsOf(b.build());
    const Finding* f = findingById(findings, "sync-memcpy");
    REQUIRE(f != nullptr);
    return fixSavingNs(*f);
  };
  const auto slow_return = saving(50);
  const auto fast_return = saving(53.5);
  CHECK(slow_return == 12'000);  // each call 4 µs instead of 8
  CHECK(fast_return == 1'500);   // each call 7.5 µs instead of 8
}

TEST_CASE("sync-memcpy does not fire for the first or last op, nor for async copies") {
  TraceBuilder b;
  b.copyCall("cudaMemcpy_v3020", kNullStream, 0, 52, 5, 50, CopyKind::kHtoD);
  b.copyCall("cudaMemcpyAsync_v3020", kNullStream, 53, 54, 60, 80, CopyKind::kHtoD);
  b.launch(kNullStream, 55, 57, 100, 200);
  b.copyCall("cudaMemcpy_v3020", kNullStream, 58, 260, 200, 250, CopyKind::kDtoH);
  CHECK(idsOf(findingsOf(b.build())).count("sync-memcpy") == 0);
}

TEST_CASE("sync-memcpy falls back on the collector's async flag without runtime data") {
  TraceBuilder b;
  b.kernel(13, 1, 100);
  b.copy(13, 100, 150, CopyKind::kDtoH).flags = op_flag::kAsyncKnown;  // known, not async
  b.kernel(13, 200, 300);
  CHECK(idsOf(findingsOf(b.build())).count("sync-memcpy") == 1);

  TraceBuilder unknown;
  unknown.kernel(13, 1, 100);
  unknown.copy(13, 100, 150, CopyKind::kDtoH);  // flags unknown: says nothing
  unknown.kernel(13, 200, 300);
  CHECK(idsOf(findingsOf(unknown.build())).count("sync-memcpy") == 0);
}

TEST_CASE("sync-memset fires for cudaMemset between GPU work, not for cudaMemsetAsync") {
  TraceBuilder b;
  b.launch(13, 0, 2, 5, 100);
  b.memset(kNullStream, 110, 120, b.call("cudaMemset_v3020", 3, 121));
  b.memset(13, 130, 135, b.call("cudaMemsetAsync_v3020", 122, 123));
  b.launch(13, 124, 126, 150, 300);
  const auto findings = findingsOf(b.build());
  const Finding* f = findingById(findings, "sync-memset");
  REQUIRE(f != nullptr);
  CHECK(f->count == 1);
  CHECK(f->evidence.at(0).api == "cudaMemset");
}

TEST_CASE("sync-memset: a memset that left the device busy fires where its call held another thread's") {
  // Thread 1's 400 µs kernel on non-blocking stream 20 keeps the device busy past its cudaMemset
  // (call 4-110 µs, memset 10-11 on the legacy stream): the device never idled after it, so it is
  // charged nothing. But the driver held the context while the call waited, and thread 2's launch
  // to non-blocking stream 21 (alone 2 µs) took 12-108; its next kernel, 500 µs, ends the span.
  // Made asynchronous, the memset holds nothing and that kernel starts about 94 µs sooner, no more
  // than the memset's call lasted: the finding fires with that saving. Where thread 2's launch
  // was not held, the what-if saves nothing and nothing fires (as for both before). Thread 2
  // synchronizes first, so that its launches follow its own blocking call, not thread 1's
  // (host_timeline.h: a thread with none is driven by the others').
  for (const bool held : {true, false}) {
    INFO((held ? "thread 2's launch held" : "thread 2's launch not held"));
    TraceBuilder b;
    b.addStream(20, StreamFlag::kNonBlocking);
    b.addStream(21, StreamFlag::kNonBlocking);
    auto onThread = [&](std::uint32_t tid) { b.trace().runtime_calls.back().tid = tid; };
    b.launch(20, 0, 2, 3, 400);
    b.memset(kNullStream, 10, 11, b.call("cudaMemset_v3020", 4, 110));
    b.launch(20, 111, 113, 400, 410);
    b.call("cudaStreamSynchronize_v3020", 0, 0.5);
    onThread(2);
    b.launch(21, 1, 3, 4, 6);
    onThread(2);
    b.launch(21, 12, held ? 108 : 14, held ? 109 : 15, held ? 111 : 17);
    onThread(2);
    b.launch(21, 109, 111, 112, 612);
    onThread(2);
    const auto findings = findingsOf(b.build());
    const Finding* f = findingById(findings, "sync-memset");
    if (!held) {
      CHECK(f == nullptr);
      continue;
    }
    REQUIRE(f != nullptr);
    CHECK(f->count == 1);
    CHECK(f->time_ns > 80'000);
    CHECK(f->time_ns <= 106'000);
  }
}

TEST_CASE("sync-memset: a charged memset is priced no higher than its call") {
  // Thread 1's cudaMemset (call 4-40 µs, memset 20-21 on the legacy stream) blocked the host after
  // its op: the device idled until thread 1's next kernel (44), so the memset is charged. Thread
  // 2's launch to non-blocking stream 21 (alone 2 µs) took 12-108, overlapping the call, and its
  // next kernel, 500 µs, ends the span. The what-if may give that launch back more than the
  // memset's call lasted; the fix frees no more than the call (c1's g000360: 282 µs claimed where
  // its memsets' calls came to 83-95, nothing measured), so the claim is at most the call's 36 µs.
  TraceBuilder b;
  b.addStream(20, StreamFlag::kNonBlocking);
  b.addStream(21, StreamFlag::kNonBlocking);
  auto onThread = [&](std::uint32_t tid) { b.trace().runtime_calls.back().tid = tid; };
  b.launch(20, 0, 2, 3, 18);
  b.memset(kNullStream, 20, 21, b.call("cudaMemset_v3020", 4, 40));
  b.launch(20, 41, 43, 44, 60);
  b.call("cudaStreamSynchronize_v3020", 0, 0.5);
  onThread(2);
  b.launch(21, 1, 3, 4, 6);
  onThread(2);
  b.launch(21, 12, 108, 109, 111);
  onThread(2);
  b.launch(21, 109, 111, 112, 612);
  onThread(2);
  const auto findings = findingsOf(b.build());
  const Finding* f = findingById(findings, "sync-memset");
  REQUIRE(f != nullptr);
  CHECK(f->count == 1);
  CHECK(f->time_ns > 0);
  CHECK(f->time_ns <= 36'000);
}

TEST_CASE("sync-memset: a memset held on the device behind another thread's kernel fires with the barrier's time") {
  // Thread 2's 996 µs kernel on blocking stream 14 keeps the device busy. Thread 1's cudaMemset
  // (call 10-20 µs, device memory: the call returns at once) runs on the legacy stream, whose
  // barrier holds it behind that kernel (1001-1002), and thread 1's next kernel on blocking stream
  // 13 behind it (1003-1503, the span's end). The device never idled after the memset (charged
  // nothing) and its call was short, yet made asynchronous on stream 13 the memset and that kernel
  // run beside thread 2's: about 500 µs saved, more than the call lasted, no more than the call
  // and the time its op waited on the device. Where the memset ran at once (the barrier held
  // nothing), the what-if saves nothing and nothing fires.
  for (const bool barrier : {true, false}) {
    INFO((barrier ? "the memset held behind thread 2's kernel" : "the memset ran at once"));
    TraceBuilder b;
    auto onThread = [&](std::uint32_t tid) { b.trace().runtime_calls.back().tid = tid; };
    b.launch(14, 1, 3, 4, 1000);
    onThread(2);
    b.streamSynchronize(14, 5, 1001);
    onThread(2);
    b.launch(13, 0, 2, 3, 8);
    b.streamSynchronize(13, 3, 9);
    const double at = barrier ? 1001 : 21;
    b.memset(kNullStream, at, at + 1, b.call("cudaMemset_v3020", 10, 20));
    b.launch(13, 21, 23, at + 2, at + 502);
    b.streamSynchronize(13, 24, at + 503);
    const auto findings = findingsOf(b.build());
    const Finding* f = findingById(findings, "sync-memset");
    if (!barrier) {
      CHECK(f == nullptr);
      continue;
    }
    REQUIRE(f != nullptr);
    CHECK(f->count == 1);
    CHECK(f->time_ns > 400'000);
    CHECK(f->time_ns <= 505'000);
  }
}

TEST_CASE("blocking-sync-call fires with the idle time that followed the synchronize") {
  TraceBuilder b;
  for (int i = 0; i < 3; ++i) {
    const double base = 200.0 * i;
    b.launch(13, base, base + 2, base + 5, base + 100);
    b.call("cudaDeviceSynchronize_v3020", base + 3, base + 101);
  }
  const auto findings = findingsOf(b.build());
  const Finding* f = findingById(findings, "blocking-sync-call");
  REQUIRE(f != nullptr);
  CHECK(f->count == 2);  // the last synchronize is followed by no GPU work
  // Each gap is 105 µs, but the host spent 99 µs of it in its own code after the synchronize
  // returned: the synchronize costs its lead (95 µs blocked while the kernel ran) plus its drain
  // (1 µs blocked after it ended), not the CPU work. The what-if schedule without the two
  // synchronizes (the host launching each kernel 101 µs of its own code after its previous
  // synchronize began) ends 196 µs sooner, each kernel starting the trace's 1 µs launch latency
  // after its call in both schedules.
  CHECK(f->time_ns == 196'000);
  CHECK(f->evidence.at(0).api == "cudaDeviceSynchronize");
  CHECK(f->evidence.at(0).time == 3'000);
}

// A loop of 3 steps: the host makes a batch (`host_us` of its own code, after the previous step's
// synchronize), copies it in, runs a kernel of `kernel_us` and synchronizes.
Trace loaderLoop(double host_us, double kernel_us) {
  TraceBuilder b;
  double t = 10;
  for (int i = 0; i < 3; ++i) {
    b.copyCall("cudaMemcpyAsync_v3020", 13, t, t + 5, t + 6, t + 20, CopyKind::kHtoD);
    b.launch(13, t + 6, t + 8, t + 20, t + 20 + kernel_us);
    b.call("cudaStreamSynchronize_v3020", t + 9, t + 21 + kernel_us);
    t += 21 + kernel_us + host_us;
  }
  return b.build();
}

TEST_CASE("host-busy: overlapping the host's work saves what the GPU work can hide, the cost stays the idle time") {
  SECTION("GPU work longer than the host's: overlapping hides all of it") {
    const auto findings = findingsOf(loaderLoop(300, 400));
    const Finding* f = findingById(findings, "host-busy");
    REQUIRE(f != nullptr);
    CHECK(f->count == 2);
    // Each batch made one step ahead, before the synchronize, while the kernel runs.
    CHECK(fixSavingNs(*f) >= 540'000);
    CHECK(fixSavingNs(*f) <= 620'000);
  }
  SECTION("GPU work shorter than the host's: overlapping hides only the kernel's time") {
    const auto findings = findingsOf(loaderLoop(300, 100));
    const Finding* f = findingById(findings, "host-busy");
    REQUIRE(f != nullptr);
    CHECK(f->estimated_ns >= 580'000);  // the idle time the host's own work left
    CHECK(fixSavingNs(*f) >= 170'000);  // two steps' kernels (and copies) to hide under
    CHECK(fixSavingNs(*f) <= 260'000);
    CHECK(f->summary.find("the rest only by doing the host work on other threads") != std::string::npos);
  }
}

TEST_CASE("blocking-sync-call does not fire when nothing was in flight or nothing followed") {
  TraceBuilder b;
  b.launch(13, 0, 2, 5, 100);
  b.call("cudaStreamSynchronize_v3020", 150, 151);  // device already idle
  b.launch(13, 152, 153, 155, 200);
  b.call("cudaStreamSynchronize_v3020", 154, 201);  // nothing after it
  CHECK(idsOf(findingsOf(b.build())).count("blocking-sync-call") == 0);
}

TEST_CASE("implicit-sync-call counts allocations between GPU work only") {
  TraceBuilder b;
  b.call("cudaMalloc_v3020", 0, 50);  // before the first op: free
  b.launch(13, 51, 52, 55, 100);
  b.call("cudaFree_v3020", 60, 130);
  b.call("cudaMallocAsync_v11020", 131, 132);  // stream-ordered: not a synchronization
  b.launch(13, 133, 134, 140, 200);
  b.call("cudaFreeHost_v3020", 210, 250);  // after the last op: free
  const auto findings = findingsOf(b.build());
  const Finding* f = findingById(findings, "implicit-sync-call");
  REQUIRE(f != nullptr);
  CHECK(f->count == 1);
  // Without the free the second launch is released at 64 plus the 6 µs launch latency the trace
  // shows (its kernel started 6 µs after its call on the idle device), and its kernel queues
  // behind the first, starting as it ends (100): 200 -> 160.
  CHECK(f->time_ns == 40'000);
  CHECK(f->evidence.at(0).api == "cudaFree");
}

TEST_CASE("implicit-sync-call names what each call allocated or freed where the trace records it") {
  TraceBuilder b;
  b.launch(13, 51, 52, 55, 100);
  b.call("cudaFree_v3020", 60, 130);
  b.launch(13, 133, 134, 140, 200);
  Trace trace = b.build();
  const RuntimeCall& free_call = trace.runtime_calls.at(1);
  const auto without = findingsOf(trace);
  REQUIRE(findingById(without, "implicit-sync-call") != nullptr);
  CHECK(findingById(without, "implicit-sync-call")->evidence.at(0).detail.find("memory;") == std::string::npos);
  MemoryEvent freed;
  freed.time = 61 * test::kUs;
  freed.pid = free_call.pid;
  freed.correlation_id = free_call.correlation_id;
  freed.bytes = 3 << 20;
  freed.kind = MemKind::kDevice;
  freed.allocation = false;
  trace.memory_events.push_back(freed);
  const auto findings = findingsOf(trace);
  const Finding* f = findingById(findings, "implicit-sync-call");
  REQUIRE(f != nullptr);
  CHECK(f->evidence.at(0).detail.rfind("frees 3.0 MiB of device memory; waited ", 0) == 0);
  CHECK(f->time_ns == 40'000);  // the cost is the same
}

}  // namespace
}  // namespace cuoverlap

namespace cuoverlap {
namespace {

using test::findingById;
using test::findingsOf;
using test::kNullStream;
using test::TraceBuilder;

TEST_CASE("sync-memcpy: a cudaMemcpy made asynchronous no longer waits for another thread's blocking stream") {
  // Thread 2 runs a 1000 µs kernel on blocking stream 13. Thread 1 runs a 50 µs kernel on blocking
  // stream 14 and reads its result with a cudaMemcpy DtoH (call 6-1030 µs): on the legacy stream
  // the copy waited for thread 2's kernel (1010-1020), and thread 1's next kernel runs 1046-1146.
  // Made asynchronous on stream 14 the copy follows only its producer (60-70), the host returns
  // 10 µs later, and the next kernel runs beside thread 2's: the span ends with thread 2's kernel
  // at 1010 instead of 1146 (1145 in the model of the recorded schedule). Before, a program whose only synchronous copies were DtoH got no
  // what-if and was charged the 26 µs the device idled after the copy.
  TraceBuilder b;
  auto onThread = [&](std::uint32_t tid) { b.trace().runtime_calls.back().tid = tid; };
  b.launch(13, 0, 5, 10, 1010);
  onThread(2);
  b.launch(14, 1, 4, 10, 60);
  b.copyCall("cudaMemcpy_v3020", kNullStream, 6, 1030, 1010, 1020, CopyKind::kDtoH);
  b.launch(14, 1040, 1045, 1046, 1146);
  const auto findings = findingsOf(b.build());
  const Finding* f = findingById(findings, "sync-memcpy");
  REQUIRE(f != nullptr);
  CHECK(fixSavingNs(*f) == 136'000);
}

TEST_CASE("sync-memcpy: a cudaMemcpy held in the driver runs in the order the legacy barrier ran it") {
  // Thread 2 runs a kernel on blocking stream 13 (10-500 µs), reads it back with a cudaMemcpy on
  // the legacy stream (call 6-510, copy 502-504) and launches its next kernel on stream 13 (call
  // 512-515, 516-900). Thread 1 runs a kernel on blocking stream 14 (5-50) and reads it back with
  // a cudaMemcpy (call 20-905) that the driver held behind thread 2's: its copy was submitted only
  // after thread 2's second kernel and the barrier ran it after that kernel (901-903); thread 1's
  // next kernel runs 911-1011 and ends the span. The schedule issues the held copy at its call's
  // start, before that kernel, so the barrier's edge from the kernel pointed backward and was
  // dropped: the recorded program's schedule ran the copy at about 505 and ended at 900, and the
  // fix (each read-back on its producer's stream, thread 1's done by about 160) was priced at 0.
  // Issued after the kernel, the schedule keeps the edge and ends at 1011 as recorded: the fix
  // saves about 105 µs, the span then ending with thread 2's second kernel (about 906: its
  // read-back, read right after, still holds the launch).
  TraceBuilder b;
  auto onThread = [&](std::uint32_t tid) { b.trace().runtime_calls.back().tid = tid; };
  b.launch(13, 0, 5, 10, 500);
  onThread(2);
  b.copyCall("cudaMemcpy_v3020", kNullStream, 6, 510, 502, 504, CopyKind::kDtoH);
  onThread(2);
  b.launch(13, 512, 515, 516, 900);
  onThread(2);
  b.launch(14, 1, 4, 5, 50);
  b.copyCall("cudaMemcpy_v3020", kNullStream, 20, 905, 901, 903, CopyKind::kDtoH);
  b.launch(14, 906, 910, 911, 1011);
  const auto findings = findingsOf(b.build());
  const Finding* f = findingById(findings, "sync-memcpy");
  REQUIRE(f != nullptr);
  CHECK(fixSavingNs(*f) == Approx(105'000).margin(2'000));
}

TEST_CASE("sync-memcpy: the fixed program's legacy barrier follows the order it issues the work in") {
  // Thread 1 reads back a legacy kernel with a cudaMemcpy (call 3-70, copy 52-62). Thread 2
  // launches a 500 µs kernel W1 to the legacy stream (call 75-80, 85-585) and a 300 µs kernel W2
  // there (call 637-642). Thread 1 uploads with a cudaMemcpy on the legacy stream (call 100-680,
  // queued behind W1: copy 587-675), launches a 200 µs kernel K on blocking stream 13 (call
  // 681-685), reads it back with a cudaMemcpy (call 686-1195) and launches a 300 µs kernel on
  // non-blocking stream 20 (call 1196-1200, 1202-1502, the span's end). W2 was submitted before
  // K, so the barrier ran K after W2 (980-1180). Made asynchronous (the upload and the read-back
  // on K's stream), thread 1 submits the upload, K and the read-back at about 100 µs, before W2:
  // K runs after the upload (677-877), W2 after the read-back, and thread 1's last kernel right
  // after it (about 900-1200): the fix saves about 300 µs. The fixed schedule kept the recorded
  // barrier order (W2 before K) and priced the fix at 0.
  TraceBuilder b;
  auto onThread = [&](std::uint32_t tid) { b.trace().runtime_calls.back().tid = tid; };
  b.launch(kNullStream, 0, 2, 3, 50);
  b.copyCall("cudaMemcpy_v3020", kNullStream, 3, 70, 52, 62, CopyKind::kDtoH);
  b.launch(kNullStream, 75, 80, 85, 585);
  onThread(2);
  b.launch(kNullStream, 637, 642, 677, 977);
  onThread(2);
  b.copyCall("cudaMemcpy_v3020", kNullStream, 100, 680, 587, 675, CopyKind::kHtoD);
  b.launch(13, 681, 685, 980, 1180);
  b.copyCall("cudaMemcpy_v3020", kNullStream, 686, 1195, 1182, 1192, CopyKind::kDtoH);
  b.addStream(20, StreamFlag::kNonBlocking);
  b.launch(20, 1196, 1200, 1202, 1502);
  const auto findings = findingsOf(b.build());
  const Finding* f = findingById(findings, "sync-memcpy");
  REQUIRE(f != nullptr);
  CHECK(fixSavingNs(*f) == Approx(300'000).margin(5'000));
}

TEST_CASE("sync-memcpy: another thread's calls kept on the legacy stream still hold the asynchronous call") {
  // Thread 2 launches 1 µs kernels to the legacy stream back to back (calls 0-20, 20-40, 40-60,
  // 60-80, 80-100 µs): the driver holds the context while each orders its kernel after every
  // blocking stream. Thread 1's cudaMemcpy to non-blocking stream 20 (call 5-70) has nothing to
  // wait for on the device, yet its copy starts only at 63: 58 µs of the call before it and the 5
  // after it were held by thread 2's calls, which the fix keeps. Made asynchronous, the call still
  // waits for them (63 µs instead of an asynchronous call's 5), so thread 1's launches after it
  // (kernels 75-85 on stream 20, 79-279 on stream 22, which ends the span) come no sooner: the
  // fix alone saves nothing. Where thread 2 launches to non-blocking stream 21 instead, its calls
  // held nothing and the what-if saves 42 µs, as it did for both before.
  for (const bool held : {true, false}) {
    INFO("thread 2 launches to " << (held ? "the legacy stream" : "a non-blocking stream"));
    TraceBuilder b;
    b.addStream(20, StreamFlag::kNonBlocking);
    b.addStream(21, StreamFlag::kNonBlocking);
    b.addStream(22, StreamFlag::kNonBlocking);
    auto onThread = [&](std::uint32_t tid) { b.trace().runtime_calls.back().tid = tid; };
    for (const double t : {0.0, 20.0, 40.0, 60.0, 80.0}) {
      b.launch(held ? kNullStream : 21u, t, t + 20, t + 21, t + 22);
      onThread(2);
    }
    b.copyCall("cudaMemcpy_v3020", 20, 5, 70, 63, 65, CopyKind::kHtoD);
    b.launch(20, 72, 74, 75, 85);
    b.launch(22, 76, 78, 79, 279);
    const auto findings = findingsOf(b.build());
    const Finding* f = findingById(findings, "sync-memcpy");
    REQUIRE(f != nullptr);
    CHECK(fixSavingNs(*f) == (held ? 0 : 42'000));
  }
}

TEST_CASE("sync-memcpy: another thread's staged copies no longer take turns with the cudaMemcpy") {
  // Thread 2 stages pageable copies to non-blocking stream 20: alone a call takes 8 µs; the two
  // that overlapped thread 1's cudaMemcpy calls (the driver held the context while they waited on
  // the legacy stream) took 130 µs. Thread 2's 500 µs kernel, launched after its copies, ends the
  // span. Made asynchronous, the cudaMemcpy calls hold nothing: thread 2's contended calls take
  // their own 8 µs and its kernel starts 244 µs sooner. Before, the what-if gave that time back
  // only to launches, not to other threads' staged copies.
  TraceBuilder b;
  b.addStream(20, StreamFlag::kNonBlocking);
  auto onThread = [&](std::uint32_t tid) { b.trace().runtime_calls.back().tid = tid; };
  for (const double t : {0.0, 10.0}) {
    b.copyCall("cudaMemcpyAsync_v3020", 20, t, t + 8, t + 9, t + 10, CopyKind::kHtoD, MemKind::kPageable);
    onThread(2);
  }
  for (const double t : {20.0, 151.0}) {
    b.copyCall("cudaMemcpyAsync_v3020", 20, t, t + 130, t + 131, t + 132, CopyKind::kHtoD,
               MemKind::kPageable);
    onThread(2);
  }
  b.launch(20, 285, 287, 288, 788);
  onThread(2);
  b.launch(13, 1, 3, 4, 125);
  b.copyCall("cudaMemcpy_v3020", kNullStream, 15, 135, 126, 134, CopyKind::kHtoD);
  b.launch(13, 136, 138, 160, 170);
  b.copyCall("cudaMemcpy_v3020", kNullStream, 139, 265, 255, 264, CopyKind::kHtoD);
  b.launch(13, 266, 268, 300, 310);
  const auto findings = findingsOf(b.build());
  const Finding* f = findingById(findings, "sync-memcpy");
  REQUIRE(f != nullptr);
  CHECK(fixSavingNs(*f) == 244'000);
}

TEST_CASE("sync-memcpy: a download kept on the legacy stream no longer holds another thread's calls") {
  // Thread 1 reads a 500 µs legacy-stream kernel's result back with a cudaMemcpy DtoH into pinned
  // memory (call 3-520, copy 506-516); its fix keeps the copy on the legacy stream (its producer's)
  // and returns at once, the host waiting in a synchronize. Thread 2's launch of a 2 µs kernel to
  // stream 20 took 530 µs where alone a launch takes 2: the driver held the context while the
  // cudaMemcpy waited. Without the hold, thread 2's next launch, a 200 µs kernel on stream 21,
  // runs beside thread 1's kernel, and the held launch's own 2 µs kernel is released when its call
  // would have returned (HostTimeGiven::in_call): the span ends with thread 1's copy at 516 µs,
  // 228 µs sooner (201 while that kernel kept its recorded release). Where the held launch is to the legacy stream
  // it keeps its wait (the fixed schedule keeps that stream's work in the order the trace
  // submitted it): the what-if saves nothing, so the fix alone saves nothing, and the finding's
  // cost stays its call's charge, the 25 µs the device idled after the copy. Before, a copy kept
  // on the legacy stream released no other thread's call.
  for (const std::uint32_t stream : {20u, kNullStream}) {
    INFO("the held launch's stream " << stream);
    TraceBuilder b;
    b.addStream(20, StreamFlag::kNonBlocking);
    b.addStream(21, StreamFlag::kNonBlocking);
    auto onThread = [&](std::uint32_t tid) { b.trace().runtime_calls.back().tid = tid; };
    b.launch(kNullStream, 0, 2, 5, 505);
    b.copyCall("cudaMemcpy_v3020", kNullStream, 3, 520, 506, 516, CopyKind::kDtoH);
    b.call("cudaStreamSynchronize_v3020", 0, 0.5);
    onThread(2);
    b.launch(stream, 1, 3, 4, 6);
    onThread(2);
    b.launch(stream, 10, 540, 541, 543);
    onThread(2);
    b.launch(21, 541, 543, 544, 744);
    onThread(2);
    const auto findings = findingsOf(b.build());
    const Finding* f = findingById(findings, "sync-memcpy");
    REQUIRE(f != nullptr);
    CHECK(fixSavingNs(*f) == (stream == 20u ? 229'000 : 0));
    if (stream == kNullStream) CHECK(f->time_ns == 25'000);
  }
}

TEST_CASE("sync-memcpy: a call held behind a call the fix lets go is let go too") {
  // Thread 1 reads a 500 µs legacy-stream kernel's result back with a cudaMemcpy DtoH into pinned
  // memory (call 3-520, copy 506-516) and launches its next kernel right after: it reads the
  // result there, so its fix (cudaMemcpyAsync and a synchronize) still waits for the copy, but a
  // synchronize does not hold the context. Thread 2's launch to the legacy stream (call 10-600)
  // waited behind the cudaMemcpy in the driver, and thread 3's launch of a 200 µs kernel to its
  // own stream (call 530-598) waited behind thread 2's held launch. In the fix thread 2's launch
  // returns as a launch alone does (2 µs: its hold, 588 µs, is given back, also on the legacy
  // stream, since thread 1 does not run ahead of the order the trace submitted) and so no longer
  // holds thread 3's, whose kernel is released 66 µs sooner: the span ends 66 µs sooner. Before,
  // only calls that overlapped the cudaMemcpy itself got their hold back and the what-if saved
  // nothing.
  TraceBuilder b;
  b.addStream(20, StreamFlag::kNonBlocking);
  b.addStream(21, StreamFlag::kNonBlocking);
  auto onThread = [&](std::uint32_t tid) { b.trace().runtime_calls.back().tid = tid; };
  b.launch(kNullStream, 0, 2, 5, 505);
  b.copyCall("cudaMemcpy_v3020", kNullStream, 3, 520, 506, 516, CopyKind::kDtoH);
  b.launch(kNullStream, 522, 524, 535, 545);
  b.launch(20, 1, 3, 4, 6);
  onThread(2);
  b.launch(kNullStream, 10, 600, 601, 603);
  onThread(2);
  b.launch(21, 0.6, 2.6, 3, 5);
  onThread(3);
  b.launch(21, 530, 598, 599, 799);
  onThread(3);
  const auto findings = findingsOf(b.build());
  const Finding* f = findingById(findings, "sync-memcpy");
  REQUIRE(f != nullptr);
  CHECK(fixSavingNs(*f) == 66'000);
}

TEST_CASE("sync-memcpy: a launch held behind the cudaMemcpy submits its op only after the hold") {
  // As above, thread 1's cudaMemcpy (call 3-520) held thread 2's launch to stream 20 for 530 µs,
  // but the launch's 200 µs kernel shows starting 0.5 µs before its call returned (an op launched
  // onto an idle stream starts as it is submitted, the call returning a few µs after; the host's
  // and the device's clocks disagree by as much). A kernel launch is asynchronous: it submitted
  // its op after the hold, so the fix releases the kernel when the call would have returned
  // (12 µs), beside thread 1's kernel, and the span ends with thread 1's copy, 224.5 µs sooner
  // than the kernel's 739.5. Before, such an op kept its recorded release (the schedule took the hold for the
  // startup of a call that blocked until its op ran) and the what-if saved nothing.
  TraceBuilder b;
  b.addStream(20, StreamFlag::kNonBlocking);
  auto onThread = [&](std::uint32_t tid) { b.trace().runtime_calls.back().tid = tid; };
  b.launch(kNullStream, 0, 2, 5, 505);
  b.copyCall("cudaMemcpy_v3020", kNullStream, 3, 520, 506, 516, CopyKind::kDtoH);
  b.call("cudaStreamSynchronize_v3020", 0, 0.5);
  onThread(2);
  b.launch(20, 1, 3, 4, 6);
  onThread(2);
  b.launch(20, 10, 540, 539.5, 739.5);
  onThread(2);
  const auto findings = findingsOf(b.build());
  const Finding* f = findingById(findings, "sync-memcpy");
  REQUIRE(f != nullptr);
  CHECK(fixSavingNs(*f) == 224'500);
}

TEST_CASE("sync-memcpy: a synchronize of the stream a copy moves to waits for the copy") {
  // Thread 1 uploads with a cudaMemcpy (call 13-118, copy 15-115) whose consumer is stream 13's
  // next kernel, and synchronizes stream 13 between them; then a 100 µs kernel on stream 14. Made
  // asynchronous the copy runs on stream 13, so the synchronize (which waited for nothing in
  // flight) now waits for it and the host launches stream 14's kernel as late as before: the fix
  // saves only the few µs of the copy's call. Had the synchronize kept waiting for what it waited
  // for in the trace, the host would have run ahead and the 100 µs kernel would have started
  // beside the copy: 100 µs claimed.
  TraceBuilder b;
  b.launch(13, 0, 1, 2, 12);
  b.copyCall("cudaMemcpy_v3020", kNullStream, 13, 118, 15, 115, CopyKind::kHtoD);
  const std::uint32_t sync = b.call("cudaStreamSynchronize_v3020", 119, 120);
  SyncEvent record;
  record.start = 119 * test::kUs;
  record.end = 120 * test::kUs;
  record.correlation_id = sync;
  record.stream_id = 13;
  record.context_id = 1;
  record.pid = b.trace().runtime_calls.back().pid;
  record.type = SyncType::kStreamSynchronize;
  b.trace().syncs.push_back(record);
  b.launch(13, 121, 123, 130, 140);
  b.launch(14, 125, 127, 150, 250);
  const auto findings = findingsOf(b.build());
  const Finding* f = findingById(findings, "sync-memcpy");
  REQUIRE(f != nullptr);
  CHECK(fixSavingNs(*f) < 30'000);
}

TEST_CASE("sync-memcpy: a kernel slowed beside another thread's kernel takes its alone run where the fix leaves it alone") {
  // Thread 1's kernel X on stream 14 ran alone once (3-103 µs: thread 2's download beside it is
  // no kernel); thread 1 then uploads with a cudaMemcpy on the legacy stream (call 104-405) that
  // the barrier ran after thread 2's download on stream 13 (5-400), and X ran again 425-575,
  // beside thread 2's next kernel (445-845) for 130 of its 150 µs, against 100 alone. Thread 1's
  // last kernel (another grid, no alone run) runs 576-1576 and ends the span. Made asynchronous,
  // the upload returns at once and runs before X on stream 14; X then runs beside no other kernel
  // and takes its alone run (kernelsLeftAlone, as blocking-sync-call's deferred schedule does):
  // the fix saves 347 µs, 297 with X's recorded 150 µs.
  TraceBuilder b;
  auto onThread = [&](std::uint32_t tid) { b.trace().runtime_calls.back().tid = tid; };
  b.launch(14, 0, 2, 3, 103);
  b.copyCall("cudaMemcpyAsync_v3020", 13, 1, 4, 5, 400, CopyKind::kDtoH);
  onThread(2);
  b.launch(13, 440, 443, 445, 845);
  onThread(2);
  b.copyCall("cudaMemcpy_v3020", kNullStream, 104, 405, 401, 403, CopyKind::kHtoD);
  b.launch(14, 420, 423, 425, 575);
  b.launch(14, 424, 427, 576, 1576).grid_blocks = 128;
  const auto findings = findingsOf(b.build());
  const Finding* f = findingById(findings, "sync-memcpy");
  REQUIRE(f != nullptr);
  CHECK(fixSavingNs(*f) == Approx(347'000).margin(10'000));
}

TEST_CASE("sync-memcpy: a download into pinned memory holds the host only where it synchronizes") {
  // A 100 µs kernel on non-blocking stream 13 (5-105 µs), its result read back by a cudaMemcpy
  // DtoH on the legacy stream (call 3-118, copy 106-116), then the next input uploaded on stream 14
  // (cudaMemcpyAsync, copy 130-230), a device synchronize and a last kernel. Made asynchronous into pinned
  // memory, the download's call returns after an asynchronous call's time and the host waits for
  // it at the device synchronize: the upload runs beside the kernel and the download, and the
  // last kernel starts about 110 µs sooner. Into pageable memory the call still returns only once its
  // copy is done (the driver copies it out of its staging buffer): the upload still follows it,
  // and the fix saves what it saved for both before (14 µs: the download off the legacy stream,
  // its call's own time), as every download kept its call waiting.
  for (const MemKind host : {MemKind::kPinned, MemKind::kPageable}) {
    INFO("host memory " << (host == MemKind::kPinned ? "pinned" : "pageable"));
    TraceBuilder b;
    b.addStream(13, StreamFlag::kNonBlocking);
    b.addStream(14, StreamFlag::kNonBlocking);
    b.launch(13, 0, 2, 5, 105);
    b.copyCall("cudaMemcpy_v3020", kNullStream, 3, 118, 106, 116, CopyKind::kDtoH, host);
    b.copyCall("cudaMemcpyAsync_v3020", 14, 125, 127, 130, 230, CopyKind::kHtoD);
    b.call("cudaDeviceSynchronize_v3020", 127, 231);
    b.launch(13, 232, 234, 236, 246);
    const auto findings = findingsOf(b.build());
    const Finding* f = findingById(findings, "sync-memcpy");
    REQUIRE(f != nullptr);
    if (host == MemKind::kPinned) {
      CHECK(fixSavingNs(*f) >= 90'000);
      CHECK(fixSavingNs(*f) <= 120'000);
    } else {
      CHECK(fixSavingNs(*f) < 20'000);
    }
  }
}

TEST_CASE("sync-memcpy: a device synchronize waits for a download moved to another stream") {
  // The pinned download of the case above, with a 10 µs upload on the legacy stream issued
  // after it (128-138; a kernel launched there would mark the download read right after it,
  // readRightAfter) and a device synchronize (127-139) before the upload (143-243). The
  // download moves to stream 13, where it is the last op launched before the synchronize: the
  // synchronize waits for it (to 116 µs) as well as for the legacy upload, so the upload starts
  // at about 120 µs and the fix saves about 23 µs. Waiting only for the last op of each stream
  // the trace had (the legacy upload, stream 13's kernel), the upload would start at about
  // 110 µs: about 33 µs claimed.
  TraceBuilder b;
  b.addStream(13, StreamFlag::kNonBlocking);
  b.addStream(14, StreamFlag::kNonBlocking);
  b.launch(13, 0, 2, 5, 105);
  b.copyCall("cudaMemcpy_v3020", kNullStream, 3, 118, 106, 116, CopyKind::kDtoH);
  b.copyCall("cudaMemcpyAsync_v3020", kNullStream, 125, 127, 128, 138, CopyKind::kHtoD);
  b.call("cudaDeviceSynchronize_v3020", 127, 139);
  b.copyCall("cudaMemcpyAsync_v3020", 14, 140, 142, 143, 243, CopyKind::kHtoD);
  const auto findings = findingsOf(b.build());
  const Finding* f = findingById(findings, "sync-memcpy");
  REQUIRE(f != nullptr);
  CHECK(fixSavingNs(*f) > 15'000);
  CHECK(fixSavingNs(*f) < 28'000);
}

}  // namespace
}  // namespace cuoverlap
