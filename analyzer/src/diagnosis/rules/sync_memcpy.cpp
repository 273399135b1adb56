// sync-memcpy: copies issued with a synchronous API (cudaMemcpy, cudaMemcpy2D, cuMemcpyHtoD, ...;
// any copy API without "Async") that have GPU work before and after them. The host blocks until
// the copy (and all earlier work of the legacy stream) is done, so it cannot queue further work.
// Cost: what the fix (lab transform async-copy: cudaMemcpyAsync on the stream of the op that uses
// the copy, a synchronize only where the host reads the result) saves in the what-if schedule
// with the host (schedule_estimate.h; event waits kept): each synchronous copy moves to the
// stream of the op that uses it (an HtoD or DtoD copy to its consumer, the op its thread launched
// next after its run of copies; a DtoH copy to its producer, the op launched before it), where
// that stream still orders it. Both schedules have the legacy stream's implicit barriers
// (legacy_barriers.h) of the streams their ops run on: a cudaMemcpy on the legacy stream waited
// for every blocking stream's earlier work and held back their later work, which its
// asynchronous copy on a created stream no longer does (in the lab a thread's cudaMemcpy of 4 KiB
// behind two other threads' blocking streams: 16 ms of a 53 ms program). An HtoD copy's call no
// longer waits and returns after an asynchronous call's time; a DtoH copy's still waits (the host
// copies data back to read it, which a trace cannot show it does not); a synchronize of the
// stream a copy moved to waits for it. While a copy's blocking call waited on the legacy stream
// the driver held the context: other threads' calls that overlapped it and took longer than
// their kind alone get that time back, as in legacy-default-stream's fix (legacy_threads.h; in
// the lab 256 pageable copies of another thread took 120 us each instead of 8 beside the
// cudaMemcpy calls). A run of small cudaMemcpy calls pays a host round trip per piece, which the
// device idles through (in the lab, 6.5 ms of a 9.7 ms program). Without runtime data, or when
// the schedule has no host, as a host-blocking call (synchronous_transfer.h,
// host_blocking_cost.cpp): at most its lead plus the drain it caused. Where (ledger): those
// charged idle stretches; the ledger places a what-if saving larger than them in idle time no
// earlier finding holds (cost_ledger.h), so a copy that returned into a long gap of the host's
// own work (a JIT compile) does not hold that gap.
// Needs: the launch call, or the collector's async flag.
#include <fmt/format.h>

#include "diagnosis/rules/rules.h"
#include "diagnosis/rules/synchronous_transfer.h"
#include "diagnosis/host_time_given.h"
#include "diagnosis/legacy_barriers.h"
#include "diagnosis/rules/legacy_threads.h"
#include "diagnosis/pinned_rate.h"
#include "diagnosis/schedule_estimate.h"
#include "diagnosis/stream_waits.h"
#include "diagnosis/thread_launches.h"

#include <algorithm>
#include <optional>
#include <unordered_map>
#include <utility>

