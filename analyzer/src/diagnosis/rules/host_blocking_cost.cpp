// The cost of a host-blocking call: how much sooner the next op could have started without it.
//
// A call [s, r) (clipped to the device's span) blocked the host. While it ran, the device was busy
// for `lead` (work it could have been fed more work during) and then, from the drain d (the start
// of the idle interval in which the call returned, never before s), idle for `drain` = r - d.
// Without the call the host would have gone on at s: the next op (the first to start at or after
// the call returned, at n) could have started at most lead + drain sooner, and no sooner than the
// device's idle time allowed. So the charge is the device idle time from d (or from where an
// earlier call's charge ended) to n, within the idle interval the call returned into, capped at
// lead + drain. A call that returned while the device was still busy with other work charges
// nothing: the idle time after that busy stretch began after the call had returned, so the call
// cannot have caused it (a synchronous copy's own op finishing after its call returned is the
// call's, not other work).
// CPU work after the call returned is never charged beyond that cap: it would still have to run.
// Calls count only while work was in flight (lead >= 1 µs, or a synchronous copy's or memset's own
// op inside the call, however short) and when GPU work follows them. Calls are taken in start
// order and a stretch of idle time is charged to the first call only, so blocking-sync-call,
// implicit-sync-call, sync-memcpy and sync-memset never charge the same time.
#include "diagnosis/rules/host_blocking_cost.h"

#include <algorithm>
#include <optional>

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

// The end of a synchronous copy's or memset's own op where it began inside the call [call start,
// `r`), found among the next few ops by correlation; none for other calls.
std::optional<Ns> ownOpEnd(const DeviceView& view, std::size_t index, Ns r) {
  const ApiKind kind = view.callKind(index);
  if (kind != ApiKind::kMemcpySync && kind != ApiKind::kMemsetSync) return std::nullopt;
  const RuntimeCall& call = view.call(index);
  const auto first = view.firstOpStartingAtOrAfter(call.start);
  constexpr std::size_t kLookahead = 64;  // its op starts inside the call, among the next few
  for (std::size_t pos = first ? *first : view.ops().size(), k = 0;
       pos < view.ops().size() && k < kLookahead; ++pos, ++k) {
    const ScopedOp scoped = view.ops()[pos];
    if (scoped.start >= r) break;
    const GpuOp& op = view.op(scoped);
    if (op.correlation_id == call.correlation_id && op.pid == call.pid) return scoped.end;
  }
  return std::nullopt;
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
    // A synchronous copy's or memset's own op is work the call waited for however short it ran
    // (a 4 KiB copy runs 0.9-1.1 µs: lab c7 g005009's run of 18 cudaMemcpy calls was charged in
    // the windows whose copies ran 1.0 µs or longer and in no other).
    const std::optional<Ns> own_end = ownOpEnd(view, index, r);
    if ((lead < kMinimumInFlightNs && !own_end) || !next) continue;
    HostBlockingCharge charge;
    charge.call = index;
    charge.lead = lead;
    const Ns done = own_end ? std::max(r, *own_end) : r;  // a pageable HtoD's last chunk ends after it
    const Ns drain_start = std::max(s, view.idleSince(r));
    charge.drain = r - drain_start;
    const Ns next_start = view.ops()[*next].start;
    Interval idle = idleAtOrAfter(view, std::max(drain_start, charged_until));
    // Only the idle interval the call returned into: a call that returned while the device was
    // still busy (another stream's work) did not leave it idle, and an idle stretch that began
    // after it returned is the host's doing after the call, not the call's.
    if (idle.start > done) idle = {r, r};
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
