// The what-if of sync-memcpy's and sync-memset's fix (definition: asynchronous_fix.h).
#include "diagnosis/rules/asynchronous_fix.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "cuoverlap/intervals.h"
#include "diagnosis/api_names.h"
#include "diagnosis/host_time_given.h"
#include "diagnosis/host_state.h"
#include "diagnosis/host_timeline.h"
#include "diagnosis/kernels_alone.h"
#include "diagnosis/lane_waits.h"
#include "diagnosis/legacy_barriers.h"
#include "diagnosis/median.h"
#include "diagnosis/overlap_index.h"
#include "diagnosis/pinned_rate.h"
#include "diagnosis/rules/legacy_threads.h"
#include "diagnosis/rules/rules.h"
#include "diagnosis/rules/staging_holds.h"
#include "diagnosis/schedule_estimate.h"
#include "diagnosis/schedule_turns.h"
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

// Whether the host reads the download at `position` right after its call: the thread's next step
// is a stretch of its own code (at least kMinimumCostNs in no CUDA call, a stretch as host-busy
// counts one), which a trace cannot show apart from the code that reads the data, or a kernel
// launch: a result read back between kernels of a step is read before the step goes on (a loss,
// a flag the host checks; single-stream's advice takes such a copy-out as read mid-chunk,
// resultsReadMidChunk), where one followed by more copies or by a synchronize is a stage's output
// read later. The fix's synchronize then sits right after the copy, and its call still waits for
// it (lab g000286: a worker's three 4 KiB read-backs, each followed 3-4 µs later by the launch of
// its next kernel; the fixed program synchronizes right after each, and the what-if that let the
// host run past them claimed 222 µs for 168 saved, now 175).
bool readRightAfter(const DeviceView& view, std::size_t position) {
  const RuntimeCall& call = view.call(*view.launchCall(view.op(view.ops()[position])));
  const HostState& state = view.hostState();
  const auto thread = state.threadOf(call);
  if (!thread) return false;
  const auto next = state.firstCallAfter(*thread, call.end);
  if (!next) return false;
  return view.call(*next).start - call.end >= kMinimumCostNs || view.callKind(*next) == ApiKind::kLaunch;
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
// waited for in the trace; a call that waited for none keeps waiting for none. A call that waits
// for the whole device (a device synchronize, or a free that waited for work in flight) also
// waits for the last op launched before it on each lane of its process where that op is a moved
// one (a download the host no longer waited for in its call), and, for each op it waited for that
// the fix moves off its stream, for the op launched last before it on that stream: the moved op
// stood for its stream's earlier work, which stream order no longer puts before it. Lab g008019
// (the forty-sixth session's fresh sample): main's `cudaMemset` on the legacy stream, queued
// behind a worker's kernels there, was the last op there that main's next `cudaFree` waited for;
// moved to main's own stream, the free returned 550 µs sooner in the what-if, while the worker's
// kernels it still waits for ran as before (558 µs claimed, 8 measured).
HostTimeline fixedTimeline(const DeviceView& view, const HostTimeline& host,
                           const std::vector<Moved>& moved, const std::vector<std::uint64_t>& lane) {
  LaneLaunches on_lane;
  for (std::size_t p = 0; p < lane.size(); ++p) {
    const auto call = view.launchCall(view.op(view.ops()[p]));
    on_lane[lane[p]].emplace_back(call ? view.call(*call).start : view.ops()[p].start, p);
  }
  for (auto& [key, list] : on_lane) std::sort(list.begin(), list.end());
  HostTimeline fixed = host;
  const auto waitFor = [](std::vector<std::size_t>& waited, std::size_t p) {
    if (std::find(waited.begin(), waited.end(), p) == waited.end()) waited.push_back(p);
  };
  for (HostBarrier& barrier : fixed.barriers) {
    const RuntimeCall& call = view.call(barrier.call);
    auto& waited = barrier.waited_for;
    const ApiKind kind = view.callKind(barrier.call);
    if (kind == ApiKind::kDeviceSync || (kind == ApiKind::kAllocation && !waited.empty())) {
      const std::vector<std::size_t> recorded = waited;
      for (const std::size_t p : recorded) {
        const std::uint64_t stream = DeviceView::streamKey(view.op(view.ops()[p]));
        if (moved[p] == Moved::kNo || lane[p] == stream) continue;
        if (const auto it = on_lane.find(stream); it != on_lane.end()) {
          if (const auto last = lastLaunchedBefore(it->second, call.start)) waitFor(waited, *last);
        }
      }
      for (const auto& [key, list] : on_lane) {
        const auto last = lastLaunchedBefore(list, call.start);
        if (!last || moved[*last] == Moved::kNo || view.op(view.ops()[*last]).pid != call.pid) continue;
        waitFor(waited, *last);
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

// The ops of `moved` whose calls held the context while they waited on the legacy stream and no
// longer do in the fix, as legacy ops: `leaving`, those it takes off the legacy stream (their
// lane is not its stream); `kept`, those it keeps there whose call returns at once
// (returnsAtOnce): the host then waits for them in a synchronize, which other threads' calls do
// not queue behind (g000083 in the lab: two threads' 4 KiB downloads kept on the legacy stream, a
// stream synchronize after each, where a third thread's calls to its own stream had waited behind
// their cudaMemcpy: 0.05 -> 0.42 ms claimed, 0.41 saved).
struct ReleasedCopies {
  std::vector<LegacyOp> leaving;
  std::vector<LegacyOp> kept;
  std::vector<LegacyOp> kept_read;  // of `kept`, those whose thread reads them right after

  // The copies that no longer hold other threads' calls to the legacy stream either: those that
  // leave it, and kept ones whose thread waits for them in a synchronize right after the copy
  // (readRightAfter): that thread does not run ahead, so its later legacy work keeps the order the
  // trace submitted it in, and other threads' legacy calls that waited behind the cudaMemcpy in the
  // driver are let go as the synchronize does not hold the context.
  std::vector<LegacyOp> forLegacyCalls() const {
    std::vector<LegacyOp> both = leaving;
    both.insert(both.end(), kept_read.begin(), kept_read.end());
    return both;
  }

  std::vector<LegacyOp> all() const {
    std::vector<LegacyOp> both = leaving;
    both.insert(both.end(), kept.begin(), kept.end());
    return both;
  }
};

ReleasedCopies releasedCopies(const DeviceView& view, const std::vector<Moved>& moved,
                              const std::vector<std::uint64_t>& lane) {
  std::optional<std::uint64_t> legacy;
  for (std::size_t pos = 0; pos < view.ops().size(); ++pos) {
    if (view.onLegacyDefaultStreamAt(pos)) legacy = DeviceView::streamKey(view.op(view.ops()[pos]));
  }
  ReleasedCopies released;
  for (std::size_t p = 0; p < moved.size(); ++p) {
    if (moved[p] == Moved::kNo) continue;
    const bool leaves = lane[p] != legacy;
    if (!leaves && !returnsAtOnce(view, moved, p)) continue;
    const RuntimeCall& c = view.call(*view.launchCall(view.op(view.ops()[p])));
    (leaves ? released.leaving : released.kept)
        .push_back({p, threadKey(c), c.start, true});
    if (!leaves && moved[p] == Moved::kToProducer && readRightAfter(view, p)) {
      released.kept_read.push_back(released.kept.back());
    }
  }
  return released;
}

// The launch calls of the view's ops on the legacy stream, sorted.
std::vector<std::size_t> legacyLaunchCalls(const DeviceView& view) {
  std::vector<std::size_t> calls;
  for (std::size_t pos = 0; pos < view.ops().size(); ++pos) {
    if (!view.onLegacyDefaultStreamAt(pos)) continue;
    if (const auto call = view.launchCall(view.op(view.ops()[pos]))) calls.push_back(*call);
  }
  std::sort(calls.begin(), calls.end());
  return calls;
}

// Of `behind_all` (calls that waited behind any released copy), those that launch onto other
// streams than the legacy one; of `behind_leaving` (behind copies leaving it), the others.
template <typename Entry>
std::vector<Entry> releasedCalls(const std::vector<std::size_t>& legacy_calls,
                                 const std::vector<Entry>& behind_all,
                                 const std::vector<Entry>& behind_leaving) {
  const auto on_legacy = [&](const Entry& e) {
    return std::binary_search(legacy_calls.begin(), legacy_calls.end(), e.call);
  };
  std::vector<Entry> released;
  for (const Entry& e : behind_all) {
    if (!on_legacy(e)) released.push_back(e);
  }
  for (const Entry& e : behind_leaving) {
    if (on_legacy(e)) released.push_back(e);
  }
  return released;
}

// The host time other threads' calls get back in the fix (contendedTime): what they waited
// behind the copies that leave the legacy stream, and, for calls that launch onto other streams,
// behind those kept there too. A call to the legacy stream keeps its wait behind a kept copy: the
// fixed schedule orders the legacy stream's work (and its barriers) as the trace submitted it, so
// that time given back would run its thread ahead of the work its ops still follow (except behind
// a copy its thread reads right after: ReleasedCopies::forLegacyCalls).
std::vector<HostTimeGiven> timeGivenBehindCopies(const DeviceView& view, const ReleasedCopies& released,
                                                 const std::vector<std::size_t>& legacy_calls) {
  std::vector<HostTimeGiven> behind_leaving = contendedTime(view, released.forLegacyCalls());
  if (released.kept.empty()) return behind_leaving;
  return releasedCalls(legacy_calls, contendedTime(view, released.all()), behind_leaving);
}

// A held call of kHoldingNs or more holds other threads' calls in turn: as implicit-sync-call's
// fix found (implicit_sync_call.cpp, kHoldingCallNs), a shorter one lasts no longer than calls
// that other threads' calls overlap and outlive anyway.
constexpr Ns kHoldingNs = 50'000;

// What other threads' calls get back in the fix (timeGivenBehindCopies), and, one step further,
// what the calls held behind those calls get back: a call the fix lets go sooner no longer holds
// the calls that queued behind it in the driver (lab g000083: main's `cudaMemcpy` held a worker's
// legacy-stream launch 1.3 ms; once main's copy ended, that still-held launch held main's own
// next launches 35-100 µs each and a third thread's; the fixed program, a synchronize in place of
// each `cudaMemcpy`, ran those launches in 5-30 µs. Without this the what-if claimed 130 µs for
// 492 saved once main's read-backs kept their wait). Only holds of kHoldingNs or more (the part
// given back) count.
std::vector<HostTimeGiven> timeGivenBack(const DeviceView& view, const ReleasedCopies& released,
                                         const std::vector<std::size_t>& legacy_calls) {
  std::vector<HostTimeGiven> given = timeGivenBehindCopies(view, released, legacy_calls);
  if (given.empty()) return given;
  std::unordered_map<std::size_t, std::size_t> position_of;  // launch call -> op position
  for (std::size_t p = 0; p < view.ops().size(); ++p) {
    if (const auto call = view.launchCall(view.op(view.ops()[p]))) position_of.emplace(*call, p);
  }
  std::vector<LegacyOp> holders;
  for (const HostTimeGiven& g : given) {
    if (!g.in_call || g.amount < kHoldingNs) continue;
    const auto it = position_of.find(g.call);
    if (it == position_of.end()) continue;
    const RuntimeCall& c = view.call(g.call);
    holders.push_back({it->second, threadKey(c), c.start, false});
  }
  if (holders.empty()) return given;
  std::unordered_map<std::size_t, std::size_t> index;
  for (std::size_t i = 0; i < given.size(); ++i) index.emplace(given[i].call, i);
  for (const HostTimeGiven& g : contendedTime(view, holders)) {
    const auto it = index.find(g.call);
    if (it == index.end()) {
      index.emplace(g.call, given.size());
      given.push_back(g);
    } else if (given[it->second].in_call == g.in_call) {
      given[it->second].amount = std::max(given[it->second].amount, g.amount);
    }
  }
  return given;
}

// Other threads' asynchronous calls to the legacy stream that the fix keeps there (launches and
// copies whose op stays on it): the driver holds the context while such a call orders
// its op after every blocking stream (legacy_threads.cpp, contendedTime), so a call of another
// thread that began meanwhile waits, an asynchronous one too.
struct KeptLegacyCall {
  Ns start = 0;
  Ns end = 0;
  std::uint64_t thread = 0;
};

std::vector<KeptLegacyCall> keptLegacyCalls(const DeviceView& view, const std::vector<Moved>& moved) {
  std::vector<KeptLegacyCall> out;
  for (std::size_t p = 0; p < view.ops().size(); ++p) {
    if (moved[p] != Moved::kNo || !view.onLegacyDefaultStreamAt(p)) continue;
    const GpuOp& op = view.op(view.ops()[p]);
    const auto call = view.launchCall(op);
    if (!call) continue;
    const ApiKind kind = view.callKind(*call);
    if (kind == ApiKind::kMemcpySync || kind == ApiKind::kMemsetSync) continue;
    const RuntimeCall& c = view.call(*call);
    out.push_back({c.start, c.end, threadKey(c)});
  }
  return out;
}

// How much of [start, end) other threads' kept legacy calls covered. A converted call keeps this
// much of the parts of its recorded call in which it did not wait for the device: in the lab's
// g000009 a worker's 4 KiB `cudaMemcpy` uploads to a non-blocking stream took 11-60 µs while two
// other threads issued `cudaMemcpyAsync` to the legacy stream, and as `cudaMemcpyAsync` in the
// fixed program they still took about 21 µs each, not 5; in g000235 the main thread's 312
// copy calls beside a worker's legacy-stream copies took 12.1 ms in all as `cudaMemcpy` and 9.6
// ms as `cudaMemcpyAsync` (the what-if had given them 5 µs each).
Ns heldByKeptLegacy(const OverlapIndex<KeptLegacyCall>& held, Ns start, Ns end, std::uint64_t thread) {
  return coveredLength(held, start, end, [&](const KeptLegacyCall& h) { return h.thread != thread; });
}

// Per position, when nothing on the device held the op back any longer but the ops the trace
// ordered it after (`constrained` adds the legacy barrier's and stream waits'): its stream's
// previous op had ended and, for a copy, its copy engine had finished the copies of its direction
// that started before it (a copy that started late behind another copy on its engine was queued
// there, not held in its call).
std::vector<Ns> freeFrom(const DeviceView& view) {
  std::vector<Ns> free_from(view.ops().size(), std::numeric_limits<Ns>::min());
  std::unordered_map<std::uint64_t, Ns> stream_end;
  std::unordered_map<int, Ns> engine_end;
  for (std::size_t p = 0; p < view.ops().size(); ++p) {
    const ScopedOp& scoped = view.ops()[p];
    const GpuOp& o = view.op(scoped);
    const auto s = stream_end.try_emplace(DeviceView::streamKey(o), std::numeric_limits<Ns>::min()).first;
    free_from[p] = s->second;
    s->second = std::max(s->second, scoped.end);
    if (!o.isCopy()) continue;
    const auto e = engine_end.try_emplace(static_cast<int>(o.copy_kind), std::numeric_limits<Ns>::min()).first;
    free_from[p] = std::max(free_from[p], std::min(e->second, scoped.start));
    e->second = std::max(e->second, scoped.end);
  }
  return free_from;
}

// The least an asynchronous copy call takes, where a call's own time is measured rather than
// assumed (kAsyncCopyCallNs, 5 µs, is the typical call of pipeline3): the lab's fixed programs'
// small pinned cudaMemcpyAsync calls on the H100, 3.6 µs median over 20064 calls.
constexpr Ns kAsyncCopyCallFloorNs = 3'600;

// Per thread: how long its synchronous calls took to return after what they waited for had ended
// (the median, over its synchronous copies and explicit synchronizes whose wait W ended inside the
// call, of call end - W's end; copies with pageable host memory left out: theirs includes copying
// out of the staging buffer). A pageable cudaMemcpy synchronizes its stream before it stages (CUDA's
// API synchronization behavior) and pays that synchronize's return even when the stream had
// nothing left in flight; cudaMemcpyAsync stages at once. g000008: 4 KiB pageable uploads took
// 6.2-7.5 µs as cudaMemcpy on an idle stream and 3.6-4.4 as cudaMemcpyAsync, where its pinned
// downloads returned 4.2-4.6 µs after their copies ended.
std::unordered_map<std::uint64_t, Ns> syncReturnByThread(const DeviceView& view, const HostTimeline& host) {
  std::unordered_map<std::uint64_t, std::vector<Ns>> samples;
  for (const HostBarrier& barrier : host.barriers) {
    const ApiKind kind = view.callKind(barrier.call);
    if (barrier.waited_for.empty() || barrier.staged) continue;
    if (kind != ApiKind::kMemcpySync && !isExplicitSync(kind)) continue;
    const RuntimeCall& call = view.call(barrier.call);
    Ns w = std::numeric_limits<Ns>::min();
    bool pageable = false;
    for (const std::size_t p : barrier.waited_for) {
      w = std::max(w, view.ops()[p].end);
      const GpuOp& o = view.op(view.ops()[p]);
      pageable = pageable || (o.isCopy() && (o.src_kind == MemKind::kPageable || o.dst_kind == MemKind::kPageable));
    }
    if (kind == ApiKind::kMemcpySync) {
      // Its own copy must be what it waited for: a pageable upload returned before its copy.
      const auto own = [&](std::size_t p) {
        const auto launch = view.launchCall(view.op(view.ops()[p]));
        return launch && *launch == barrier.call;
      };
      if (std::none_of(barrier.waited_for.begin(), barrier.waited_for.end(), own)) continue;
    }
    if (pageable || w <= call.start || w > call.end) continue;
    samples[threadKey(call)].push_back(call.end - w);
  }
  std::unordered_map<std::uint64_t, Ns> out;
  for (auto& [thread, v] : samples) out[thread] = medianOf(std::move(v));
  return out;
}

// The blocking calls the fix changes: a call whose op returns at once in the fix (returnsAtOnce)
// no longer waits and returns after an asynchronous call's time, whatever it waited for in the
// trace (its own copy, or, a pageable upload or one that returned before its copy ended, its
// stream's previous op: cudaMemcpy synchronizes its stream first). An upload from pageable memory
// still stages its data first: cudaMemcpyAsync returns once the buffer is in the driver's staging
// memory, so its call keeps the time it took after the last op it waited for had ended (its
// stream's previous op, the legacy barrier's ops), at least an asynchronous call's time (a 991 KB
// upload's call took 74-94 µs of staging for a 21 µs DMA: lab g000298, 0.63 ms claimed for 0.56
// saved with 5 µs calls), less the return of the stream synchronize the cudaMemcpy made before it
// staged (syncReturnByThread), at least kAsyncCopyCallFloorNs. Staged calls (pageable copies)
// that took turns with another thread's released copy keep their own time (legacy_threads.h),
// those to the legacy stream only where that copy leaves it (timeGivenBack).
std::vector<CallChange> changedCalls(const DeviceView& view, const HostTimeline& host,
                                     ApiKind sync_kind, const std::vector<Moved>& moved,
                                     const ReleasedCopies& released,
                                     const std::vector<std::size_t>& legacy_calls,
                                     const std::vector<OrderEdge>& recorded, std::size_t& converted) {
  std::vector<CallChange> changed;
  // Per moved op: the latest end of the ops the trace ordered it after besides its stream's
  // previous one (the legacy stream's barriers, stream waits).
  std::vector<Ns> constrained(moved.size(), std::numeric_limits<Ns>::min());
  for (const OrderEdge& e : recorded) constrained[e.to] = std::max(constrained[e.to], view.ops()[e.from].end);
  std::unordered_map<std::size_t, std::size_t> op_of_call;  // launch call -> its moved op
  for (std::size_t p = 0; p < moved.size(); ++p) {
    if (moved[p] != Moved::kNo) op_of_call.emplace(*view.launchCall(view.op(view.ops()[p])), p);
  }
  const OverlapIndex<KeptLegacyCall> kept_legacy(keptLegacyCalls(view, moved));
  const std::vector<Ns> free_from = freeFrom(view);
  const std::unordered_map<std::uint64_t, Ns> sync_return = syncReturnByThread(view, host);
  for (const HostBarrier& barrier : host.barriers) {
    if (view.callKind(barrier.call) != sync_kind || barrier.waited_for.size() != 1) continue;
    const auto own_op = op_of_call.find(barrier.call);
    const std::size_t op = own_op != op_of_call.end() ? own_op->second : barrier.waited_for.front();
    if (!returnsAtOnce(view, moved, op)) continue;
    if (moved[op] == Moved::kToProducer && readRightAfter(view, op)) continue;
    Ns own = std::min(barrier.own, kAsyncCopyCallNs);
    if (view.op(view.ops()[op]).src_kind == MemKind::kPageable) {
      const RuntimeCall& call = view.call(barrier.call);
      Ns staging_from = std::max(call.start, constrained[op]);
      for (const std::size_t w : barrier.waited_for) staging_from = std::max(staging_from, view.ops()[w].end);
      // Less the return of the stream synchronize the cudaMemcpy made first (syncReturnByThread).
      const auto back = sync_return.find(threadKey(call));
      const Ns sync_back = back != sync_return.end() ? back->second : 0;
      own = std::min(barrier.own, std::max(kAsyncCopyCallFloorNs,
                                           call.end - staging_from - sync_back));
    }
    if (!kept_legacy.empty()) {
      // Other threads' calls that the fix keeps on the legacy stream still hold the context: what
      // they covered of this call while it was not waiting for the device (before its op could
      // start, after it ended) it still waits for as an asynchronous call (heldByKeptLegacy).
      const RuntimeCall& call = view.call(barrier.call);
      const ScopedOp& scoped = view.ops()[op];
      const Ns ready = std::max({call.start, constrained[op], free_from[op]});
      Ns held = 0;
      if (ready < scoped.start) held += heldByKeptLegacy(kept_legacy, ready, scoped.start, threadKey(call));
      const Ns back = std::max(call.start, scoped.end);
      if (back < call.end) held += heldByKeptLegacy(kept_legacy, back, call.end, threadKey(call));
      own = std::max(own, held);
    }
    changed.push_back({barrier.call, false, own});
  }
  converted = changed.size();
  const auto callsOf = [&](const std::vector<LegacyOp>& copies) {
    std::vector<std::size_t> calls;
    for (const LegacyOp& x : copies) calls.push_back(*view.launchCall(view.op(view.ops()[x.position])));
    std::sort(calls.begin(), calls.end());
    return calls;
  };
  std::vector<CallChange> staged = stagedCallsBehind(view, host, callsOf(released.forLegacyCalls()));
  if (!released.kept.empty()) {
    staged = releasedCalls(legacy_calls, stagedCallsBehind(view, host, callsOf(released.all())), staged);
  }
  for (const CallChange& c : staged) {
    const auto same = [&](const CallChange& x) { return x.call == c.call; };
    if (std::none_of(changed.begin(), changed.end(), same)) changed.push_back(c);
  }
  return changed;
}

// Who is beside whom in the fixed schedule (schedule_turns.h): the converted calls (the first
// `converted` of `changed`) take a turn, at most their recorded time, where the schedule begins
// them while another thread's call to the legacy stream is in progress. As recorded they waited
// for the device inside a synchronous call; issued asynchronously they run beside the other
// threads' calls the fix keeps on the legacy stream (lab g000009: a worker's uploads moved to a
// created stream took turns call by call with another worker's legacy-stream copies, 20-30 µs a
// call, in the fixed program).
HostTurns hostTurns(const DeviceView& view, const HostTimeline& host, const std::vector<Moved>& moved,
                    const std::vector<std::uint64_t>& lanes, const std::vector<CallChange>& changed,
                    std::size_t converted, const std::vector<HostTimeGiven>& given) {
  HostTurns turns;
  if (converted == 0) return turns;
  const std::size_t n = view.ops().size();
  std::unordered_set<std::uint64_t> legacy_streams;
  for (std::size_t p = 0; p < n; ++p) {
    if (view.onLegacyDefaultStreamAt(p)) legacy_streams.insert(DeviceView::streamKey(view.op(view.ops()[p])));
  }
  if (legacy_streams.empty()) return turns;
  // A call the fix no longer holds in the driver returns that much sooner (its op's release moves
  // with it): it is in progress from its start for its recorded time less that.
  recordLaunchCalls(view, given, turns);
  turns.op_holds.assign(n, 0);
  std::unordered_map<std::size_t, std::uint8_t> legacy_call;  // launch call -> its op stays legacy
  for (std::size_t p = 0; p < n; ++p) {
    const auto call = view.launchCall(view.op(view.ops()[p]));
    if (!call) continue;
    const bool legacy = legacy_streams.count(lanes[p]) != 0;
    legacy_call[*call] = legacy ? 1 : 0;
    const ApiKind kind = view.callKind(*call);
    const bool blocking = moved[p] == Moved::kNo && (kind == ApiKind::kMemcpySync || kind == ApiKind::kMemsetSync);
    turns.op_holds[p] = legacy && !blocking ? 1 : 0;
  }
  for (const HostBarrier& barrier : host.barriers) {
    turns.call_thread[barrier.call] = threadKey(view.call(barrier.call));
    const auto it = legacy_call.find(barrier.call);
    turns.call_holds[barrier.call] = it != legacy_call.end() ? it->second : 0;
  }
  for (std::size_t k = 0; k < converted; ++k) {
    // Copies only: a memset call takes 10-35 µs alone in the fixed programs' own traces
    // (/work/vtraces14, async-memset runs), about a turn already, and beside another thread's
    // legacy call no longer (g000235: 17.4 µs, 3 calls).
    if (view.callKind(changed[k].call) != ApiKind::kMemcpySync) continue;
    const RuntimeCall& c = view.call(changed[k].call);
    const Ns turn = std::min(c.end - c.start, kLegacyTurnNs);
    if (turn > changed[k].own) turns.turn[changed[k].call] = turn;
  }
  return turns;
}

// A call held in the driver submitted its op later than its call began, after the ops the legacy
// barrier ran before it. The schedule issues a blocking call's op at its
// submission (submittedAt: where the call returned after its op began, its call's start, the
// earliest it can have been) and counts an edge only where it points forward in issue order, but
// the barrier's recorded order is the submission order (legacyBarrierEdges: where the recorded
// times disagree with the calls' order, a call held behind another thread's submitted later than
// it began), so such an op was issued after each op the barrier ran before it, and the edge from
// that op is dropped without this (lab g000211: the main thread's `cudaMemcpy` read-back, begun at
// 0.63 ms and held in the driver behind a worker's `cudaMemcpy` until 1.93 ms, ran on the legacy
// stream after the worker's per-thread-stream work launched at 1.88-1.93 ms; without that edge
// the recorded program's schedule ran main's later work 0.85 ms early: 13.96 ms for 14.90
// recorded, 15.17 with it; on the 30-run replica 13.26 -> 14.72 for 14.65). An asynchronous call
// is issued at its call's start (the schedule's rank for it; ranking every one at its return was
// tried and lost, docs/findings.md), and likewise after the ops the barrier ran before it where
// that start came before theirs: held in the driver, it submitted its op only after them (lab
// g000315: a worker's legacy upload, call 2.65-2.74 ms, ran after the main thread's kernel
// launched at 2.69 ms). `barrier_edges`: a model's legacy barrier edges (the recorded order holds
// where an edge's source ended before its target began). Per op issued later: (position, issue),
// for ScheduleModel::withIssuedAt.
std::vector<std::pair<std::size_t, Ns>> issuedInBarrierOrder(const DeviceView& view,
                                                             const std::vector<OrderEdge>& barrier_edges) {
  const auto& ops = view.ops();
  const std::size_t n = ops.size();
  const auto blocking = [&](std::size_t p) {
    const auto call = view.launchCall(view.op(ops[p]));
    if (!call) return false;
    const ApiKind kind = view.callKind(*call);
    return kind == ApiKind::kMemcpySync || kind == ApiKind::kMemsetSync;
  };
  std::vector<OrderEdge> order;
  for (const OrderEdge& e : barrier_edges) {
    if (e.from < n && e.to < n && e.from != e.to && ops[e.from].end <= ops[e.to].start) {
      order.push_back(e);
    }
  }
  if (order.empty()) return {};
  // Each op's issue as ScheduleModel takes it: a blocking call's submission, another call's start,
  // never before its stream's previous op's.
  std::vector<Ns> issue(n);
  const std::vector<std::int64_t> prev = previousOnStream(view);
  for (std::size_t p = 0; p < n; ++p) {
    Ns at = ops[p].start;
    if (const auto call = view.launchCall(view.op(ops[p]))) {
      at = blocking(p) ? submittedAt(view, *call, ops[p].start) : view.call(*call).start;
    }
    issue[p] = prev[p] >= 0 ? std::max(at, issue[static_cast<std::size_t>(prev[p])]) : at;
  }
  const std::vector<Ns> original = issue;
  // A few rounds: a pushed op pushes its stream's later ops, which can push others in turn.
  constexpr int kRounds = 8;
  for (int round = 0; round < kRounds; ++round) {
    bool pushed = false;
    for (const OrderEdge& e : order) {
      if (issue[e.from] < issue[e.to]) continue;
      issue[e.to] = issue[e.from] + 1;
      pushed = true;
    }
    if (!pushed) break;
    for (std::size_t p = 0; p < n; ++p) {
      if (prev[p] >= 0) issue[p] = std::max(issue[p], issue[static_cast<std::size_t>(prev[p])]);
    }
  }
  std::vector<std::pair<std::size_t, Ns>> out;
  for (std::size_t p = 0; p < n; ++p) {
    if (issue[p] > original[p]) out.emplace_back(p, issue[p]);
  }
  return out;
}

}  // namespace

std::optional<Ns> asynchronousFixSaving(const DeviceView& view, ApiKind sync_kind) {
  if (buildHostTimeline(view).empty()) return std::nullopt;
  const std::vector<Moved> moved = movedOps(view, sync_kind);
  if (std::all_of(moved.begin(), moved.end(), [](Moved m) { return m == Moved::kNo; })) {
    return std::nullopt;
  }
  // A staged upload whose call waited behind its own stream's previous op returns with its copy
  // (buildHostTimeline's stream_held_staging): the fix ends that op sooner where the legacy
  // barrier it removes held it. Only this what-if takes it: its fix moves the synchronous calls
  // off the legacy stream, while the others keep legacy calls that a staging call the fix ends
  // elsewhere would hold in the driver, which their schedules do not model (lab g000117's
  // nonblocking-streams: a worker's cudaMemset held 9.8 ms behind another's staged upload).
  const std::vector<std::size_t> pageable = pageableCopyCalls(view);
  const HostTimeline host =
      pageable.empty() ? buildHostTimeline(view) : buildHostTimeline(view, pageable, true);
  if (host.empty()) return std::nullopt;
  const std::vector<StreamWait> stream_waits = streamWaits(view);
  const std::vector<OrderEdge> waits = waitEdges(stream_waits);
  std::vector<OrderEdge> recorded = waits;
  const std::vector<OrderEdge> barriers = legacyBarrierEdges(view);
  recorded.insert(recorded.end(), barriers.begin(), barriers.end());
  const std::vector<std::uint64_t> lanes = fixLanes(view, moved);
  // The fix's events stand for the work of their streams as it moved (lane_waits.h).
  std::vector<OrderEdge> kept = waitEdgesOnLanes(view, stream_waits, lanes);
  const std::vector<OrderEdge> fixed_barriers = legacyBarrierEdges(view, lanes);
  kept.insert(kept.end(), fixed_barriers.begin(), fixed_barriers.end());
  const HostTimeline fixed_host = fixedTimeline(view, host, moved, lanes);
  const ReleasedCopies released = releasedCopies(view, moved, lanes);
  // Needed only where a released copy stays on the legacy stream (releasedCalls).
  const std::vector<std::size_t> legacy_calls =
      released.kept.empty() ? std::vector<std::size_t>{} : legacyLaunchCalls(view);
  const std::vector<HostTimeGiven> given = timeGivenBack(view, released, legacy_calls);
  std::size_t converted = 0;
  std::vector<CallChange> changed =
      changedCalls(view, fixed_host, sync_kind, moved, released, legacy_calls, recorded, converted);
  const HostTurns turns = hostTurns(view, fixed_host, moved, lanes, changed, converted, given);
  barriersGivenBack(view, given, fixed_host, changed);
  // A legacy-stream call held in the driver behind other threads' staged pageable copies
  // (staging_holds.h) waited for them as recorded. The fix keeps that hold only where it keeps
  // the call: an op it issues asynchronously instead no longer blocks in the driver behind them
  // (lab g000304: a worker's memset on the legacy stream held 1119 µs behind the others' pageable
  // copies, 8.5 µs as an asynchronous call to a stream of its own).
  const std::vector<StagingHold> holds = stagingHolds(view, recorded);
  const std::vector<OrderEdge> with_holds = withHoldEdges(recorded, holds);
  // The recorded program's schedule issues a held call's op in the order its barrier ran it. The
  // fixed program's barrier follows the order the what-if issues the work in where every legacy op
  // of it returns at once (sync-memcpy's fix; sync-memset's keeps the recorded order: issued in
  // order there, held-out memset cases were lost); elsewhere it too keeps the recorded order.
  const bool issue_order =
      sync_kind == ApiKind::kMemcpySync && barrierFollowsIssueOrder(view, barrierClasses(view, lanes), sync_kind);
  ScheduleModel fixed_model = ScheduleModel(view, fixed_host, with_holds).withLanes(lanes);
  if (!issue_order) fixed_model = fixed_model.withIssuedAt(issuedInBarrierOrder(view, fixed_barriers));
  std::vector<OrderEdge> before_edges = recorded;
  const ScheduleModel before_model = keepHolds(
      ScheduleModel(view, host, with_holds).withIssuedAt(issuedInBarrierOrder(view, barriers)), holds,
      [](const StagingHold&) { return true; }, before_edges);
  const Ns before = before_model.span(before_edges);
  if (issue_order) {
    // Each op issued at its recorded submission (barrierIssueTimes), less how much sooner the fix
    // releases it than a schedule of the recorded program issued in the same order does, so that
    // that schedule's own error reorders nothing.
    const BarrierIssue issued = barrierIssueTimes(view);
    std::vector<OrderEdge> reference_edges = recorded;
    const ScheduleModel reference = keepHolds(
        ScheduleModel(view, host, with_holds).withBarrierIssueOrder(barrierClasses(view), issued), holds,
        [](const StagingHold&) { return true; }, reference_edges);
    fixed_model = fixed_model.withBarrierIssueOrder(barrierClasses(view, lanes), issued,
                                                    reference.issueReleases(reference_edges), lanes);
  }
  const ScheduleModel fixed = keepHolds(
      fixed_model, holds, [&](const StagingHold& h) { return moved[h.position] == Moved::kNo; }, kept);
  std::vector<Ns> earlier = hostTimeGivenBack(view, given, fixed_host);
  launchesHeldBeforeSubmitting(view, given, earlier);
  // Kernels that ran slowed beside other streams' kernels and that the fixed schedule runs beside
  // none take the shortest run of the same kernel (name, grid, stream) that ran alone in the trace
  // (kernels_alone.h, kernelsLeftAlone, as blocking-sync-call's deferred schedule does): a thread
  // whose calls no longer block moves its work away from what slowed it (lab g000089's
  // async-memset: a 1056-block kernel ran 260 µs in the baseline and 189 in the fixed program;
  // one window's what-if gives a slowed kernel its 97 µs alone run for 168, and the claim goes
  // 243 -> 390 µs for 510 saved).
  ScheduledHost times;
  Ns fixed_span = spanWithTurns(fixed, turns, kept, earlier, {}, changed, &times);
  const std::vector<FasterOp> faster = kernelsLeftAlone(view, times);
  if (!faster.empty()) fixed_span = spanWithTurns(fixed, turns, kept, earlier, faster, changed);
  return std::max<Ns>(0, before - fixed_span);
}

void estimateAsynchronousFix(const DeviceView& view, ApiKind sync_kind, FindingBuilder& builder) {
  if (builder.count() == 0) return;
  estimateAsynchronousFix(asynchronousFixSaving(view, sync_kind), builder);
}

void estimateAsynchronousFix(const std::optional<Ns>& what_if, FindingBuilder& builder) {
  if (builder.count() == 0) return;
  builder.estimateSaving(what_if.value_or(0) > 0 ? *what_if : builder.time());
  if (what_if && *what_if == 0) builder.fixAlone(0);
}

}  // namespace cuoverlap::diagnosis
