// The what-if of sync-memcpy's and sync-memset's fix (definition: asynchronous_fix.h).
#include "diagnosis/rules/asynchronous_fix.h"

#include <algorithm>
#include <optional>
#include <unordered_map>
#include <utility>

#include "diagnosis/host_time_given.h"
#include "diagnosis/host_timeline.h"
#include "diagnosis/legacy_barriers.h"
#include "diagnosis/pinned_rate.h"
#include "diagnosis/rules/legacy_threads.h"
#include "diagnosis/schedule_estimate.h"
#include "diagnosis/stream_waits.h"
#include "diagnosis/thread_launches.h"

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

// Whether the fix's call returns without waiting for the op at `position`: an upload or a memset
// (its consumer on the device waits for it), or a download into pinned memory, which the host
// waits for only at its next synchronize that orders it. A download into pageable memory is still
// synchronous (the driver copies it out of its staging buffer before the call returns).
bool returnsAtOnce(const DeviceView& view, const std::vector<Moved>& moved, std::size_t position) {
  if (moved[position] == Moved::kToConsumer) return true;
  return moved[position] == Moved::kToProducer &&
         view.op(view.ops()[position]).dst_kind == MemKind::kPinned;
}

using LaneLaunches = std::unordered_map<std::uint64_t, std::vector<std::pair<Ns, std::size_t>>>;

// The op launched last before `time` on a lane (its list sorted by launch), if any.
std::optional<std::size_t> lastLaunchedBefore(const std::vector<std::pair<Ns, std::size_t>>& list,
                                              Ns time) {
  const auto after = std::lower_bound(list.begin(), list.end(), std::make_pair(time, std::size_t{0}));
  if (after == list.begin()) return std::nullopt;
  return std::prev(after)->second;
}

// The host timeline of the fix: a stream synchronize waits for the last op launched before it on
// the lane of the stream it synchronized (a copy moved there, which it now waits for; or none
// where the copy it waited for moved away). The synchronized stream is that of the op the call
// waited for in the trace; a call that waited for none keeps waiting for none. A device
// synchronize also waits for the last op launched before it on each lane of its process where
// that op is a moved copy (a download the host no longer waited for in its call).
HostTimeline fixedTimeline(const DeviceView& view, const HostTimeline& host,
                           const std::vector<Moved>& moved, const std::vector<std::uint64_t>& lane) {
  LaneLaunches on_lane;
  for (std::size_t p = 0; p < lane.size(); ++p) {
    const auto call = view.launchCall(view.op(view.ops()[p]));
    on_lane[lane[p]].emplace_back(call ? view.call(*call).start : view.ops()[p].start, p);
  }
  for (auto& [key, list] : on_lane) std::sort(list.begin(), list.end());
  HostTimeline fixed = host;
  for (HostBarrier& barrier : fixed.barriers) {
    const RuntimeCall& call = view.call(barrier.call);
    auto& waited = barrier.waited_for;
    if (view.callKind(barrier.call) == ApiKind::kDeviceSync) {
      for (const auto& [key, list] : on_lane) {
        const auto last = lastLaunchedBefore(list, call.start);
        if (!last || moved[*last] == Moved::kNo || view.op(view.ops()[*last]).pid != call.pid) continue;
        if (std::find(waited.begin(), waited.end(), *last) == waited.end()) waited.push_back(*last);
      }
      continue;
    }
    if (view.callKind(barrier.call) != ApiKind::kStreamSync || waited.size() != 1) continue;
    const auto& list = on_lane[DeviceView::streamKey(view.op(view.ops()[waited.front()]))];
    const auto last = lastLaunchedBefore(list, call.start);
    waited.clear();
    if (last) waited.push_back(*last);
  }
  return fixed;
}

// Per position how the fix moves the op: every op issued through `sync_kind`, a DtoH copy to its
// producer's stream, others to their consumer's.
std::vector<Moved> movedOps(const DeviceView& view, ApiKind sync_kind) {
  std::vector<Moved> moved(view.ops().size(), Moved::kNo);
  for (std::size_t p = 0; p < moved.size(); ++p) {
    const GpuOp& op = view.op(view.ops()[p]);
    const auto call = view.launchCall(op);
    if (!call || view.callKind(*call) != sync_kind) continue;
    moved[p] = engineOf(op) == Engine::kD2H ? Moved::kToProducer : Moved::kToConsumer;
  }
  return moved;
}

// The ops of `moved` that leave the legacy stream in the fix (their lane is not its stream),
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

// The blocking calls the fix changes: a call that waited for its op and returns at once in the
// fix (returnsAtOnce) no longer waits and returns after an asynchronous call's time; staged calls
// (pageable copies) that took turns with another thread's copy leaving the legacy stream keep
// their own time (legacy_threads.h).
std::vector<CallChange> changedCalls(const DeviceView& view, const HostTimeline& host,
                                     ApiKind sync_kind, const std::vector<Moved>& moved,
                                     const std::vector<LegacyOp>& leaving) {
  std::vector<CallChange> changed;
  for (const HostBarrier& barrier : host.barriers) {
    if (view.callKind(barrier.call) != sync_kind || barrier.waited_for.size() != 1) continue;
    if (!returnsAtOnce(view, moved, barrier.waited_for.front())) continue;
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

}  // namespace

Ns asynchronousFixSaving(const DeviceView& view, ApiKind sync_kind) {
  const HostTimeline host = buildHostTimeline(view);
  if (host.empty()) return 0;
  const std::vector<Moved> moved = movedOps(view, sync_kind);
  if (std::all_of(moved.begin(), moved.end(), [](Moved m) { return m == Moved::kNo; })) return 0;
  const std::vector<OrderEdge> waits = waitEdges(streamWaits(view));
  std::vector<OrderEdge> recorded = waits;
  const std::vector<OrderEdge> barriers = legacyBarrierEdges(view);
  recorded.insert(recorded.end(), barriers.begin(), barriers.end());
  const std::vector<std::uint64_t> lanes = fixLanes(view, moved);
  std::vector<OrderEdge> kept = waits;
  const std::vector<OrderEdge> fixed_barriers = legacyBarrierEdges(view, lanes);
  kept.insert(kept.end(), fixed_barriers.begin(), fixed_barriers.end());
  const HostTimeline fixed_host = fixedTimeline(view, host, moved, lanes);
  const std::vector<LegacyOp> leaving = copiesLeavingLegacy(view, moved, lanes);
  const std::vector<HostTimeGiven> given = contendedTime(view, leaving);
  std::vector<CallChange> changed = changedCalls(view, fixed_host, sync_kind, moved, leaving);
  barriersGivenBack(view, given, fixed_host, changed);
  const ScheduleModel fixed = ScheduleModel(view, fixed_host, recorded).withLanes(lanes);
  const Ns before = ScheduleModel(view, host, recorded).span(recorded);
  return std::max<Ns>(0, before - fixed.span(kept, hostTimeGivenBack(view, given, fixed_host), {}, changed));
}


}  // namespace cuoverlap::diagnosis
