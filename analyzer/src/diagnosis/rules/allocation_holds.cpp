// Calls held by other threads' allocations and frees (allocation_holds.h).
#include "diagnosis/rules/allocation_holds.h"

#include <limits>
#include <map>
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
      if (hold.end - std::max(c.start, hold.start) > h.given.amount) {
        h.given.amount = hold.end - std::max(c.start, hold.start);
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

std::vector<std::uint8_t> forwardHoldCandidates(const DeviceView& view) {
  const std::vector<std::size_t> pageable = pageableCopyCalls(view);
  std::vector<std::uint8_t> candidate(view.ops().size(), 0);
  for (std::size_t p = 0; p < view.ops().size(); ++p) {
    const auto call = view.launchCall(view.op(view.ops()[p]));
    if (call && holdable(view, *call, pageable)) candidate[p] = 1;
  }
  return candidate;
}

bool addForwardHolds(const DeviceView& view, const HostTimeline& host, const HostTurns& turns,
                     const ScheduledHost& times, std::vector<std::uint8_t>& candidate,
                     std::vector<CallChange>& changed, std::vector<Ns>& earlier) {
  struct Holder {
    Ns begin;  // in the schedule
    Ns end;
    std::uint32_t pid;
    std::uint64_t thread;
    Ns recorded_start;
    Ns recorded_end;
  };
  std::vector<Holder> holders;
  for (const HostBarrier& barrier : host.barriers) {
    if (view.callKind(barrier.call) != ApiKind::kAllocation) continue;
    const auto at = times.call.find(barrier.call);
    if (at == times.call.end()) continue;
    const Ns took = at->second.second - at->second.first;
    const RuntimeCall& c = view.call(barrier.call);
    // Only a hold the what-if makes: the call waits there for device work it did not wait for as
    // recorded (kHoldingCallNs longer; 10-200 µs move the same cases).
    if (took < kHoldingCallNs || took - (c.end - c.start) < kHoldingCallNs) continue;
    holders.push_back({at->second.first, at->second.second, c.pid, threadKey(c), c.start, c.end});
  }
  if (holders.empty()) return false;
  // Per (holder, held thread): the thread's first call the schedule begins inside the holder; its
  // later calls move with it (one the move puts inside another holder waits for the next round).
  std::map<std::pair<std::size_t, std::uint64_t>, std::pair<Ns, std::size_t>> first;
  const std::size_t n = std::min(times.release.size(), candidate.size());
  for (std::size_t p = 0; p < n; ++p) {
    if (!candidate[p] || times.release[p] == std::numeric_limits<Ns>::min()) continue;
    const RuntimeCall& c = view.call(*view.launchCall(view.op(view.ops()[p])));
    const Ns begins = times.release[p] + (c.start - times.recorded_release[p]);
    for (std::size_t k = 0; k < holders.size(); ++k) {
      const Holder& h = holders[k];
      if (h.pid != c.pid || h.thread == turns.op_thread[p] || begins < h.begin || begins >= h.end) continue;
      const auto [it, added] = first.try_emplace({k, turns.op_thread[p]}, begins, p);
      if (!added && begins < it->second.first) it->second = {begins, p};
    }
  }
  // A thread that began a call inside the holder as recorded took what that hold gave it (held or
  // not: lab g000089, g000295): its recorded calls carry it.
  for (std::size_t p = 0; p < n && !first.empty(); ++p) {
    const auto call = view.launchCall(view.op(view.ops()[p]));
    if (!call) continue;
    const RuntimeCall& c = view.call(*call);
    for (std::size_t k = 0; k < holders.size(); ++k) {
      const Holder& h = holders[k];
      if (h.pid == c.pid && c.start >= h.recorded_start && c.start < h.recorded_end) {
        first.erase({k, turns.op_thread[p]});
      }
    }
  }
  std::vector<Ns> delay(view.ops().size(), 0);
  bool any = false;
  for (const auto& [key, at] : first) {
    const std::size_t p = at.second;
    const RuntimeCall& c = view.call(*view.launchCall(view.op(view.ops()[p])));
    // It returns as its holder does.
    const Ns held = holders[key.first].end - (times.release[p] + (c.end - times.recorded_release[p]));
    if (held <= delay[p]) continue;
    delay[p] = held;
    candidate[p] = 0;  // one hold per call
    any = true;
  }
  if (!any) return false;
  addTurnDelays(host, turns, delay, changed, earlier);
  return true;
}

}  // namespace cuoverlap::diagnosis