namespace cuoverlap::diagnosis {
namespace {

enum class Moved : std::uint8_t { kNo, kToConsumer, kToProducer };

// Per position the stream an op runs on in the fix: its own, except that a copy moved to its
// consumer runs on the stream of the first op its thread launched after it that is not itself
// moved, and one moved to its producer (a DtoH copy) on that of the last one before it.
std::vector<std::uint64_t> fixLanes(const DeviceView& view, const std::vector<Moved>& moved) {
  std::vector<std::uint64_t> own;
  for (const ScopedOp& scoped : view.ops()) own.push_back(DeviceView::streamKey(view.op(scoped)));
  std::vector<std::uint64_t> lane = own;
  const ThreadLaunches launches(view);
  for (const std::vector<std::size_t>& list : launches.threads()) {
    std::optional<std::uint64_t> producer;  // the stream of the last unmoved op so far
    for (const std::size_t p : list) {
      if (moved[p] == Moved::kNo) producer = own[p];
      if (moved[p] == Moved::kToProducer && producer) lane[p] = *producer;
    }
    std::optional<std::uint64_t> consumer;  // walking back: the stream of the next unmoved op
    for (auto it = list.rbegin(); it != list.rend(); ++it) {
      if (moved[*it] == Moved::kNo) consumer = own[*it];
      if (moved[*it] == Moved::kToConsumer && consumer) lane[*it] = *consumer;
    }
  }
  return lane;
}

// The host timeline of the fix: a stream synchronize waits for the last op launched before it on
// the lane of the stream it synchronized (a copy moved there, which it now waits for; or none
// where the copy it waited for moved away). The synchronized stream is that of the op the call
// waited for in the trace; a call that waited for none keeps waiting for none.
HostTimeline fixedTimeline(const DeviceView& view, const HostTimeline& host,
                           const std::vector<std::uint64_t>& lane) {
  std::unordered_map<std::uint64_t, std::vector<std::pair<Ns, std::size_t>>> on_lane;
  for (std::size_t p = 0; p < lane.size(); ++p) {
    const auto call = view.launchCall(view.op(view.ops()[p]));
    on_lane[lane[p]].emplace_back(call ? view.call(*call).start : view.ops()[p].start, p);
  }
  for (auto& [key, list] : on_lane) std::sort(list.begin(), list.end());
  HostTimeline fixed = host;
  for (HostBarrier& barrier : fixed.barriers) {
    if (view.callKind(barrier.call) != ApiKind::kStreamSync || barrier.waited_for.size() != 1) continue;
    const auto& list = on_lane[DeviceView::streamKey(view.op(view.ops()[barrier.waited_for.front()]))];
    const auto after = std::lower_bound(list.begin(), list.end(),
                                        std::make_pair(view.call(barrier.call).start, std::size_t{0}));
    barrier.waited_for.clear();
    if (after != list.begin()) barrier.waited_for.push_back(std::prev(after)->second);
  }
  return fixed;
}

// Per position how the fix moves the op: every synchronous copy, a DtoH one to its producer's
// stream, others to their consumer's.
std::vector<Moved> movedCopies(const DeviceView& view) {
  std::vector<Moved> moved(view.ops().size(), Moved::kNo);
  for (std::size_t p = 0; p < moved.size(); ++p) {
    const GpuOp& op = view.op(view.ops()[p]);
    const auto call = view.launchCall(op);
    if (!call || view.callKind(*call) != ApiKind::kMemcpySync) continue;
    moved[p] = engineOf(op) == Engine::kD2H ? Moved::kToProducer : Moved::kToConsumer;
  }
  return moved;
}

// The copies of `moved` that leave the legacy stream in the fix (their lane is not its stream),
// as legacy ops: their calls held the context while they waited there, and no longer do.
std::vector<LegacyOp> copiesLeavingLegacy(const DeviceView& view, const std::vector<Moved>& moved,
                                          const std::vector<std::uint64_t>& lane) {
  std::optional<std::uint64_t> legacy;
  for (const ScopedOp& scoped : view.ops()) {
    if (view.onLegacyDefaultStream(view.op(scoped))) legacy = DeviceView::streamKey(view.op(scoped));
  }
  std::vector<LegacyOp> copies;
  for (std::size_t p = 0; p < moved.size(); ++p) {
    if (moved[p] == Moved::kNo || lane[p] == legacy) continue;
    const RuntimeCall& c = view.call(*view.launchCall(view.op(view.ops()[p])));
    copies.push_back({p, (static_cast<std::uint64_t>(c.pid) << 32) | c.tid, c.start, true});
  }
  return copies;
}

// The blocking calls the fix changes: an HtoD or DtoD copy that waited for its copy no longer
// waits and returns after an asynchronous call's time; staged calls (pageable copies) that took
// turns with another thread's copy leaving the legacy stream keep their own time
// (legacy_threads.h).
std::vector<CallChange> changedCalls(const DeviceView& view, const HostTimeline& host,
                                     const std::vector<Moved>& moved,
                                     const std::vector<LegacyOp>& leaving) {
  std::vector<CallChange> changed;
  for (const HostBarrier& barrier : host.barriers) {
    if (view.callKind(barrier.call) != ApiKind::kMemcpySync || barrier.waited_for.size() != 1) continue;
    if (moved[barrier.waited_for.front()] != Moved::kToConsumer) continue;
    changed.push_back({barrier.call, false, std::min(barrier.own, kAsyncCopyCallNs)});
  }
  std::vector<std::size_t> held;
  for (const LegacyOp& x : leaving) held.push_back(*view.launchCall(view.op(view.ops()[x.position])));
  std::sort(held.begin(), held.end());
  for (const CallChange& c : stagedCallsBehind(view, host, held)) {
    const auto same = [&](const CallChange& x) { return x.call == c.call; };
    if (std::none_of(changed.begin(), changed.end(), same)) changed.push_back(c);
  }
  return changed;
}

// The what-if saving of issuing the view's synchronous copies asynchronously, as the fix (the
// lab's async-copy) does; 0 when the host timeline is empty. Each copy moves to the stream of
// the op that uses it (an HtoD copy its consumer, the op its thread launched next once its run of
// copies ends; a DtoH copy its producer): that op's stream still orders it, the legacy stream's
// barriers no longer do (both schedules have the barriers of the streams their ops run on), a
// synchronize of the stream waits for it, and the time other threads' calls waited for its
// blocking call on the legacy stream is given back.
Ns asyncCopySaving(const DeviceView& view) {
  const HostTimeline host = buildHostTimeline(view);
  if (host.empty()) return 0;
  const std::vector<Moved> moved = movedCopies(view);
  if (std::all_of(moved.begin(), moved.end(), [](Moved m) { return m == Moved::kNo; })) return 0;
  const std::vector<OrderEdge> waits = waitEdges(streamWaits(view));
  std::vector<OrderEdge> recorded = waits;
  const std::vector<OrderEdge> barriers = legacyBarrierEdges(view);
  recorded.insert(recorded.end(), barriers.begin(), barriers.end());
  const std::vector<std::uint64_t> lanes = fixLanes(view, moved);
  std::vector<OrderEdge> kept = waits;
  const std::vector<OrderEdge> fixed_barriers = legacyBarrierEdges(view, lanes);
  kept.insert(kept.end(), fixed_barriers.begin(), fixed_barriers.end());
  const HostTimeline fixed_host = fixedTimeline(view, host, lanes);
  const std::vector<LegacyOp> leaving = copiesLeavingLegacy(view, moved, lanes);
  const std::vector<HostTimeGiven> given = contendedTime(view, leaving);
  std::vector<CallChange> changed = changedCalls(view, fixed_host, moved, leaving);
  barriersGivenBack(view, given, fixed_host, changed);
  const ScheduleModel fixed = ScheduleModel(view, fixed_host, recorded).withLanes(lanes);
  const Ns before = ScheduleModel(view, host, recorded).span(recorded);
  return std::max<Ns>(0, before - fixed.span(kept, hostTimeGivenBack(view, given, fixed_host), {}, changed));
}

}  // namespace

std::optional<Finding> findSyncMemcpy(const DeviceView& view) {
  FindingBuilder builder(view, "sync-memcpy", Severity::kWarning);
  addSynchronousTransfers(view, OpKind::kMemcpy, ApiKind::kMemcpySync, builder);
  if (builder.count() > 0) {
    const Ns what_if = asyncCopySaving(view);
    const Ns cost = what_if > 0 ? what_if : builder.time();
    builder.estimateSaving(cost);
  }
  return builder.build(
      fmt::format("{} synchronous copies between GPU work blocked the host", builder.count()),
      "Use cudaMemcpyAsync on a created stream with pinned host memory, and synchronize only "
      "where the host needs the data (cudaEventSynchronize on an event recorded after the copy)");
}

}  // namespace cuoverlap::diagnosis
