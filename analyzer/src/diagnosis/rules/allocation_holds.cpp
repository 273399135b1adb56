// Calls held by other threads' allocations and frees (allocation_holds.h).
#include "diagnosis/rules/allocation_holds.h"

#include <limits>
#include <unordered_map>

#include "diagnosis/schedule_turns.h"

namespace cuoverlap::diagnosis {
namespace {

// `removed` and `earlier` with the time `given` back as well (barriersGivenBack, hostTimeGivenBack).
void giveBack(const DeviceView& view, const HostTimeline& host, const std::vector<HostTimeGiven>& given,
              std::vector<CallChange>& removed, std::vector<Ns>& earlier) {
  if (given.empty()) return;
  barriersGivenBack(view, given, host, removed);
  const std::vector<Ns> back = hostTimeGivenBack(view, given, host);
  for (std::size_t p = 0; p < earlier.size() && p < back.size(); ++p) earlier[p] += back[p];
}

}  // namespace

std::vector<HeldCall> callsHeldBy(const DeviceView& view, const Holds& holds) {
  if (holds.empty()) return {};
  std::unordered_map<std::size_t, std::size_t> position_of;  // launch call -> op position
  for (std::size_t p = 0; p < view.ops().size(); ++p) {
    if (const auto call = view.launchCall(view.op(view.ops()[p]))) position_of.emplace(*call, p);
  }
  const std::vector<std::size_t> pageable = pageableCopyCalls(view);
  std::vector<HeldCall> held;
  for (std::size_t call : view.calls()) {
    const auto at = position_of.find(call);
    if (at == position_of.end() || !holdable(view, call, pageable)) continue;
    const RuntimeCall& c = view.call(call);
    HeldCall h{{call, 0, /*in_call=*/true}, at->second, 0};
    holds.forEachHolding(c, [&](const Hold& hold) {
      if (hold.end - c.start > h.given.amount) {
        h.given.amount = hold.end - c.start;
        h.holder = hold.call;
      }
      return false;
    });
    if (h.given.amount > 0) held.push_back(h);
  }
  return held;
}

void heldNoLonger(const DeviceView& view, const HostTimeline& host, const ScheduleModel& model,
                  const std::vector<OrderEdge>& waits, const std::vector<HeldCall>& held,
                  std::vector<CallChange>& removed, std::vector<Ns>& earlier) {
  if (held.empty()) return;
  std::vector<HostTimeGiven> given;
  for (const HeldCall& h : held) given.push_back(h.given);
  std::vector<CallChange> all_removed = removed;
  std::vector<Ns> all_earlier = earlier;
  giveBack(view, host, given, all_removed, all_earlier);
  ScheduledHost times;
  spanWithTurns(model, HostTurns{}, waits, all_earlier, {}, all_removed, &times);
  given.clear();
  for (const HeldCall& h : held) {
    const auto holder = times.call.find(h.holder);
    const Ns release = times.release[h.position];
    if (holder != times.call.end() && release != std::numeric_limits<Ns>::min()) {
      const Ns begins =
          release + h.given.amount - (times.recorded_release[h.position] - view.call(h.given.call).start);
      if (begins >= holder->second.first && begins < holder->second.second) continue;
    }
    given.push_back(h.given);
  }
  giveBack(view, host, given, removed, earlier);
}

}  // namespace cuoverlap::diagnosis
