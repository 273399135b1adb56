#pragma once
// What a what-if saves, less the part of the replay's own error that the fix does not carry.
//
// A fix's saving is the span of the schedule of the recorded program (the "before") less that of
// the fixed one (the "after"). Where the before runs longer than the trace (its replay error:
// kernels the hardware ran side by side that the replay queues one behind the other), the
// difference counts that error as saved wherever the fix takes the late work off the after's
// critical path. g000246's main thread waits at each step for its kernels, which the replay
// queues behind two workers' device-filling kernels (its first step ends 386 µs late); without
// the wait (remove-sync) or with its host work beside it (overlap-host) the after no longer ends
// on that work, and both claimed the 386 µs on top of the 240 the fixed programs saved. Where the
// after still ends on late work it carries that error too, and the difference is right (g000300,
// g000264: the same queued kernels lie on both schedules' critical paths).
//
// The error the after carries is found on its critical path: from the op that ends it back
// through each node's binder (the predecessor whose end set its ready time, ScheduledHost), the
// sum of the lateness the before's replay added at each of those nodes (a node's lateness against
// the trace less its binder's in the before), counting only lateness added, not time the replay
// made up (a gap of the trace it closes says nothing of the after's error). The saving is then
// at most the recorded span plus that carried error less the after's span. Where the before is
// not longer than the trace, the difference stands.
#include <vector>

#include "diagnosis/device_view.h"
#include "diagnosis/schedule_estimate.h"
#include "diagnosis/schedule_turns.h"

namespace cuoverlap::diagnosis {

// model.span(recorded) less model.span(fixed, earlier, faster, changed), never negative, less the
// replay error that the fixed program's schedule does not carry (above).
Ns savingLessReplayError(const DeviceView& view, const ScheduleModel& model, const std::vector<OrderEdge>& recorded,
                         const std::vector<OrderEdge>& fixed, const std::vector<Ns>& earlier,
                         const std::vector<FasterOp>& faster, const std::vector<CallChange>& changed);

// The same from the two schedules' spans and host times (spanWithTurns); exposed for its tests.
Ns savingLessReplayError(const DeviceView& view, Ns before_span, const ScheduledHost& before, Ns after_span,
                         const ScheduledHost& after);

}  // namespace cuoverlap::diagnosis
