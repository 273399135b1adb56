// The what-if schedule (analyzer/src/diagnosis/schedule_estimate.h) on hand-built traces: how the
// copy engines pick among ready ops of several streams, and that a blocked op holds up no other
// stream.
#include <catch2/catch.hpp>

#include "diagnosis/device_view.h"
#include "diagnosis/schedule_estimate.h"
#include "trace_builder.h"

namespace cuoverlap {
namespace {

using diagnosis::DeviceView;
using diagnosis::OrderEdge;
using diagnosis::ScheduleModel;
using test::TraceBuilder;

// The position in view.ops() of the op that starts at `start_us`.
std::size_t at(const DeviceView& view, double start_us) {
  for (std::size_t p = 0; p < view.ops().size(); ++p) {
    if (view.ops()[p].start == TraceBuilder::ns(start_us)) return p;
  }
  FAIL("no op starts at " << start_us);
  return 0;
}

TEST_CASE("a copy engine keeps serving one stream while its next copy is ready") {
  // Streams 13 (A) and 14 (B) each copy three 100 µs tiles in, issued A0 B0 A1 B1 A2 B2 within
  // 11 µs; a 1000 µs kernel on stream 15 needs A0 and B0. As recorded on an H100
  // (streams_event-dag.sqlite), the engine runs A0 A1 A2 before B0, so the kernel starts when B0
  // ends, 400 µs after the first copy began.
  TraceBuilder b;
  const double a[] = {10, 110, 210}, bb[] = {310, 410, 510};
  for (int t = 0; t < 3; ++t) {
    b.copyCall("cudaMemcpyAsync_v3020", 13, 4 * t, 4 * t + 1, a[t], a[t] + 100, CopyKind::kHtoD);
    b.copyCall("cudaMemcpyAsync_v3020", 14, 4 * t + 2, 4 * t + 3, bb[t], bb[t] + 100, CopyKind::kHtoD);
  }
  b.launch(15, 20, 21, 411, 1411);
  const Trace trace = b.build();
  const DeviceView view(trace, Scope{}, 0);
  const ScheduleModel model(view);
  const std::vector<OrderEdge> inputs = {{at(view, 10), at(view, 411)}, {at(view, 310), at(view, 411)}};
  // No op is released before the span starts (10 µs): A0 10-110, A1, A2, B0 310-410, the kernel
  // 410-1410. First come, first served would have run B0 second and the kernel from 210.
  CHECK(model.span(inputs) == TraceBuilder::ns(1400));
  // Without the inputs' edges the kernel runs from its release (21 µs) to 1021.
  CHECK(model.span({}) == TraceBuilder::ns(1011));
}

TEST_CASE("a copy waiting for a dependency does not hold up another stream's ready copy") {
  // Stream 13's copy waits for a 1000 µs kernel; stream 14's copy, issued after it, is ready at
  // once and runs while the kernel does: span 1000 + 100, not 1000 + 100 + 100.
  TraceBuilder b;
  b.launch(15, 0, 1, 1, 1001);
  b.copyCall("cudaMemcpyAsync_v3020", 13, 2, 3, 1001, 1101, CopyKind::kHtoD);
  b.copyCall("cudaMemcpyAsync_v3020", 14, 4, 5, 5, 105, CopyKind::kHtoD);
  const Trace trace = b.build();
  const DeviceView view(trace, Scope{}, 0);
  const ScheduleModel model(view);
  CHECK(model.span({{at(view, 1), at(view, 1001)}}) == TraceBuilder::ns(1100));
}

TEST_CASE("an edge from an op issued later than its target orders nothing") {
  // The kernel was launched (call at 50 µs) after the copy (call at 0 µs): an edge kernel -> copy
  // cannot be a wait the host set up, and a cycle with stream order must not stall the schedule.
  TraceBuilder b;
  b.copyCall("cudaMemcpyAsync_v3020", 13, 0, 1, 1, 101, CopyKind::kHtoD);
  b.launch(13, 50, 51, 101, 201);
  const Trace trace = b.build();
  const DeviceView view(trace, Scope{}, 0);
  const ScheduleModel model(view);
  CHECK(model.span({{at(view, 101), at(view, 1)}}) == TraceBuilder::ns(200));
}

}  // namespace
}  // namespace cuoverlap
