// host-busy's fix alone on hand-built traces: host work right after a synchronize that goes on to
// copy an input in begins the next iteration (a loader's next batch) and can run a step ahead,
// beside the GPU's work, unless that copy is synchronous or from pageable memory (a blocking
// step, as pipelining leaves it); made a step ahead, it lands before the step's download to
// pageable memory, not after it; host work there that goes on to launch kernels may use what the
// synchronize waited for and stays, and so does a loop's first batch, which has no step of its loop
// before it. Host work between launches moves after them even where the device was busy, and saves
// what that gains, more than the idle time where the launches it held back ran beside others.
#include <catch2/catch.hpp>

#include "findings_test_util.h"
#include "trace_builder.h"

namespace cuoverlap {
namespace {

using test::TraceBuilder;
using test::kUs;

// Three iterations of: a 200 µs kernel, a synchronize, 100 µs of host work while the device
// idles, then (a small HtoD copy of a next input and) a 3 µs kernel; the next iteration's launch
// follows at once.
// With `synchronous`, the copy in is a cudaMemcpy the thread waits in; with `pageable`, a
// cudaMemcpyAsync from pageable memory, whose call blocks while the driver stages it.
TraceBuilder stepWithTail(bool copy_in, bool synchronous = false, bool pageable = false) {
  TraceBuilder b;
  for (int i = 0; i < 3; ++i) {
    const double t = 320.0 * i;
    b.launch(13, t + 1, t + 3, t + 5, t + 205);
    b.call("cudaStreamSynchronize_v3020", t + 7, t + 211);
    if (copy_in && synchronous) {
      b.copyCall("cudaMemcpy_v3020", 13, t + 311, t + 313, t + 312, t + 313, CopyKind::kHtoD);
    } else if (copy_in && pageable) {
      b.copyCall("cudaMemcpyAsync_v3020", 13, t + 311, t + 313, t + 312, t + 313, CopyKind::kHtoD,
                 MemKind::kPageable);
    } else if (copy_in) {
      b.copyCall("cudaMemcpyAsync_v3020", 13, t + 311, t + 312, t + 313, t + 314, CopyKind::kHtoD);
    } else {
      b.launch(13, t + 311, t + 312, t + 313, t + 314);
    }
    b.launch(13, t + 313, t + 314, t + 315, t + 318);
  }
  return b;
}

}  // namespace

TEST_CASE("host-busy: work after a wait runs a step ahead only when it copies an input in") {
  SECTION("a copy in follows: a loader's next batch, made while the long kernel runs") {
    const auto findings = test::findingsOf(stepWithTail(true).build());
    const Finding* f = test::findingById(findings, "host-busy");
    REQUIRE(f != nullptr);
    CHECK(fixSavingNs(*f) > 150 * kUs);
  }
  SECTION("a synchronous copy in follows: no launch before the step's first wait, it stays") {
    // The lab's transform (pipelining) leaves it: the batch's copy is itself a blocking step.
    const auto findings = test::findingsOf(stepWithTail(true, true).build());
    const Finding* f = test::findingById(findings, "host-busy");
    REQUIRE(f != nullptr);
    CHECK(fixSavingNs(*f) == 0);
  }
  SECTION("a copy in from pageable memory follows: a blocking step too, it stays") {
    const auto findings = test::findingsOf(stepWithTail(true, false, true).build());
    const Finding* f = test::findingById(findings, "host-busy");
    REQUIRE(f != nullptr);
    CHECK(fixSavingNs(*f) == 0);
  }
  SECTION("kernels follow: the work may use what the wait waited for, no overlap to gain") {
    const auto findings = test::findingsOf(stepWithTail(false).build());
    const Finding* f = test::findingById(findings, "host-busy");
    REQUIRE(f != nullptr);
    CHECK(fixSavingNs(*f) == 0);
  }
}

TEST_CASE("host-busy: a loader's next batch lands before the step's download to pageable memory") {
  // Three steps of: 200 µs making a batch, its pinned upload, a 300 µs kernel, a 4 KiB download
  // to pageable memory (its call returns once the kernel and the copy are done) and a
  // synchronize. Made a step ahead, after the step's launches and before its download (where the
  // lab's transform puts it), batches 2 and 3 hide under the kernel before them: about 400 µs.
  // Landed before the synchronize, after the download, they would hide under nothing.
  TraceBuilder b;
  double s = 0;
  for (int i = 0; i < 3; ++i) {
    b.copyCall("cudaMemcpyAsync_v3020", 13, s + 200, s + 203, s + 204, s + 214, CopyKind::kHtoD);
    b.launch(13, s + 203, s + 205, s + 215, s + 515);
    b.copyCall("cudaMemcpyAsync_v3020", 13, s + 205, s + 521, s + 516, s + 520, CopyKind::kDtoH,
               MemKind::kPageable);
    b.call("cudaStreamSynchronize_v3020", s + 521, s + 522);
    s += 522;
  }
  const auto findings = test::findingsOf(b.build());
  const Finding* f = test::findingById(findings, "host-busy");
  REQUIRE(f != nullptr);
  CHECK(fixSavingNs(*f) == Approx(static_cast<double>(400 * kUs)).margin(30 * kUs));
}

TEST_CASE("host-busy: a loader loop's first batch has no step before it to hide under") {
  // A 1 ms kernel of another phase and its synchronize, then two steps of: 300 µs of host work
  // making a batch, its HtoD copy, a 200 µs kernel, a synchronize. Pipelined, batch 2 is made
  // during step 1 (it hides 200 µs: the kernel's length); batch 1 is the loop's first and stays
  // after the phase's synchronize, not moved under the other phase's kernel.
  TraceBuilder b;
  b.launch(13, 1, 3, 5, 1'005);
  b.call("cudaDeviceSynchronize_v3020", 4, 1'006);
  for (int i = 0; i < 2; ++i) {
    const double t = 1'006.0 + 510.0 * i;
    b.copyCall("cudaMemcpyAsync_v3020", 13, t + 300, t + 302, t + 303, t + 304, CopyKind::kHtoD);
    b.launch(13, t + 302, t + 304, t + 305, t + 505);
    b.call("cudaStreamSynchronize_v3020", t + 305, t + 510);
  }
  const auto findings = test::findingsOf(b.build());
  const Finding* f = test::findingById(findings, "host-busy");
  REQUIRE(f != nullptr);
  CHECK(fixSavingNs(*f) == Approx(static_cast<double>(200 * kUs)).margin(10 * kUs));
}

TEST_CASE("host-busy: host work between launches moves after them even where no gap counts") {
  // Two iterations of: three 20 µs kernels (three different launches: the same launch again after
  // host work with no blocking call between would be the loop coming round, as in the next test)
  // launched 60 µs apart (host work between them: a
  // launch loop's gaps, host-launch-bound's, no stretch of this finding), a synchronize, then
  // 300 µs of host work (the stretch) before the next iteration. The fix runs all host work after
  // the iteration's launches: the three kernels back to back, the host work beside them.
  TraceBuilder b;
  for (int i = 0; i < 2; ++i) {
    const double t = 500.0 * i;
    b.launch(13, t + 1, t + 3, t + 5, t + 25).grid_blocks = 1;
    b.launch(13, t + 63, t + 65, t + 67, t + 87).grid_blocks = 2;
    b.launch(13, t + 125, t + 127, t + 129, t + 149).grid_blocks = 3;
    b.call("cudaStreamSynchronize_v3020", t + 128, t + 150);
  }
  const auto findings = test::findingsOf(b.build());
  const Finding* f = test::findingById(findings, "host-busy");
  REQUIRE(f != nullptr);
  CHECK(f->count == 1);  // the 350 µs between the iterations; the launch loop's gaps are not
  // The 2 x 60 µs of host work between each iteration's launches moves after them: iteration
  // 1's kernels end at 65 instead of 149, so its synchronize returns at 129, not 150, and
  // iteration 2's kernels run back to back from 484: span 644 µs -> 539 µs. (The stretch moved a
  // step ahead gains nothing: there is no GPU work beside it.)
  CHECK(fixSavingNs(*f) == Approx(static_cast<double>(105 * kUs)).margin(5 * kUs));
}

TEST_CASE("host-busy: in a loop without a blocking call, host work stays in its iteration") {
  // Four iterations of: a 50 µs kernel, 100 µs of host work, a 3 µs kernel; no synchronize until
  // the end. Moved after its iteration's second launch, each stretch still runs before the next
  // iteration's first launch (the iteration ends there: the launches repeat with a period of two
  // from the loop's first): the kernels cannot all run back to back, which would claim the whole
  // idle time (about 215 µs), and no iteration begins sooner. Each stretch releases the rest of its
  // iteration: only the last iteration's 3 µs kernel ends sooner, right after its 50 µs kernel
  // (at 386 µs instead of 438): the span goes from 434 µs to about 383.
  TraceBuilder b;
  for (int i = 0; i < 4; ++i) {
    const double t = 110.0 * i;
    b.launch(13, t, t + 2, t + 3, t + 53);
    b.launch(13, t + 102, t + 104, t + 105, t + 108).grid_blocks = 2;  // another launch
  }
  b.call("cudaDeviceSynchronize_v3020", 434, 439);
  const auto findings = test::findingsOf(b.build());
  const Finding* f = test::findingById(findings, "host-busy");
  REQUIRE(f != nullptr);
  CHECK(f->count == 4);
  CHECK(fixSavingNs(*f) == Approx(static_cast<double>(51 * kUs)).margin(8 * kUs));
}

TEST_CASE("host-busy: the saving is not capped at the idle stretches") {
  // A 200 µs kernel on one stream, 150 µs of host work while it runs (the device busy: no idle
  // stretch), then a 200 µs kernel on another stream, a synchronize, 30 µs of host work while the
  // device idles and a 5 µs kernel. Moved after the second launch, the 150 µs of host work lets
  // the second kernel run beside the first: it ends at about 207 µs instead of 357 and the
  // synchronize returns that much sooner, the span shorter by about 150 µs, more than the 30 µs
  // the device idled (which stays: it follows a synchronize and launches a kernel).
  TraceBuilder b;
  b.launch(13, 1, 3, 5, 205);
  b.launch(14, 153, 155, 157, 357);
  b.call("cudaDeviceSynchronize_v3020", 156, 358);
  b.launch(13, 388, 390, 392, 397);
  b.call("cudaDeviceSynchronize_v3020", 391, 398);
  const auto findings = test::findingsOf(b.build());
  const Finding* f = test::findingById(findings, "host-busy");
  REQUIRE(f != nullptr);
  CHECK(f->count == 1);
  CHECK(fixSavingNs(*f) == Approx(static_cast<double>(150 * kUs)).margin(10 * kUs));
}

TEST_CASE("host-busy: host work stays before a copy to pageable memory") {
  // Two iterations of: a 50 µs kernel, 100 µs of host work, an 80 µs kernel, a cudaMemcpyAsync
  // of the result to pageable memory (the call, right after the launch, returns once the kernel
  // and its copy are done) and a synchronize. The fix moves the host work after the iteration's launches, up
  // to the copy, a blocking call like the synchronize: the 80 µs kernel runs beside it, the copy
  // waits for it, and each iteration ends about 55 µs sooner (about 110 µs in all). Moved past the
  // copy instead (as before the fifty-fifth session), the work would run after the GPU's work,
  // not beside it.
  TraceBuilder b;
  for (int i = 0; i < 2; ++i) {
    const double t = 200.0 * i;
    b.launch(13, t + 1, t + 3, t + 5, t + 55);
    b.launch(13, t + 105, t + 107, t + 108, t + 188);
    b.copyCall("cudaMemcpyAsync_v3020", 13, t + 108, t + 195, t + 190, t + 194, CopyKind::kDtoH,
               MemKind::kPageable);
    b.call("cudaStreamSynchronize_v3020", t + 195, t + 196);
  }
  const auto findings = test::findingsOf(b.build());
  const Finding* f = test::findingById(findings, "host-busy");
  REQUIRE(f != nullptr);
  CHECK(fixSavingNs(*f) == Approx(static_cast<double>(110 * kUs)).margin(15 * kUs));
}

TEST_CASE("host-busy: host work right before a copy to pageable memory has nothing to move past") {
  // A 50 µs kernel, 150 µs of host work (the device idles 100 µs of it), a copy of the result to
  // pageable memory and a synchronize, twice: no launch lies between the work and the copy, a
  // blocking call, so the fix moves nothing and saves nothing (before the fifty-fifth session
  // the work moved past the copy and the fix claimed about 51 µs).
  TraceBuilder b;
  for (int i = 0; i < 2; ++i) {
    const double t = 165.0 * i;
    b.launch(13, t + 1, t + 3, t + 5, t + 55);
    b.copyCall("cudaMemcpyAsync_v3020", 13, t + 153, t + 159, t + 156, t + 158, CopyKind::kDtoH,
               MemKind::kPageable);
    b.call("cudaStreamSynchronize_v3020", t + 159, t + 160);
  }
  const auto findings = test::findingsOf(b.build());
  const Finding* f = test::findingById(findings, "host-busy");
  REQUIRE(f != nullptr);
  CHECK(fixSavingNs(*f) == 0);
}

TEST_CASE("host-busy: a long run of own code is the program's work even where only its tail idles the device") {
  // Three iterations of: `kernels` launches 2 µs apart of 20 µs kernels (queued), then the
  // thread's own code until the next iteration, `period` µs after this one's start.
  const auto loop = [](int kernels, double period) {
    TraceBuilder b;
    for (int i = 0; i < 3; ++i) {
      const double t = period * i;
      for (int k = 0; k < kernels; ++k) b.launch(13, t + 2 * k, t + 2 * k + 2, t + 5 + 20 * k, t + 25 + 20 * k);
    }
    return b;
  };
  SECTION("188 µs of own code after six kernels: each 75 µs of the 80 µs gaps between iterations is its tail") {
    // The gaps lie between kernels shorter than 50 µs, as a launch loop's do, and are under
    // 100 µs; the run of own code they end (from the last launch's return) is not.
    const auto findings = test::findingsOf(loop(6, 200).build());
    const Finding* f = test::findingById(findings, "host-busy");
    REQUIRE(f != nullptr);
    CHECK(f->count == 2);
    CHECK(f->time_ns == Approx(static_cast<double>(150 * kUs)).margin(10 * kUs));
  }
  SECTION("82 µs of own code after three kernels: per-launch overhead, host-launch-bound's") {
    const auto findings = test::findingsOf(loop(3, 90).build());
    CHECK(test::findingById(findings, "host-busy") == nullptr);
  }
}

}  // namespace cuoverlap

namespace cuoverlap {

TEST_CASE("host-busy: host work that held back launches fires though the device barely idled") {
  // Two iterations of three 20 µs kernels launched 60 µs apart (each gap a launch loop's, no
  // stretch of the finding) and a synchronize, the next iteration at once: the device never idles
  // for the host's own code by the gap rules, but the fix (the host work after the launches)
  // runs each iteration's kernels back to back, as in the test above: about 105 µs of 304.
  const auto build = [](bool second_thread) {
    TraceBuilder b;
    if (second_thread) {
      b.launch(14, 0.5, 0.8, 1, 3).grid_blocks = 4;
      b.trace().runtime_calls.back().tid = 2;
    }
    for (int i = 0; i < 2; ++i) {
      const double t = 155.0 * i;
      b.launch(13, t + 1, t + 3, t + 5, t + 25).grid_blocks = 1;
      b.launch(13, t + 63, t + 65, t + 67, t + 87).grid_blocks = 2;
      b.launch(13, t + 125, t + 127, t + 129, t + 149).grid_blocks = 3;
      b.call("cudaStreamSynchronize_v3020", t + 128, t + 150);
    }
    return b;
  };
  SECTION("one thread makes every launch: the finding fires with the what-if's saving") {
    const auto findings = test::findingsOf(build(false).build());
    const Finding* f = test::findingById(findings, "host-busy");
    REQUIRE(f != nullptr);
    CHECK(fixSavingNs(*f) == Approx(static_cast<double>(105 * kUs)).margin(10 * kUs));
  }
  SECTION("another thread launches too: its work would share the device, no finding") {
    const auto findings = test::findingsOf(build(true).build());
    CHECK(test::findingById(findings, "host-busy") == nullptr);
  }
}

}  // namespace cuoverlap
