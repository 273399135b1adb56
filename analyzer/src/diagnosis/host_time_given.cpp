#include "diagnosis/host_time_given.h"

#include <algorithm>
#include <limits>
#include <map>
#include <unordered_map>
#include <utility>

namespace cuoverlap::diagnosis {
namespace {

// Per thread: (call end, amount), sorted by end.
using GivenByThread = std::map<std::uint32_t, std::vector<std::pair<Ns, Ns>>>;

GivenByThread givenByThread(const DeviceView& view, const std::vector<HostTimeGiven>& given) {
  GivenByThread out;
  for (const HostTimeGiven& g : given) {
    if (g.amount <= 0) continue;
    const RuntimeCall& c = view.call(g.call);
    out[c.tid].push_back({c.end, g.amount});
  }
  for (auto& [tid, list] : out) std::sort(list.begin(), list.end());
  return out;
}

// The amounts of `calls` (sorted by end; `sums` their prefix sums) that returned in (since, until].
Ns givenWithin(const std::vector<std::pair<Ns, Ns>>& calls, const std::vector<Ns>& sums, Ns since,
               Ns until) {
  const auto after = [&](Ns time) {
    const auto it = std::upper_bound(calls.begin(), calls.end(),
                                     std::make_pair(time, std::numeric_limits<Ns>::max()));
    return static_cast<std::size_t>(it - calls.begin());
  };
  const std::size_t from = after(since);
  const std::size_t to = after(until);
  return to > from ? sums[to] - sums[from] : 0;
}

}  // namespace

std::vector<Ns> hostTimeGivenBack(const DeviceView& view, const std::vector<HostTimeGiven>& given,
                                  const HostTimeline& host) {
  const GivenByThread saved = givenByThread(view, given);
  std::map<std::uint32_t, std::vector<Ns>> barrier_ends;
  for (const HostBarrier& barrier : host.barriers) {
    barrier_ends[view.call(barrier.call).tid].push_back(barrier.end);
  }
  for (auto& [tid, ends] : barrier_ends) std::sort(ends.begin(), ends.end());
  std::map<std::uint32_t, std::vector<Ns>> prefix;  // per thread: amounts before each call, summed
  for (const auto& [tid, calls] : saved) {
    std::vector<Ns>& sums = prefix[tid];
    sums.push_back(0);
    for (const auto& [end, amount] : calls) sums.push_back(sums.back() + amount);
  }
  std::unordered_map<std::size_t, Ns> waited;  // call -> what it no longer waits (in_call)
  for (const HostTimeGiven& g : given) {
    if (g.in_call && g.amount > 0) waited[g.call] += g.amount;
  }
  std::vector<Ns> earlier(view.ops().size(), 0);
  std::size_t position = 0;
  for (const ScopedOp& scoped : view.ops()) {
    const std::size_t at = position++;
    const auto launch = view.launchCall(view.op(scoped));
    if (!launch) continue;
    const RuntimeCall& c = view.call(*launch);
    const auto list = saved.find(c.tid);
    if (list == saved.end()) continue;
    Ns since = std::numeric_limits<Ns>::min();
    if (const auto ends = barrier_ends.find(c.tid); ends != barrier_ends.end()) {
      const auto it = std::upper_bound(ends->second.begin(), ends->second.end(), c.start);
      if (it != ends->second.begin()) since = *std::prev(it);
    }
    earlier[at] = givenWithin(list->second, prefix.at(c.tid), since, c.start);
    // An op that started inside its call (the schedule releases it from the call's start) keeps
    // its release; one released when its call returned is released when the call would have.
    const auto own = waited.find(*launch);
    if (own != waited.end() && c.end <= scoped.start) earlier[at] += own->second;
  }
  return earlier;
}

void barriersGivenBack(const DeviceView& view, const std::vector<HostTimeGiven>& given,
                       const HostTimeline& host, std::vector<CallChange>& changed) {
  const GivenByThread saved = givenByThread(view, given);
  std::unordered_map<std::size_t, std::size_t> change_of;  // call -> index in `changed`
  for (std::size_t k = 0; k < changed.size(); ++k) change_of.emplace(changed[k].call, k);
  for (const HostBarrier& barrier : host.barriers) {
    const RuntimeCall& call = view.call(barrier.call);
    const auto list = saved.find(call.tid);
    if (list == saved.end()) continue;
    const Ns since = barrier.previous >= 0
                         ? host.barriers[static_cast<std::size_t>(barrier.previous)].end
                         : std::numeric_limits<Ns>::min();
    // The amounts of calls that returned in (since, call.start]: a binary search and a sum.
    const auto& calls = list->second;
    const auto from = std::upper_bound(calls.begin(), calls.end(),
                                       std::make_pair(since, std::numeric_limits<Ns>::max()));
    const auto to = std::upper_bound(calls.begin(), calls.end(),
                                     std::make_pair(call.start, std::numeric_limits<Ns>::max()));
    Ns sooner = 0;
    for (auto it = from; it < to; ++it) sooner += it->second;
    if (sooner == 0) continue;
    if (const auto existing = change_of.find(barrier.call); existing != change_of.end()) {
      changed[existing->second].earlier = sooner;
    } else {
      changed.push_back({barrier.call, true, barrier.own, sooner});
    }
  }
}

void launchesHeldBeforeSubmitting(const DeviceView& view, const std::vector<HostTimeGiven>& given,
                                  std::vector<Ns>& earlier) {
  std::unordered_map<std::size_t, Ns> held;  // launch call -> what it no longer waits
  for (const HostTimeGiven& g : given) {
    if (g.in_call && g.amount > 0 && view.callKind(g.call) == ApiKind::kLaunch) held[g.call] += g.amount;
  }
  opsHeldInCallReleasedSooner(view, held, earlier);
}

void opsHeldInCallReleasedSooner(const DeviceView& view, const std::unordered_map<std::size_t, Ns>& held,
                                 std::vector<Ns>& earlier) {
  if (held.empty()) return;
  for (std::size_t p = 0; p < view.ops().size() && p < earlier.size(); ++p) {
    const ScopedOp& scoped = view.ops()[p];
    const auto launch = view.launchCall(view.op(scoped));
    if (!launch) continue;
    const auto it = held.find(*launch);
    if (it == held.end()) continue;
    const RuntimeCall& c = view.call(*launch);
    // Started after its call returned: hostTimeGivenBack already gave the hold back.
    if (c.end <= scoped.start || scoped.start < c.start + it->second) continue;
    earlier[p] += it->second;
  }
}

}  // namespace cuoverlap::diagnosis
