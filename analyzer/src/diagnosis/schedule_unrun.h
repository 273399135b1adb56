// Process-wide counts of what-if schedules gone wrong, for tests and debugging (not reported per
// finding). unrunSchedules: ScheduleModel::span (schedule_estimate.h) left some op unrun (a cycle
// of orders the model should never build: every edge points forward in issue order) and answered
// the recorded span, "no change"; the what-if that hit it claims no saving.
#pragma once

#include <cstdint>

namespace cuoverlap::diagnosis {

std::uint64_t unrunSchedules();

// With checkScheduleEdges(true) (off by default; process-wide, for tests and debugging): how many
// what-if schedules broke one of their own edges, an op or call beginning before an edge into it
// allowed (an op that ended twice once let a call return before what it waited for). Should stay 0.
void checkScheduleEdges(bool on);
std::uint64_t brokenEdgeSchedules();

// checkScheduleEdges on for its lifetime, off after.
class ScheduleEdgeCheck {
 public:
  ScheduleEdgeCheck() { checkScheduleEdges(true); }
  ~ScheduleEdgeCheck() { checkScheduleEdges(false); }
  ScheduleEdgeCheck(const ScheduleEdgeCheck&) = delete;
  ScheduleEdgeCheck& operator=(const ScheduleEdgeCheck&) = delete;
};

}  // namespace cuoverlap::diagnosis
