// Idle gaps: each cause on a minimal trace, the threshold, totals and the largest-gaps list.
#include <catch2/catch.hpp>

#include "cuoverlap/analysis.h"
#include "cuoverlap/diagnosis.h"
#include "cuoverlap/metrics.h"
#include "trace_builder.h"

namespace cuoverlap {
namespace {

using test::TraceBuilder;

GapAnalysis gapsOf(TraceBuilder& builder, Ns threshold = 10'000, Scope scope = {}) {
  const Trace trace = builder.build();
  return analyzeGaps(trace, scope, 0, threshold);
}

GapCause onlyCause(const GapAnalysis& gaps) {
  REQUIRE(gaps.count == 1);
  REQUIRE(gaps.largest.size() == 1);
  return gaps.largest[0].cause;
}

TEST_CASE("a launch that returns after the device went idle is host-launch") {
  TraceBuilder b;
  b.launch(13, 0, 5, 10, 100);
  b.launch(13, 110, 125, 130, 200);  // call begins 10 µs after the gap began
  const GapAnalysis gaps = gapsOf(b);
  CHECK(onlyCause(gaps) == GapCause::kHostLaunch);
  CHECK(gaps.time_ns == 30'000);
  CHECK(gaps.largest[0].start == 100'000);
  CHECK(gaps.largest[0].end == 130'000);
  REQUIRE(gaps.largest[0].call);
  CHECK(b.trace().runtime_calls[*gaps.largest[0].call].start == 110'000);
}

TEST_CASE("a launch that straddles the start of the gap is still host-launch") {
  TraceBuilder b;
  b.launch(13, 0, 5, 10, 100);
  b.launch(13, 95, 125, 130, 200);  // began before the gap, returned inside it
  CHECK(onlyCause(gapsOf(b)) == GapCause::kHostLaunch);
}

TEST_CASE("an op launched long before the gap but waiting is a dependency") {
  TraceBuilder b;
  b.launch(13, 0, 5, 10, 100);
  b.launch(14, 6, 8, 150, 200);  // launched at 8 µs, started at 150 µs
  CHECK(onlyCause(gapsOf(b)) == GapCause::kDependency);
}

TEST_CASE("a synchronize in progress during the gap that returned before the launch is sync-wait") {
  TraceBuilder b;
  b.launch(13, 0, 5, 10, 100);
  b.call("cudaStreamSynchronize_v3020", 6, 118);  // returned 18 µs into the gap
  b.launch(13, 120, 125, 130, 200);
  const GapAnalysis gaps = gapsOf(b);
  CHECK(onlyCause(gaps) == GapCause::kSyncWait);
  REQUIRE(gaps.largest[0].call);
  CHECK(b.trace().runtime_calls[*gaps.largest[0].call].start == 6'000);
  // 18 µs blocked, 2 µs in no call, 5 µs launching, 5 µs until the kernel started.
  const std::vector<GapCausePart>& parts = gaps.largest[0].causes;
  REQUIRE(parts.size() == 3);
  CHECK(parts[0].cause == GapCause::kSyncWait);
  CHECK(parts[0].ns == 18'000);
  CHECK(parts[1].cause == GapCause::kHostLaunch);
  CHECK(parts[1].ns == 10'000);
  CHECK(parts[2].cause == GapCause::kHostBusy);
  CHECK(parts[2].ns == 2'000);
}

TEST_CASE("CPU work after a synchronize returned is host-busy, not sync-wait") {
  // scan_run's shape: the synchronize returns 4 µs after the device drained, then the host
  // allocates a std::vector for 37 ms with no CUDA call before the next copy.
  TraceBuilder b;
  b.launch(13, 0, 5, 10, 100);
  b.call("cudaEventSynchronize_v3020", 40, 104);
  b.copyCall("cudaMemcpy_v3020", 13, 37'100, 37'150, 37'140, 37'200, CopyKind::kDtoH);
  const GapAnalysis gaps = gapsOf(b);
  CHECK(onlyCause(gaps) == GapCause::kHostBusy);
  CHECK_FALSE(gaps.largest[0].call);  // host-busy names no call
  Ns sum = 0;
  for (const GapCausePart& part : gaps.largest[0].causes) sum += part.ns;
  CHECK(sum == gaps.largest[0].duration());
  REQUIRE(gaps.largest[0].causes.size() == 3);
  CHECK(gaps.largest[0].causes[0].ns == 36'996'000);  // 104 µs .. 37 100 µs
  CHECK(gaps.largest[0].causes[1].cause == GapCause::kHostLaunch);  // 37 100 .. 37 140
  CHECK(gaps.largest[0].causes[2].cause == GapCause::kSyncWait);    // 100 .. 104
  CHECK(gaps.largest[0].causes[2].ns == 4'000);
}

TEST_CASE("a synchronize that returns after the next launch began is not the cause") {
  TraceBuilder b;
  b.launch(13, 0, 5, 10, 100);
  b.call("cudaStreamSynchronize_v3020", 6, 140);  // another thread launched meanwhile
  b.launch(14, 110, 115, 130, 200);
  CHECK(onlyCause(gapsOf(b)) == GapCause::kHostLaunch);
}

TEST_CASE("cudaMalloc during the gap is allocation; each call counts for its own time") {
  TraceBuilder b;
  b.launch(13, 0, 5, 10, 100);
  b.call("cudaMalloc_v3020", 90, 125);
  b.launch(13, 126, 128, 130, 200);
  CHECK(onlyCause(gapsOf(b)) == GapCause::kAllocation);

  TraceBuilder both;
  both.launch(13, 0, 5, 10, 100);
  both.call("cudaDeviceSynchronize_v3020", 6, 101);
  both.call("cudaFree_v3020", 101, 125);
  both.launch(13, 126, 128, 130, 200);
  const GapAnalysis gaps = gapsOf(both);
  CHECK(onlyCause(gaps) == GapCause::kAllocation);  // 24 µs freeing beats 1 µs waiting
  REQUIRE(gaps.largest[0].causes.size() == 4);
  CHECK(gaps.largest[0].causes[0].ns == 24'000);
  CHECK(gaps.largest[0].causes[1].cause == GapCause::kHostLaunch);  // 126 .. 130
  CHECK(gaps.largest[0].causes[2].cause == GapCause::kSyncWait);    // 100 .. 101
  CHECK(gaps.largest[0].causes[3].cause == GapCause::kHostBusy);    // 125 .. 126
}

TEST_CASE("a pageable copy after the gap is pageable-staging while its call runs") {
  TraceBuilder b;
  b.launch(13, 0, 5, 10, 100);
  b.copyCall("cudaMemcpyAsync_v3020", 13, 110, 160, 130, 150, CopyKind::kHtoD, MemKind::kPageable);
  CHECK(onlyCause(gapsOf(b)) == GapCause::kPageableStaging);

  // The same copy after 60 µs of CPU work: the gap is host-busy, staging only its 20 µs.
  TraceBuilder late;
  late.launch(13, 0, 5, 10, 100);
  late.copyCall("cudaMemcpyAsync_v3020", 13, 160, 200, 180, 220, CopyKind::kHtoD,
                MemKind::kPageable);
  const GapAnalysis gaps = gapsOf(late);
  CHECK(onlyCause(gaps) == GapCause::kHostBusy);
  REQUIRE(gaps.largest[0].causes.size() == 2);
  CHECK(gaps.largest[0].causes[1].cause == GapCause::kPageableStaging);
  CHECK(gaps.largest[0].causes[1].ns == 20'000);
}

TEST_CASE("without runtime data the cause is unknown") {
  TraceBuilder b;
  b.kernel(13, 10, 100);
  b.kernel(13, 130, 200);
  CHECK(onlyCause(gapsOf(b)) == GapCause::kUnknown);
}

TEST_CASE("gaps below the threshold are not counted but still count as idle") {
  TraceBuilder b;
  b.kernel(13, 1, 100);
  b.kernel(13, 105, 200);  // 5 µs gap: below 10 µs
  b.kernel(13, 220, 300);  // 20 µs gap
  const GapAnalysis gaps = gapsOf(b);
  REQUIRE(gaps.count == 1);
  CHECK(gaps.threshold_ns == 10'000);
  CHECK(gaps.time_ns == 20'000);
  REQUIRE(gaps.totals.size() == 1);
  CHECK(gaps.totals[0].share_of_idle == Approx(20.0 / 25.0));
  CHECK(gapsOf(b, 1).count == 2);
}

TEST_CASE("ops overlapping on other streams close a gap") {
  TraceBuilder b;
  b.kernel(13, 1, 100);
  b.kernel(14, 90, 250);
  b.kernel(13, 220, 300);
  CHECK(gapsOf(b, 1).count == 0);
}

TEST_CASE("the previous op of a gap is the one that ended last, not the last one to start") {
  TraceBuilder b;
  b.kernel(13, 1, 300);
  b.kernel(14, 10, 20);
  b.kernel(13, 400, 500);
  const Trace trace = b.build();
  const GapAnalysis gaps = analyzeGaps(trace, {}, 0, 10'000);
  REQUIRE(gaps.largest.size() == 1);
  REQUIRE(gaps.largest[0].prev_op);
  CHECK(trace.ops[*gaps.largest[0].prev_op].end == 300'000);
  CHECK(trace.ops[*gaps.largest[0].next_op].start == 400'000);
}

TEST_CASE("totals per cause add up and give the share of all idle time") {
  TraceBuilder b;
  b.launch(13, 0, 5, 10, 100);
  b.launch(13, 110, 115, 120, 200);            // 10 µs host-busy + 10 µs host-launch
  b.launch(13, 116, 118, 240, 300);            // dependency, 40 µs
  b.launch(13, 301, 302, 305, 400);            // 5 µs, below threshold
  const GapAnalysis gaps = gapsOf(b);
  CHECK(gaps.count == 2);
  CHECK(gaps.time_ns == 60'000);
  REQUIRE(gaps.totals.size() == 3);
  CHECK(gaps.totals[0].cause == GapCause::kDependency);  // the worst first
  CHECK(gaps.totals[0].time_ns == 40'000);
  CHECK(gaps.totals[0].share_of_idle == Approx(40.0 / 65.0));
  CHECK(gaps.totals[1].cause == GapCause::kHostLaunch);  // tie with host-busy: enum order
  CHECK(gaps.totals[1].count == 1);
  CHECK(gaps.totals[1].time_ns == 10'000);
  CHECK(gaps.totals[2].cause == GapCause::kHostBusy);
  Ns parts = 0;
  for (const GapCauseTotal& total : gaps.totals) parts += total.time_ns;
  CHECK(parts == gaps.time_ns);
}

TEST_CASE("largest gaps keeps the ten longest, in time order") {
  TraceBuilder b;
  double t = 1;
  for (int i = 0; i < 13; ++i) {
    b.kernel(13, t, t + 10);
    t += 10 + 20 + i;  // gap i lasts 20 + i µs: the first three are the shortest
  }
  const GapAnalysis gaps = gapsOf(b);
  CHECK(gaps.count == 12);
  REQUIRE(gaps.largest.size() == kLargestGaps);
  CHECK(gaps.largest.front().duration() == 22'000);
  CHECK(gaps.largest.back().duration() == 31'000);
  for (std::size_t i = 1; i < gaps.largest.size(); ++i) {
    CHECK(gaps.largest[i - 1].start < gaps.largest[i].start);
  }
}

TEST_CASE("the window clips the span: gaps outside it are not reported") {
  TraceBuilder b;
  b.kernel(13, 1, 100);
  b.kernel(13, 200, 300);
  b.kernel(13, 350, 400);
  Scope scope;
  scope.window_start = TraceBuilder::ns(250);
  scope.window_end = TraceBuilder::ns(1000);
  const GapAnalysis gaps = gapsOf(b, 10'000, scope);
  REQUIRE(gaps.count == 1);
  CHECK(gaps.largest[0].start == 300'000);
}

TEST_CASE("a device without ops has no gaps") {
  TraceBuilder b;
  const GapAnalysis gaps = gapsOf(b);
  CHECK(gaps.count == 0);
  CHECK(gaps.totals.empty());
}

// Ops are rows with start > 0 and end >= start (docs/metrics.md); an op with start 0 (an
// incomplete record) must not stretch the gaps' span below the metrics' first start.
TEST_CASE("ops with start 0 count for neither gaps nor metrics") {
  for (const double zero_end_us : {0.0, 50.0}) {
    INFO("op from 0 to " << zero_end_us << " us");
    TraceBuilder b;
    b.kernel(13, 0, zero_end_us);
    b.launch(13, 90, 95, 100, 200);
    b.launch(13, 250, 295, 300, 400);
    const Trace trace = b.build();
    const DeviceMetrics metrics = computeDeviceMetrics(trace, Scope{}, 0);
    const GapAnalysis gaps = analyzeGaps(trace, Scope{}, 0, 10'000);
    CHECK(metrics.first_start == 100'000);
    CHECK(metrics.idle_ns == 100'000);
    CHECK(gaps.count == 1);
    CHECK(gaps.time_ns == metrics.idle_ns);
    REQUIRE(gaps.largest.size() == 1);
    CHECK(gaps.largest[0].start == 200'000);
    CHECK(gaps.largest[0].end == 300'000);
  }
}

TEST_CASE("the findings skip ops with start 0 as the metrics do") {
  // Alone, the start-0 copy would make the kernels' stream copy and compute: single-stream.
  TraceBuilder b;
  b.copy(13, 0, 50, CopyKind::kHtoD);
  b.launch(13, 90, 95, 100, 200);
  b.launch(13, 199, 295, 300, 400);  // launching through the gap: no host-busy finding either
  const Trace trace = b.build();
  AnalysisOptions options;
  const TraceReport report = analyzeTrace(trace, options);
  CHECK(report.findings.empty());
}

}  // namespace
}  // namespace cuoverlap
