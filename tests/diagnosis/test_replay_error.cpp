// The saving less the replay error the fix does not carry (analyzer/src/diagnosis/replay_error.h)
// on hand-built schedules of one trace.
#include <cstdint>
#include <vector>

#include <catch2/catch.hpp>

#include "diagnosis/device_view.h"
#include "diagnosis/replay_error.h"
#include "trace_builder.h"

namespace cuoverlap {
namespace {

using diagnosis::DeviceView;
using diagnosis::ScheduledHost;
using test::TraceBuilder;

// A schedule's host times as far as savingLessReplayError reads them: per op (in µs) its end and
// its binder (-1: its own release).
ScheduledHost schedule(const std::vector<double>& end_us, const std::vector<std::int64_t>& binder) {
  ScheduledHost times;
  for (const double end : end_us) times.node_end.push_back(TraceBuilder::ns(end));
  times.binder = binder;
  return times;
}

TEST_CASE("a what-if claims the replay's lateness only where the after's critical path carries it") {
  // As g000246: a worker's device-filling kernel W (stream 14, 10-210 µs) ran beside main's
  // kernel M (stream 13, 20-120); main waited for M, did 200 µs of host work and launched N
  // (stream 15, 320-420). Recorded span 410 µs. The before's replay queues M behind W (210-310,
  // 190 µs late) and N with it (510-610): 600 µs.
  TraceBuilder b;
  b.kernel(14, 10, 210).grid_blocks = 132 * 8;
  b.kernel(13, 20, 120);
  b.kernel(15, 320, 420);
  const Trace trace = b.build();
  const DeviceView view(trace, Scope{}, 0);
  REQUIRE(view.spanLength() == TraceBuilder::ns(410));
  const Ns before_span = TraceBuilder::ns(600);
  const ScheduledHost before = schedule({210, 310, 610}, {-1, 0, 1});
  // Without the wait (remove-sync) N is released by the host work alone (220-320) and ends the
  // after, off M: 310 µs. The trace itself would save 410 - 310 µs.
  const Ns off_span = TraceBuilder::ns(310);
  const ScheduledHost off_path = schedule({210, 310, 320}, {-1, 0, -1});
  // With 100 µs less host work, N still waits for the late M (410-510): 500 µs.
  const Ns on_span = TraceBuilder::ns(500);
  const ScheduledHost on_path = schedule({210, 310, 510}, {-1, 0, 1});

  // A before no longer than the trace (its times as recorded) has no error to take off.
  const ScheduledHost exact = schedule({210, 120, 420}, {-1, -1, 1});
  CHECK(diagnosis::savingLessReplayError(view, TraceBuilder::ns(410), exact, off_span, off_path) ==
        TraceBuilder::ns(410 - 310));
  // Off the after's path, M's 190 µs are not saved: recorded span + no carried error - after
  // span, not the 290 µs of the plain difference.
  CHECK(diagnosis::savingLessReplayError(view, before_span, before, off_span, off_path) ==
        TraceBuilder::ns(410 + 0 - 310));
  // On it, the after carries M's 190 µs (added at M, none at W or N): the plain difference.
  CHECK(diagnosis::savingLessReplayError(view, before_span, before, on_span, on_path) ==
        TraceBuilder::ns(600 - 500));
}

}  // namespace
}  // namespace cuoverlap
