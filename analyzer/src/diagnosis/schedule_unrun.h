// How often a what-if schedule could not be computed: ScheduleModel::span (schedule_estimate.h)
// left some op unrun (a cycle of orders the model should never build: every edge points forward
// in issue order) and answered the recorded span, "no change". Not reported per finding: the
// what-if that hit it claims no saving. A process-wide count, for tests and debugging.
#pragma once

#include <cstdint>

namespace cuoverlap::diagnosis {

std::uint64_t unrunSchedules();

// With checkScheduleEdges(true) (off by default; process-wide, for tests and debugging): how many
// what-if schedules broke one of their own edges, an op or call beginning before an edge into it
// allowed (an op that ended twice once let a call return before what it waited for). Should stay 0.
void checkScheduleEdges(bool on);
std::uint64_t brokenEdgeSchedules();

}  // namespace cuoverlap::diagnosis
