// many-small-copies on hand-built traces: one transfer split into many small copies, what merging
// them saves (the first copy carries all the bytes at the rate the pieces moved them, the later
// calls are gone), and what must not fire (large pageable copies, copies separated by other work).
#include <catch2/catch.hpp>

#include "findings_test_util.h"
#include "trace_builder.h"

namespace cuoverlap {
namespace {

using test::TraceBuilder;

// 100 pinned HtoD copies of 4 KiB, each call 4 µs, each copy 2 µs, then a 100 µs kernel that
// reads them: the host's calls set the pace (400 µs), the copies' bytes would take 8 µs.
TraceBuilder splitTransfer() {
  TraceBuilder b;
  b.trace().devices[0].pcie_generation = 5;
  b.trace().devices[0].pcie_width = 16;
  for (int i = 0; i < 100; ++i) {
    const double t = 4.0 * i;
    b.copyCall("cudaMemcpyAsync_v3020", 13, t, t + 4, t + 3, t + 5, CopyKind::kHtoD).bytes = 4096;
  }
  b.launch(13, 400, 401, 405, 505);
  return b;
}

}  // namespace

TEST_CASE("many-small-copies: a transfer split into small copies costs its calls and fixed costs") {
  const auto findings = test::findingsOf(splitTransfer().build());
  const Finding* f = test::findingById(findings, "many-small-copies");
  REQUIRE(f != nullptr);
  CHECK(f->count == 1);
  // Merged: one copy of the pieces' 200 µs less the 1.92 µs each later 4 KiB copy took beyond its
  // bytes at 52.3 GB/s (PinnedRate::latency_ns) = 9.75 µs, issued by the first call (3 µs), the 99
  // later calls (396 µs) given back, so the kernel's launch (released at 401) comes 396 µs earlier
  // but not before the merged copy ends and the stream hands off to the kernel (4 µs, as recorded:
  // DeviceView::streamHandoff): span 502 -> 114.75 µs. Of the 387.25 µs, 100 lower the ideal (the
  // HtoD engine's 200 µs of copies become 9.75 µs; the kernel's 100 µs bound it). Before the
  // merged copy carried its run's bytes it kept the first piece's 2 µs.
  CHECK(f->time_ns == 388'278);
  CHECK(f->ideal_reduction_ns == 100'000);
}

TEST_CASE("many-small-copies: large pageable copies and copies split by other work do not fire") {
  // A large pageable copy's time is the driver staging its bytes, which one copy of them all
  // still does: four of 16 MiB, one size, are pieces, but merged they save no staging, and the
  // 300 µs between two calls is not a loop's code (the thread launches no kernel to compare it
  // with: no loop time). What is left is three copies' start latency (3 µs each), 9 µs in all.
  TraceBuilder large;
  large.trace().devices[0].pcie_generation = 5;
  large.trace().devices[0].pcie_width = 16;
  for (int i = 0; i < 4; ++i) {
    const double t = 2000.0 * i;
    large.copyCall("cudaMemcpyAsync_v3020", 13, t, t + 1700, t + 3, t + 1700, CopyKind::kHtoD,
                   MemKind::kPageable).bytes = 16 << 20;
  }
  {
    std::vector<Finding> found = test::findingsOf(large.build());
    const Finding* f = test::findingById(found, "many-small-copies");
    REQUIRE(f != nullptr);
    CHECK(f->time_ns == 9'000);
  }

  // Pinned copies of different sizes, not all small, are different buffers (a batch and its
  // labels), not one transfer cut into pieces.
  TraceBuilder mixed;
  for (int i = 0; i < 8; ++i) {
    const double t = 30.0 * i;
    mixed.copyCall("cudaMemcpyAsync_v3020", 13, t, t + 4, t + 3, t + 25, CopyKind::kHtoD).bytes = 1 << 20;
    mixed.copyCall("cudaMemcpyAsync_v3020", 13, t + 4, t + 8, t + 26, t + 28, CopyKind::kHtoD).bytes = 2048;
  }
  CHECK(test::findingById(test::findingsOf(mixed.build()), "many-small-copies") == nullptr);

  TraceBuilder split;
  for (int i = 0; i < 20; ++i) {
    const double t = 30.0 * i;
    split.copyCall("cudaMemcpyAsync_v3020", 13, t, t + 4, t + 3, t + 5, CopyKind::kHtoD).bytes = 4096;
    split.launch(13, t + 5, t + 6, t + 7, t + 27);
  }
  CHECK(test::findingById(test::findingsOf(split.build()), "many-small-copies") == nullptr);

  // The same thread's kernel between two copies splits them though it runs on another stream: a
  // loop that uploads, computes and reads back is not one transfer split into pieces.
  TraceBuilder looped;
  for (int i = 0; i < 20; ++i) {
    const double t = 30.0 * i;
    looped.copyCall("cudaMemcpyAsync_v3020", 13, t, t + 4, t + 3, t + 5, CopyKind::kHtoD).bytes = 4096;
    looped.launch(14, t + 5, t + 6, t + 7, t + 27);
  }
  CHECK(test::findingById(test::findingsOf(looped.build()), "many-small-copies") == nullptr);

  // A thread that synchronizes another stream before each copy waits for the device between the
  // pieces: merging them first moves those waits (blocking-sync-call's fix), so they are no run.
  const auto uploads = [](bool synchronized) {
    TraceBuilder b;
    for (int i = 0; i < 20; ++i) {
      const double t = 30.0 * i;
      if (synchronized) b.streamSynchronize(14, t, t + 2);
      b.copyCall("cudaMemcpyAsync_v3020", 13, t + 3, t + 7, t + 6, t + 8, CopyKind::kHtoD).bytes = 4096;
    }
    return test::findingsOf(b.build());
  };
  CHECK(test::findingById(uploads(false), "many-small-copies") != nullptr);
  CHECK(test::findingById(uploads(true), "many-small-copies") == nullptr);
}

TEST_CASE("many-small-copies: a copy is small when its bytes take no longer than its fixed costs") {
  // 20 pinned HtoD copies of 100 KiB issued ahead, each 4.5 µs with 1.3 µs between them on the
  // engine. At the link's 52.3 GB/s their bytes take 1.96 µs each: more than the 1.5 µs fixed
  // cost a copy was assumed to have, less than this trace's own: 2.54 µs of each copy's time is
  // beyond its bytes (PinnedRate::latency_ns) and the engine's turnaround adds 1.3 µs. Merged:
  // one copy of 20 x 4.5 - 19 x 2.54 µs instead of 20 x 4.5 + 19 x 1.3 = 114.7 µs (its 2 MiB at
  // the link's rate plus one fixed cost, pinnedDuration, is the same to 4 ns, which it takes).
  // With the 1.5 µs fixed cost and no turnaround the copies were not small: no finding.
  TraceBuilder b;
  b.trace().devices[0].pcie_generation = 5;
  b.trace().devices[0].pcie_width = 16;
  for (int i = 0; i < 20; ++i) {
    const double t = 10 + 5.8 * i;
    b.copyCall("cudaMemcpyAsync_v3020", 13, i, i + 1, t, t + 4.5, CopyKind::kHtoD).bytes = 100 << 10;
  }
  const auto findings = test::findingsOf(b.build());
  const Finding* f = test::findingById(findings, "many-small-copies");
  REQUIRE(f != nullptr);
  CHECK(f->count == 1);
  CHECK(fixSavingNs(*f) == 114'700 - (90'000 - 19 * 2'542) + 4);
}

TEST_CASE("many-small-copies keeps the legacy stream's barrier: the merged copy still waits behind it") {
  // A 1000 µs kernel of 8 blocks on the legacy stream (5-1005), then 20 pinned HtoD copies of
  // 4 KiB on the blocking stream 13, issued from 3 µs on: the legacy stream's barrier held them
  // back to 1005 (1005-1100, 5 µs apart), and a 500 µs kernel of 8 blocks on stream 13 read them
  // (1101-1601). Merged, the copy is on stream 13 still, behind the barrier: the fix saves the
  // pieces' fixed costs and gaps (93.5 µs). A what-if without the barrier ran even the recorded
  // copies beside the legacy kernel, found nothing to save and did not fire (in the lab, g000078's
  // runs of copies behind other threads' legacy work: costed 0.71 ms, merging saved 5.49).
  TraceBuilder b;
  b.trace().devices[0].pcie_generation = 5;
  b.trace().devices[0].pcie_width = 16;
  b.launch(test::kNullStream, 0, 2, 5, 1005).grid_blocks = 8;
  for (int i = 0; i < 20; ++i) {
    const double t = 3 + 4.0 * i;
    const double at = 1005 + 5.0 * i;
    b.copyCall("cudaMemcpyAsync_v3020", 13, t, t + 4, at, at + 2, CopyKind::kHtoD).bytes = 4096;
  }
  b.launch(13, 84, 86, 1101, 1601).grid_blocks = 8;
  const auto findings = test::findingsOf(b.build());
  const Finding* f = test::findingById(findings, "many-small-copies");
  REQUIRE(f != nullptr);
  CHECK(fixSavingNs(*f) > 80'000);
  CHECK(fixSavingNs(*f) < 100'000);
}

TEST_CASE("many-small-copies: a run's later copies leave the legacy stream's barrier with them") {
  // Thread 1 issues 20 pinned 4 KiB copies on the legacy stream while thread 2 launches a 30 µs
  // kernel of 8 blocks after each (all calls within 40 µs), alternately on the blocking streams 13
  // and 14: the legacy
  // stream's barrier made copy, kernel, copy, kernel... run one after another (32 µs a pair). Merged,
  // only the first copy is issued: the kernels wait for it, then those of the two streams run side
  // by side. Had the later copies kept their barriers (taking no time), each kernel would still
  // have waited for the one before it through them.
  TraceBuilder b;
  b.trace().devices[0].pcie_generation = 5;
  b.trace().devices[0].pcie_width = 16;
  for (int i = 0; i < 20; ++i) {
    const double call = 2.0 * i;  // all calls within 40 µs, copy and launch in turn
    const double t = 32.0 * i;
    b.copyCall("cudaMemcpyAsync_v3020", test::kNullStream, call, call + 0.5, t + 1, t + 3, CopyKind::kHtoD)
        .bytes = 4096;
    b.launch(i % 2 == 0 ? 13 : 14, call + 1, call + 1.5, t + 3, t + 33).grid_blocks = 8;
    b.trace().runtime_calls.back().tid = 2;
  }
  const auto findings = test::findingsOf(b.build());
  const Finding* f = test::findingById(findings, "many-small-copies");
  REQUIRE(f != nullptr);
  // Recorded 640 µs; merged, about 10 x 30 µs on each of the two streams side by side.
  CHECK(fixSavingNs(*f) > 250'000);
}

TEST_CASE("many-small-copies: a run is one thread's copies") {
  // Two threads take turns issuing 4 KiB copies on the legacy stream, 10 each: no one copy can
  // carry pieces two threads issued, so each thread's pieces are a run of its own, merged apart.
  TraceBuilder b;
  b.trace().devices[0].pcie_generation = 5;
  b.trace().devices[0].pcie_width = 16;
  for (int i = 0; i < 20; ++i) {
    const double t = 4.0 * i;
    b.copyCall("cudaMemcpyAsync_v3020", test::kNullStream, t, t + 4, t + 3, t + 5, CopyKind::kHtoD).bytes = 4096;
    b.trace().runtime_calls.back().tid = 1 + static_cast<std::uint32_t>(i % 2);
  }
  b.launch(13, 80, 81, 85, 185);
  const auto findings = test::findingsOf(b.build());
  const Finding* f = test::findingById(findings, "many-small-copies");
  REQUIRE(f != nullptr);
  CHECK(f->count == 2);
  CHECK(f->summary.find("20 copies in 2 runs") != std::string::npos);
}

TEST_CASE("many-small-copies: pinned pieces of any size merge into one copy at the rate they moved") {
  // 16 pinned HtoD copies of 1 MiB issued ahead, each 21 µs with 1.3 µs of turnaround between them
  // on the engine, beside one 16 KiB copy that took 2.8 µs. The pinned rate, from the 1 MiB
  // copies less the fixed cost each paid, is 56.7 GB/s; the 16 KiB copy's bytes take 0.29 µs at
  // it, so a copy's fixed cost is 2.51 µs (PinnedRate::latency_ns; the two settle together).
  // Merged: the pieces' 336 µs less 15 fixed costs = 298.3 µs (not 16 MiB at the pinned rate plus
  // one fixed cost), instead of 16 x 21 + 15 x 1.3 = 355.5 µs. Before, a piece of 1 MiB was not
  // small: no finding.
  TraceBuilder b;
  b.trace().devices[0].pcie_generation = 5;
  b.trace().devices[0].pcie_width = 16;
  b.copyCall("cudaMemcpyAsync_v3020", 14, 0, 1, 2, 4.8, CopyKind::kHtoD).bytes = 16 << 10;
  b.launch(14, 1, 2, 10, 11);
  for (int i = 0; i < 16; ++i) {
    const double t = 20 + 22.3 * i;
    b.copyCall("cudaMemcpyAsync_v3020", 13, 2 + i, 3 + i, t, t + 21, CopyKind::kHtoD).bytes = 1 << 20;
  }
  const auto findings = test::findingsOf(b.build());
  const Finding* f = test::findingById(findings, "many-small-copies");
  REQUIRE(f != nullptr);
  CHECK(f->count == 1);
  CHECK(fixSavingNs(*f) == 355'500 - (336'000 - 15 * 2'511));
}

TEST_CASE("many-small-copies: the other threads' calls that a later piece on the legacy stream held get that time back") {
  // Thread 1 issues 20 pinned 4 KiB copies on the legacy stream, one call every 25 µs; thread 2
  // meanwhile launches 20 short kernels on a non-blocking stream of its own, each call taking 25
  // µs beside thread 1's (the driver holds the context while it orders a legacy-stream op after
  // the blocking streams), then 5 more alone at 2.5 µs a call. Thread 2's launches set the span.
  // Merged, thread 1 makes one call: thread 2's calls that the later pieces held take their own
  // 2.5 µs (legacy_threads.h, contendedTime), and its kernels come 22.5 µs a call sooner. Before,
  // only thread 1 got its calls back, which moved nothing on the span's path: no finding.
  TraceBuilder b;
  b.trace().devices[0].pcie_generation = 5;
  b.trace().devices[0].pcie_width = 16;
  b.addStream(20, StreamFlag::kNonBlocking);
  for (int i = 0; i < 20; ++i) {
    const double t = 25.0 * i;
    b.copyCall("cudaMemcpyAsync_v3020", test::kNullStream, t, t + 25, t + 26, t + 28, CopyKind::kHtoD)
        .bytes = 4096;
    b.launch(20, t + 1, t + 26, t + 27, t + 29);
    b.trace().runtime_calls.back().tid = 2;
  }
  for (int j = 0; j < 5; ++j) {
    const double t = 520 + 3.0 * j;
    b.launch(20, t, t + 2.5, t + 3.5, t + 5.5);
    b.trace().runtime_calls.back().tid = 2;
  }
  const auto findings = test::findingsOf(b.build());
  const Finding* f = test::findingById(findings, "many-small-copies");
  REQUIRE(f != nullptr);
  // About 20 x 22.5 µs of thread 2's launch calls.
  CHECK(fixSavingNs(*f) > 400'000);
  CHECK(fixSavingNs(*f) < 460'000);
}

}  // namespace cuoverlap

namespace cuoverlap {
namespace {

// 20 pinned 4 KiB HtoD copies issued by a loop that spends 4 µs in each call and 2 µs between
// two calls (its own code around them), the copies 2 µs each, then a 100 µs kernel that reads
// them; `extra_us` of the thread's own work before the 10th call.
TraceBuilder loopedTransfer(double extra_us, double gap_us = 2) {
  TraceBuilder b;
  b.trace().devices[0].pcie_generation = 5;
  b.trace().devices[0].pcie_width = 16;
  double t = 0;
  for (int i = 0; i < 20; ++i) {
    if (i == 10) t += extra_us;
    b.copyCall("cudaMemcpyAsync_v3020", 13, t, t + 4, t + 2, t + 4, CopyKind::kHtoD).bytes = 4096;
    t += 4 + gap_us;
  }
  b.launch(13, t, t + 1, t + 5, t + 105);
  return b;
}

}  // namespace

TEST_CASE("many-small-copies: the loop's host time between the pieces' calls goes with them") {
  // Merged, the thread makes one call: the 19 later calls (76 µs) and the 2 µs its loop spent
  // before each (38 µs) are given back, so the kernel's launch comes 114 µs sooner. Before, only
  // the calls' 76 µs came back.
  const auto findings = test::findingsOf(loopedTransfer(0).build());
  const Finding* f = test::findingById(findings, "many-small-copies");
  REQUIRE(f != nullptr);
  const Ns saving = fixSavingNs(*f);
  CHECK(saving > 110'000);
  CHECK(saving <= 114'000);
  // 60 µs of the thread's own work before one piece (more than the loop's typical 2 µs) stays:
  // one copy of all the pieces does not save it, so the saving is the same.
  const auto with_work = test::findingsOf(loopedTransfer(60).build());
  const Finding* g = test::findingById(with_work, "many-small-copies");
  REQUIRE(g != nullptr);
  CHECK(fixSavingNs(*g) == saving);
  // A thread whose typical time between two pieces is longer than a call (20 µs) does work of its
  // own between them (a step's upload each iteration, JAX's per-step arguments): none of it is the
  // loop's, and only the calls come back.
  const auto spaced = test::findingsOf(loopedTransfer(0, 20).build());
  const Finding* h = test::findingById(spaced, "many-small-copies");
  REQUIRE(h != nullptr);
  CHECK(fixSavingNs(*h) <= 76'000);
}

}  // namespace cuoverlap

namespace cuoverlap {
namespace {

// One thread uploads a pageable buffer as 16 pieces of 753 KiB with cudaMemcpyAsync on stream 13
// (the lab's g000164): each call stages its piece (95 µs: it waits 17.7 µs for the previous
// piece's DMA to leave the staging buffer, then stages for 77.3), returns, and the piece's DMA
// (18.5 µs) runs after it; the loop spends 0.8 µs between two calls; a kernel reads the buffer.
TraceBuilder stagedPieces() {
  TraceBuilder b;
  b.trace().devices[0].pcie_generation = 5;
  b.trace().devices[0].pcie_width = 16;
  double t = 0;
  for (int i = 0; i < 16; ++i) {
    b.copyCall("cudaMemcpyAsync_v3020", 13, t, t + 95, t + 95.2, t + 113.7, CopyKind::kHtoD,
               MemKind::kPageable).bytes = 770560;
    t += 95.8;
  }
  b.launch(13, t, t + 4, t + 20, t + 44);
  return b;
}

}  // namespace

TEST_CASE("many-small-copies: large pageable pieces of one size keep their staging") {
  // Merged, one call still stages every byte (the 16 calls' own time, 77.3 µs each after the
  // first's 95); what goes is each later call's wait for the previous piece's DMA (17.7 µs) and
  // the loop's 0.8 µs before it: 15 x 18.5 = 277.5 µs. Dropping the later calls whole (their
  // staging with them) claimed 15 x 95.8 = 1437 µs; before, large pageable copies were no pieces.
  const auto findings = test::findingsOf(stagedPieces().build());
  const Finding* f = test::findingById(findings, "many-small-copies");
  REQUIRE(f != nullptr);
  const Ns saving = fixSavingNs(*f);
  CHECK(saving > 265'000);
  CHECK(saving < 290'000);
}

}  // namespace cuoverlap

namespace cuoverlap {
namespace {

// Thread 1 uploads 40 pinned 4 KiB pieces on stream 13, one call every 25 µs from 40 µs; thread 2
// launches a kernel, frees a buffer alone (20 µs), then frees another while thread 1's pieces
// come (45-1045 µs: the lock lost to each of them) and launches a 100 µs kernel that sets the
// span. With `third_holds`, thread 3 pins host memory (cudaMallocHost) over the same time.
TraceBuilder freeBesidePieces(bool third_holds) {
  TraceBuilder b;
  b.trace().devices[0].pcie_generation = 5;
  b.trace().devices[0].pcie_width = 16;
  b.addStream(20, StreamFlag::kNonBlocking);
  const auto onThread = [&](std::uint32_t tid) { b.trace().runtime_calls.back().tid = tid; };
  b.launch(20, 0, 3, 4, 10);
  onThread(2);
  b.call("cudaFree_v3020", 12, 32);
  onThread(2);
  for (int i = 0; i < 40; ++i) {
    const double t = 40 + 25.0 * i;
    b.copyCall("cudaMemcpyAsync_v3020", 13, t, t + 25, t + 26, t + 28, CopyKind::kHtoD).bytes = 4096;
  }
  b.call("cudaFree_v3020", 45, 1045);
  onThread(2);
  b.launch(20, 1047, 1050, 1051, 1151);
  onThread(2);
  if (third_holds) {
    b.call("cudaMallocHost_v3020", 38, 1042);
    onThread(3);
  }
  return b;
}

}  // namespace

TEST_CASE("many-small-copies: an allocation or free of another thread that the pieces' calls held gets that time back") {
  SECTION("merged, the free takes its own 20 µs and the kernel after it comes about 0.96 ms sooner") {
    const auto findings = test::findingsOf(freeBesidePieces(false).build());
    const Finding* f = test::findingById(findings, "many-small-copies");
    REQUIRE(f != nullptr);
    CHECK(fixSavingNs(*f) > 900'000);
    CHECK(fixSavingNs(*f) < 1'000'000);
  }
  SECTION("a call the fixed program keeps (a cudaMallocHost) over the same time may be what it waited for") {
    const auto findings = test::findingsOf(freeBesidePieces(true).build());
    const Finding* f = test::findingById(findings, "many-small-copies");
    CHECK((f == nullptr || fixSavingNs(*f) < 100'000));
  }
}

}  // namespace cuoverlap
