// The cost of a host-blocking call: how much sooner the next op could have started without it.
//
// A call [s, r) (clipped to the device's span) blocked the host. While it ran, the device was busy
// for `lead` (work it could have been fed more work during) and then, from the drain d (the start
// of the idle interval in which the call returned, never before s), idle for `drain` = r - d.
// Without the call the host would have gone on at s: the next op (the first to start at or after
// the call returned, at n) could have started at most lead + drain sooner, and no sooner than the
// device's idle time allowed. So the charge is the device idle time from d (or from where an
// earlier call's charge ended) to n, within the first idle interval there, capped at lead + drain.
// CPU work after the call returned is never charged beyond that cap: it would still have to run.
// Calls count only while work was in flight (lead >= 1 µs) and when GPU work follows them. Calls
// are taken in start order and a stretch of idle time is charged to the first call only, so
// blocking-sync-call, implicit-sync-call, sync-memcpy and sync-memset never charge the same time.
#include "diagnosis/rules/host_blocking_cost.h"

#include <algorithm>

namespace cuoverlap::diagnosis {
namespace {

bool isChargedKind(ApiKind kind) {
  return isHostBlocking(kind) || kind == ApiKind::kAllocation;
}

// The first idle interval of the view that ends after `time`, clipped to start no earlier.
Interval idleAtOrAfter(const DeviceView& view, Ns time) {
  const auto& idle = view.idle();
  auto it = std::partition_point(idle.begin(), idle.end(),
                                 [&](const Interval& gap) { return gap.end <= time; });
  if (it == idle.end()) return {time, time};
  return {std::max(time, it->start), it->end};
}

}  // namespace

std::vector<HostBlockingCharge> chargeHostBlockingCalls(const DeviceView& view) {
  std::vector<HostBlockingCharge> charges;
  if (view.empty()) return charges;
  Ns charged_until = view.spanStart();
  for (std::size_t index : view.calls()) {
    if (!isChargedKind(view.callKind(index))) continue;
    const RuntimeCall& call = view.call(index);
    const Ns s = std::max(call.start, view.spanStart());
    const Ns r = std::min(call.end, view.spanEnd());
    if (r <= s) continue;
    const Ns lead = (r - s) - view.idleWithin(s, r);
    const auto next = view.firstOpStartingAtOrAfter(call.end);
    if (lead < kMinimumInFlightNs || !next) continue;
    HostBlockingCharge charge;
    charge.call = index;
    charge.lead = lead;
    const Ns drain_start = std::max(s, view.idleSince(r));
    charge.drain = r - drain_start;
    const Ns next_start = view.ops()[*next].start;
    const Interval idle = idleAtOrAfter(view, std::max(drain_start, charged_until));
    const Ns end = std::min({idle.end, next_start, idle.start + charge.lead + charge.drain});
    charge.idle = {idle.start, std::max(idle.start, end)};
    charged_until = std::max(charged_until, next_start);
    charges.push_back(charge);
  }
  // By call index (the reader's start order, so usually already sorted), for chargeOf.
  std::stable_sort(charges.begin(), charges.end(),
                   [](const auto& a, const auto& b) { return a.call < b.call; });
  return charges;
}

const HostBlockingCharge* chargeOf(const std::vector<HostBlockingCharge>& charges,
                                   std::size_t call) {
  auto it = std::lower_bound(charges.begin(), charges.end(), call,
                             [](const HostBlockingCharge& c, std::size_t i) { return c.call < i; });
  return it != charges.end() && it->call == call ? &*it : nullptr;
}

}  // namespace cuoverlap::diagnosis
