// The saving less the replay error the fix does not carry (replay_error.h).
#include "diagnosis/replay_error.h"

#include <algorithm>
#include <cstdint>
#include <limits>

namespace cuoverlap::diagnosis {

Ns savingLessReplayError(const DeviceView& view, Ns before_span, const ScheduledHost& before, Ns after_span,
                         const ScheduledHost& after) {
  const Ns saving = std::max<Ns>(0, before_span - after_span);
  const Ns recorded = view.spanLength();
  const std::size_t nodes = before.node_end.size();
  if (before_span <= recorded || nodes == 0 || after.node_end.size() != nodes || before.binder.size() != nodes ||
      after.binder.size() != nodes) {
    return saving;
  }
  const ScopedOps ops = view.ops();
  const std::size_t n = ops.size();
  constexpr Ns kNotRun = std::numeric_limits<Ns>::min();
  const auto lateness = [&](std::size_t v) {
    return before.node_end[v] - (v < n ? ops[v].end : view.call(before.node_call[v - n]).end);
  };
  // The lateness the before's replay added at node v, never less than none.
  const auto added = [&](std::size_t v) -> Ns {
    if (before.node_end[v] == kNotRun) return 0;
    const std::int64_t binder = before.binder[v];
    const bool bound = binder >= 0 && before.node_end[static_cast<std::size_t>(binder)] != kNotRun;
    return std::max<Ns>(0, lateness(v) - (bound ? lateness(static_cast<std::size_t>(binder)) : 0));
  };
  std::size_t last = 0;  // the op that ends the after
  for (std::size_t p = 1; p < n; ++p) {
    if (after.node_end[p] > after.node_end[last]) last = p;
  }
  Ns carried = 0;
  std::int64_t node = static_cast<std::int64_t>(last);
  for (std::size_t steps = 0; node >= 0 && steps <= nodes; ++steps) {  // binders form no cycle
    carried += added(static_cast<std::size_t>(node));
    node = after.binder[static_cast<std::size_t>(node)];
  }
  return std::min(saving, std::max<Ns>(0, recorded + carried - after_span));
}

Ns savingLessReplayError(const DeviceView& view, const ScheduleModel& model, const std::vector<OrderEdge>& recorded,
                         const std::vector<OrderEdge>& fixed, const std::vector<Ns>& earlier,
                         const std::vector<FasterOp>& faster, const std::vector<CallChange>& changed) {
  // The schedules' host times only where the before runs longer than the trace (the rest is the
  // plain difference, and a trace of 10^7 ops would pay for them in every such rule).
  const Ns before_span = spanWithTurns(model, HostTurns{}, recorded, {}, {}, {});
  if (before_span <= view.spanLength()) {
    return std::max<Ns>(0, before_span - spanWithTurns(model, HostTurns{}, fixed, earlier, faster, changed));
  }
  ScheduledHost before;
  ScheduledHost after;
  spanWithTurns(model, HostTurns{}, recorded, {}, {}, {}, &before);
  const Ns after_span = spanWithTurns(model, HostTurns{}, fixed, earlier, faster, changed, &after);
  return savingLessReplayError(view, before_span, before, after_span, after);
}

}  // namespace cuoverlap::diagnosis
