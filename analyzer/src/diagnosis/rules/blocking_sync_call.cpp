// blocking-sync-call and early-result-wait: cudaDeviceSynchronize / cudaStreamSynchronize / cudaEventSynchronize (and
// the driver's cuCtx/cuStream/cuEventSynchronize) called while GPU work was in flight (the device
// busy for at least 1 µs during the call) and followed by more GPU work, except a synchronize
// that orders a synchronous copy after other streams' work (needed_syncs.h: kKept). A removable
// synchronize that found nothing in flight is a blocking-sync-call instance too (its own host
// time delays the thread's next work); a finding made only of those is information (reported, as
// every cost, from 10 µs: the fixed program gives that time back).
// blocking-sync-call takes the synchronizes that bring nothing back (kRemovable; fix, the lab's
// remove-sync: remove them); early-result-wait those that bring an asynchronous DtoH copy's result
// back (kDeferrable; fix, the lab's defer-read: wait for the previous step's result instead,
// double-buffered).
// Cost: how much sooner the work would end with that fix, from the what-if schedule with the host
// modelled (schedule_estimate.h, host_timeline.h): the span as recorded minus the span with each
// removable call waiting for nothing (blocking-sync-call), or each deferrable one for what the
// thread's previous one waited for, begun one cudaEventRecord later, less the replay's own error
// the deferred schedule does not carry (replay_error.h, deferralSaving) (early-result-wait: the
// double-buffered step records the event the next step waits on; kernels the deferred schedule
// leaves alone that ran slowed beside other streams' kernels take their alone duration:
// kernelsLeftAlone); a removable one right before a legacy-stream synchronous copy moves its wait
// to that copy (removalChanges), other threads' calls that an allocation or free held return
// sooner where the fix moves the holder and the fixed schedule no longer begins them inside it
// (heldByMovedAllocations, heldNoLonger); in early-result-wait's two schedules an allocation or
// free that another thread's pageable copy held in the driver waits for that copy
// (heldByPageableCopies), and in the deferred one an allocation or free that the deferred thread
// reaches while device work still runs, waiting there kHoldingCallNs longer than as recorded,
// holds other threads' calls begun inside it (addForwardHolds); and both schedules keep the
// legacy stream's implicit barriers (legacy_barriers.h; they release the ops they hold
// kUnsampledBarrierLagNs late where the trace samples no barrier lag). That counts both the
// device idle after each drain and
// the overlap the waits prevented (work of the next chunk that the host could have issued while
// the device was busy with this one). Where (ledger): per call (host_blocking_cost.cpp) the device
// idle time after the drain that the next op could have been spared, capped at the call's lead
// (time blocked while the device still had work) plus its drain; CPU work after the call returned
// is not charged beyond that. Without a host timeline the cost is the sum of those idle stretches.
// Not reported under 10 µs.
// Needs: runtime calls.
#include <fmt/format.h>

#include "cuoverlap/units.h"
#include <algorithm>
#include <cstdint>
#include <map>
#include <string_view>
#include <utility>

#include "diagnosis/api_names.h"
#include "diagnosis/finding_builder.h"
#include "diagnosis/kernels_alone.h"
#include "diagnosis/legacy_barriers.h"
#include "diagnosis/median.h"
#include "diagnosis/needed_syncs.h"
#include "diagnosis/replay_error.h"
#include "diagnosis/rules/allocation_holds.h"
#include "diagnosis/rules/host_blocking_cost.h"
#include "diagnosis/rules/rules.h"
#include "diagnosis/schedule_estimate.h"
#include "diagnosis/schedule_turns.h"

namespace cuoverlap::diagnosis {

namespace {

// Whether the device had less than kMinimumInFlightNs of work during `call` (within the view).
bool foundNothingInFlight(const DeviceView& view, std::size_t call) {
  const RuntimeCall& c = view.call(call);
  const Ns s = std::max(c.start, view.spanStart());
  const Ns r = std::min(c.end, view.spanEnd());
  return r <= s || (r - s) - view.idleWithin(s, r) < kMinimumInFlightNs;
}

// The explicit synchronizes of `need`, with the idle time each one's drain cost the device; for
// kRemovable also those that found nothing in flight (counted in `idle_only`).
FindingBuilder syncInstances(const DeviceView& view, const HostTimeline& host,
                             const std::vector<SyncNeed>& needs, SyncNeed need,
                             const std::string& id, std::uint64_t& idle_only) {
  std::vector<std::size_t> calls;  // sorted
  for (std::size_t b = 0; b < host.barriers.size(); ++b) {
    if (needs[b] == need) calls.push_back(host.barriers[b].call);
  }
  std::sort(calls.begin(), calls.end());
  FindingBuilder builder(view, id, Severity::kWarning);
  std::vector<std::size_t> charged;  // sorted, as the charges are
  for (const HostBlockingCharge& charge : chargeHostBlockingCalls(view)) {
    if (!std::binary_search(calls.begin(), calls.end(), charge.call)) continue;
    charged.push_back(charge.call);
    builder.add(charge.idle,
                evidenceForCall(view, charge.call, 0,
                                fmt::format("blocked {} while the device had work, then {} after "
                                            "it drained; the device idled {} that the next op "
                                            "could have been spared",
                                            units::formatDuration(charge.lead),
                                            units::formatDuration(charge.drain),
                                            units::formatDuration(charge.idle.length()))));
  }
  if (need != SyncNeed::kRemovable) return builder;
  // A removable synchronize that found nothing in flight still holds its thread for its own host
  // time, which the what-if prices (it has no idle stretch of its own to charge).
  for (const std::size_t call : calls) {
    if (std::binary_search(charged.begin(), charged.end(), call) || !foundNothingInFlight(view, call)) {
      continue;
    }
    const RuntimeCall& c = view.call(call);
    builder.add(Ns{0}, evidenceForCall(view, call, 0,
                                       fmt::format("found no work in flight; its own {} held the "
                                                   "host back",
                                                   units::formatDuration(c.end - c.start))));
    ++idle_only;
  }
  return builder;
}

// The fix's change to each removable synchronize, in `changed`, with host time given back per op
// in `earlier`. Most simply go: they wait for nothing and take no time. One right before a
// synchronous copy or memset on the legacy default stream (the thread's next work) that the
// legacy stream orders after everything the synchronize waited for (legacyStreamOrders: that work
// ran on the legacy stream or blocking streams of its context) leaves the copy waiting for the
// same work with the same latency; what its removal gives is the host work between the two, which
// now runs while that work does: the synchronize's wait moves to the copy call (it begins that
// work's length later, and the copy call and its op that much sooner after it), keeping its own
// time (the thread's wake-up after that work, which the copy call now pays). One that found
// nothing in flight has no wait to move: its own time is the call's alone, which the fix removes.
// Where the synchronize waited for work on non-blocking streams, the copy does not wait for it
// (needed_syncs.h keeps such a synchronize removable when the copy only writes, for other streams'
// work): it simply goes. Lab c5 g003100: a device synchronize between a chain on five
// non-blocking streams and a loader's 4 KiB synchronous uploads on the legacy stream; in the fixed
// program's trace (/work/vt36) the uploads ran beside the chain, 7.4 ms sooner, while the moved
// wait had kept them behind it (33 µs claimed for 2633 saved, now 2564).
void removalChanges(const DeviceView& view, const HostTimeline& host,
                    const std::vector<SyncNeed>& needs, std::vector<CallChange>& changed,
                    std::vector<Ns>& earlier) {
  std::vector<std::size_t> launches_after(host.barriers.size(), 0);
  for (std::int64_t b : host.barrier_of) {
    if (b >= 0) ++launches_after[static_cast<std::size_t>(b)];
  }
  earlier.assign(view.ops().size(), 0);
  for (std::size_t b = 0; b < host.barriers.size(); ++b) {
    if (needs[b] != SyncNeed::kRemovable) continue;
    const HostBarrier& sync = host.barriers[b];
    const HostBarrier* next = b + 1 < host.barriers.size() ? &host.barriers[b + 1] : nullptr;
    const bool before_legacy_copy =
        next != nullptr && next->previous == static_cast<std::int64_t>(b) &&
        (view.callKind(next->call) == ApiKind::kMemcpySync ||
         view.callKind(next->call) == ApiKind::kMemsetSync) &&
        next->waited_for.size() == 1 && launches_after[b] == 1 &&
        host.barrier_of[next->waited_for.front()] == static_cast<std::int64_t>(b) &&
        view.onLegacyDefaultStream(view.op(view.ops()[next->waited_for.front()])) &&
        legacyStreamOrders(view, view.op(view.ops()[next->waited_for.front()]),
                           view.call(sync.call), sync.waited_for);
    if (!before_legacy_copy) {
      changed.push_back({sync.call, false, 0, 0});
      continue;
    }
    const Ns host_work = std::max<Ns>(0, next->start - sync.end);
    const Ns own = foundNothingInFlight(view, sync.call) ? 0 : sync.own;
    changed.push_back({sync.call, true, own, -host_work});
    changed.push_back({next->call, true, next->own, host_work});
    earlier[next->waited_for.front()] = host_work;
  }
}

// The host time a cudaEventRecord takes: the median of the trace's own event-record calls, else
// of its kernel launch calls (an event record is queued on its stream as a kernel is), 0 without
// either.
Ns eventRecordTime(const DeviceView& view) {
  std::vector<Ns> records;
  for (const std::size_t index : view.calls()) {
    const std::string_view name = view.callName(index);
    if (name.rfind("cudaEventRecord", 0) == 0 || name.rfind("cuEventRecord", 0) == 0) {
      records.push_back(view.call(index).end - view.call(index).start);
    }
  }
  if (!records.empty()) return medianOf(std::move(records));
  std::vector<Ns> launches;
  for (std::size_t pos = 0; pos < view.ops().size(); ++pos) {
    if (view.kindAt(pos) != OpKind::kKernel) continue;
    if (const auto launch = view.launchCall(view.op(view.ops()[pos]))) {
      launches.push_back(view.call(*launch).end - view.call(*launch).start);
    }
  }
  return launches.empty() ? 0 : medianOf(std::move(launches));
}

// The double-buffered step's own host cost: it records an event after its result's copy (the
// event the next step waits on), so each deferred synchronize begins one event record later.
std::vector<CallChange> eventRecordsAdded(const DeviceView& view, const HostTimeline& host,
                                          const std::vector<SyncNeed>& needs) {
  const Ns record = eventRecordTime(view);
  std::vector<CallChange> changed;
  for (std::size_t b = 0; b < host.barriers.size(); ++b) {
    if (needs[b] == SyncNeed::kDeferrable) {
      changed.push_back({host.barriers[b].call, true, host.barriers[b].own, -record});
    }
  }
  return changed;
}

// Other threads' calls that an allocation or free held in the driver, where the fix moves the
// holder. An allocation or free call of kHoldingCallNs or more holds the context's lock
// (allocation_holds.h); another thread's launch or asynchronous copy or memset that began inside
// it, or was in the driver when it began, and returned only after it ended waited for it all
// along (in lab g000318 main's 1.6 MB upload, begun 54-74 µs before the worker's `cudaFree`
// drained the device, returned 17-35 µs after that free in each of the five kept runs, taking
// 94-107 µs where the same call took 8-25 µs in the other steps). Once the holder's thread loses
// a synchronize before it, the holder runs at another time, and the held call returns as its own
// time allows: it gets back what it spent from its start (the holder's, where it began before it)
// to the holder's return (callsHeldBy), where the fixed schedule no longer begins it inside the
// holder (heldNoLonger).
std::vector<HeldCall> heldByMovedAllocations(const DeviceView& view, const HostTimeline& host,
                                             const std::vector<SyncNeed>& needs) {
  // Per thread: the start of its first removable synchronize.
  std::map<std::pair<std::uint32_t, std::uint32_t>, Ns> first_removed;
  for (std::size_t b = 0; b < host.barriers.size(); ++b) {
    if (needs[b] != SyncNeed::kRemovable) continue;
    const RuntimeCall& c = view.call(host.barriers[b].call);
    const auto [it, added] = first_removed.try_emplace({c.pid, c.tid}, c.start);
    if (!added) it->second = std::min(it->second, c.start);
  }
  std::vector<Hold> moved;
  for (std::size_t call : view.calls()) {
    if (view.callKind(call) != ApiKind::kAllocation) continue;
    const RuntimeCall& c = view.call(call);
    const auto removed = first_removed.find({c.pid, c.tid});
    if (c.end - c.start < kHoldingCallNs || removed == first_removed.end() || removed->second > c.start) continue;
    moved.push_back({c.start, c.end, c.start, c.pid, c.tid, call});
  }
  return callsHeldBy(view, Holds(std::move(moved)));
}

// How soon after another thread's pageable copy call returned an allocation or free call it held
// returns: the driver serves the held call once the copy lets go of the context. Over the lab
// corpus's kept runs (five per program), of the 85 allocation and free calls of kHoldingCallNs or
// more that were in progress when another thread's pageable copy call returned, 53 returned 20-80
// µs after the latest such return (g000260's 23-64 µs), 4 sooner, and the other 28 spread thinly
// from 80 µs to beyond 300, where the copy's return is chance. 70-300 µs move the same cases;
// 50 leaves some of g000260's held calls out (claimed 326 µs for 30).
constexpr Ns kHeldReturnNs = 100'000;

// Allocation and free calls that another thread's pageable copy held in the driver, as changes
// that make each wait for that copy's op as well: a call of kHoldingCallNs or more that was in
// progress when another thread's pageable cudaMemcpy(Async) returned and itself returned within
// kHeldReturnNs after it (lab g000260: each step's cudaMallocHost, cudaMalloc and cudaFree of two
// worker threads, 78 µs to 4.1 ms, returned 23-64 µs after the main thread's or worker 2's 4-6 MB
// pageable copy). Its own time after the copy's op ended stays as recorded, so the recorded program
// replays unchanged; a thread that runs ahead (a deferred synchronize) reaches the call sooner and
// still waits there for the copy, where its recorded own time had let it return that much sooner.
std::vector<CallChange> heldByPageableCopies(const DeviceView& view, const HostTimeline& host) {
  struct CopyReturn {
    Ns end;                // when the copy's call returned
    std::size_t position;  // the copy's op
    std::size_t call;      // its launch call
  };
  std::vector<CopyReturn> returns;
  for (const std::uint32_t pos : view.pageableCopyPositions()) {
    if (const auto call = view.launchCall(view.op(view.ops()[pos]))) {
      returns.push_back({view.call(*call).end, pos, *call});
    }
  }
  if (returns.empty()) return {};
  std::sort(returns.begin(), returns.end(), [](const CopyReturn& a, const CopyReturn& b) {
    return std::tie(a.end, a.position) < std::tie(b.end, b.position);
  });
  std::vector<CallChange> changed;
  for (const HostBarrier& barrier : host.barriers) {
    if (view.callKind(barrier.call) != ApiKind::kAllocation) continue;
    const RuntimeCall& a = view.call(barrier.call);
    if (a.end - a.start < kHoldingCallNs) continue;
    // The latest return of another thread's pageable copy inside the call, within kHeldReturnNs of its end.
    auto it = std::upper_bound(returns.begin(), returns.end(), a.end,
                               [](Ns t, const CopyReturn& r) { return t < r.end; });
    std::int64_t holder = -1;
    while (it != returns.begin()) {
      --it;
      if (it->end <= a.start || a.end - it->end > kHeldReturnNs) break;
      const RuntimeCall& c = view.call(it->call);
      if (c.pid == a.pid && c.tid != a.tid) {
        holder = static_cast<std::int64_t>(it->position);
        break;
      }
    }
    if (holder < 0) continue;
    // Only where the copy's op ended later than what the call waited for as recorded.
    const Ns own = a.end - view.ops()[static_cast<std::size_t>(holder)].end;
    if (own < 0 || own >= barrier.own) continue;
    changed.push_back({barrier.call, true, own, 0, holder});
  }
  return changed;
}

// `changed` and `earlier` with other threads' calls that an allocation or free the schedule of
// `model` (host timeline `timeline`) moves onto running device work holds returning with it
// (addForwardHolds, settled as turns are: kTurnRounds); `times`, when the last schedule ran the
// host. Returns its span.
Ns settleForwardHolds(const DeviceView& view, const HostTimeline& timeline, const ScheduleModel& model,
                      const std::vector<OrderEdge>& waits, std::vector<CallChange>& changed,
                      std::vector<Ns>& earlier, ScheduledHost& times) {
  Ns span = spanWithTurns(model, HostTurns{}, waits, earlier, {}, changed, &times);
  const bool allocations = std::any_of(timeline.barriers.begin(), timeline.barriers.end(), [&](const HostBarrier& b) {
    return view.callKind(b.call) == ApiKind::kAllocation;
  });
  if (!allocations) return span;  // nothing to hold (addForwardHolds' holders)
  HostTurns turns;
  recordLaunchCalls(view, {}, turns);
  for (const HostBarrier& barrier : timeline.barriers) {
    turns.call_thread[barrier.call] = threadKey(view.call(barrier.call));
  }
  std::vector<std::uint8_t> candidate = forwardHoldCandidates(view);
  for (int round = 0; round < kTurnRounds; ++round) {
    if (!addForwardHolds(view, timeline, turns, times, candidate, changed, earlier)) break;
    span = spanWithTurns(model, HostTurns{}, waits, earlier, {}, changed, &times);
  }
  return span;
}

// The deferred schedule's span with its forward holds (settleForwardHolds), its kernels left
// alone taking their alone durations.
Ns deferredSpan(const DeviceView& view, const HostTimeline& timeline, const ScheduleModel& deferred,
                const std::vector<OrderEdge>& waits, std::vector<CallChange> recorded,
                ScheduledHost& times) {
  std::vector<Ns> earlier;
  const Ns span = settleForwardHolds(view, timeline, deferred, waits, recorded, earlier, times);
  const std::vector<FasterOp> faster = kernelsLeftAlone(view, times);
  return faster.empty() ? span
                        : spanWithTurns(deferred, HostTurns{}, waits, earlier, faster, recorded, &times);
}

// The deferral's saving: the recorded program's schedule (`model`, its blocking calls of
// `held` as they say) less the deferred one's, less the replay's own error that the deferred
// schedule does not carry (replay_error.h: where the before runs longer than the trace because
// it queues kernels the hardware ran side by side, the deferred thread no longer waiting for
// them takes that lateness off the after's critical path, a time the fixed program never had to
// give back). Both schedules have the same nodes: the ops, then the same blocking calls.
Ns deferralSaving(const DeviceView& view, const ScheduleModel& model, const HostTimeline& timeline,
                  const ScheduleModel& deferred, const std::vector<OrderEdge>& waits,
                  const std::vector<CallChange>& held, const std::vector<CallChange>& recorded) {
  ScheduledHost after;
  const Ns after_span = deferredSpan(view, timeline, deferred, waits, recorded, after);
  // The before's host times matter only where it runs longer than the trace (else the plain
  // difference).
  ScheduledHost before;
  const Ns before_span = spanWithTurns(model, HostTurns{}, waits, {}, {}, held, &before);
  if (before_span <= view.spanLength()) return std::max<Ns>(0, before_span - after_span);
  return savingLessReplayError(view, before_span, before, after_span, after);
}

}  // namespace

std::optional<Finding> findBlockingSyncCall(const DeviceView& view) {
  const HostTimeline& host = buildHostTimeline(view);
  const std::vector<SyncNeed> needs = syncNeeds(view, host);
  std::uint64_t idle_only = 0;
  FindingBuilder builder =
      syncInstances(view, host, needs, SyncNeed::kRemovable, "blocking-sync-call", idle_only);
  if (builder.count() == 0) return std::nullopt;
  if (!host.empty()) {
    // Every removable synchronize goes, not only those that blocked while work was in flight: a
    // second synchronize right after the first would otherwise block in their place.
    std::vector<CallChange> removed;
    std::vector<Ns> earlier;
    removalChanges(view, host, needs, removed, earlier);
    // Threads sharing a stream queue their work there in the order the what-if issues it: one
    // that runs ahead without its synchronizes goes before work another thread issues later.
    const ScheduleModel model = ScheduleModel(view, host).withIssueOrder();
    // Both schedules keep the legacy stream's implicit barriers: without its synchronizes a
    // thread runs ahead, but its blocking-stream work still waits for earlier legacy work, and
    // an op the fix queues behind a barrier is released as early-result-wait's deferral releases
    // one (kUnsampledBarrierLagNs where the trace samples no barrier lag).
    const std::vector<OrderEdge> waits = programOrderEdges(view, kUnsampledBarrierLagNs);
    // Other threads' calls that an allocation or free held return sooner where the holder moves.
    heldNoLonger(view, host, model, waits, heldByMovedAllocations(view, host, needs), removed, earlier);
    // Less the replay's error where the fix takes it off the critical path (replay_error.h).
    builder.estimateSaving(savingLessReplayError(view, model, waits, waits, earlier, {}, removed));
  }
  if (builder.time() < kMinimumClaimNs) return std::nullopt;
  if (idle_only == builder.count()) {
    // Every one found the device idle: the fix gives back only the calls' own host time, and a
    // synchronize with nothing to wait for may be deliberate (a timing point): information.
    std::optional<Finding> finding = builder.build(
        fmt::format("{} synchronize calls found no work in flight: each held the host back for its "
                    "own time, delaying the work issued after it",
                    builder.count()),
        "Remove synchronizations that wait for nothing, unless they are deliberate (timing); "
        "where the host needs a result, synchronize only on the event recorded after its work");
    if (finding) finding->severity = finding->base_severity = Severity::kInfo;
    return finding;
  }
  const std::string idle_note =
      idle_only == 0 ? std::string()
                     : fmt::format(" ({} more found none in flight and held it for their own time)",
                                   idle_only);
  return builder.build(
      fmt::format("{} synchronize calls held the host back while the device had work{}: the device "
                  "drained and waited for the host, and work the host could have issued meanwhile "
                  "did not overlap",
                  builder.count() - idle_only, idle_note),
      "Remove synchronizations between GPU work; where the host needs a result, record an event "
      "after the producing work and cudaEventSynchronize on it as late as possible, or express the "
      "dependency on the GPU with cudaStreamWaitEvent");
}

std::optional<Finding> findEarlyResultWait(const DeviceView& view) {
  const HostTimeline& host = buildHostTimeline(view);
  if (host.empty()) return std::nullopt;
  std::vector<std::int64_t> read_copies;
  const std::vector<SyncNeed> needs = syncNeeds(view, host, &read_copies);
  std::uint64_t idle_only = 0;
  FindingBuilder builder =
      syncInstances(view, host, needs, SyncNeed::kDeferrable, "early-result-wait", idle_only);
  if (builder.count() == 0) return std::nullopt;
  // As blocking-sync-call's: a deferred synchronize lets its thread run ahead, but a legacy-stream
  // call it issues next (a cudaMemset between steps) still waits for the blocking streams' work.
  // Both models know that order was recorded: such a call that blocked behind another thread's
  // work waited for it, not for its own op, so issued sooner it still waits for that work.
  const std::vector<OrderEdge> waits = programOrderEdges(view, kUnsampledBarrierLagNs);
  // Allocation and free calls another thread's pageable copy held return after it in both
  // schedules: a thread that runs ahead still waits there.
  const std::vector<CallChange> held = heldByPageableCopies(view, host);
  // In the deferred schedule another thread's free waits for the deferred thread's next steps that
  // it now submits before the free began (withWideWaits): g000088's worker queued its second step
  // before the main thread's cudaFree, which waited for it (the recorded program shows such a free
  // waiting 0.9 ms for the worker's step queued before it). The recorded program replays unchanged.
  std::vector<CallChange> recorded = eventRecordsAdded(view, host, needs);
  recorded.insert(recorded.end(), held.begin(), held.end());
  // A cudaMemset into device memory returns at once: the thread that issues it sooner (the
  // deferred one) gets it ahead of other threads' later blocking-stream work (legacy_barriers.h).
  if (barrierFollowsIssueOrder(view, barrierClasses(view), std::nullopt, false,
                               /*device_memsets=*/true)) {
    // The barrier decided as each schedule issues the work (withBarrierIssueOrder): the deferred
    // thread's next steps, submitted before another thread's legacy-stream work, run before it,
    // and that work waits for them, where the recorded edges kept them behind it. The recorded
    // program is issued at its recorded submissions; the deferred one each op as much sooner as
    // it is released sooner than there, so the replay's own error reorders nothing.
    const std::vector<std::int64_t> classes = barrierClasses(view);
    const BarrierIssue issued = barrierIssueTimes(view);
    const ScheduleModel model = ScheduleModel(view, host, waits).withBarrierIssueOrder(classes, issued);
    const HostTimeline timeline = deferredTimeline(view, host, needs, read_copies);
    const ScheduleModel deferred = ScheduleModel(view, timeline, waits)
                                       .withBarrierIssueOrder(classes, issued, model.issueReleases(waits))
                                       .withWideWaits();
    builder.estimateSaving(deferralSaving(view, model, timeline, deferred, waits, held, recorded));
  } else {
    const ScheduleModel model(view, host, waits);
    const HostTimeline timeline = deferredTimeline(view, host, needs, read_copies);
    const ScheduleModel deferred = ScheduleModel(view, timeline, waits).withWideWaits();
    builder.estimateSaving(deferralSaving(view, model, timeline, deferred, waits, held, recorded));
  }
  if (builder.time() < kMinimumClaimNs) return std::nullopt;
  return builder.build(
      fmt::format("{} synchronize calls waited for a result right after its copy was issued: the "
                  "device drained before the host issued the next step",
                  builder.count()),
      "Double-buffer the result: copy step i into one of two pinned buffers and record an event, "
      "then wait on step i - 1's event (cudaEventSynchronize) and read its buffer, so that the "
      "device runs step i while the host handles step i - 1; if the host reads the result only "
      "later, drop the synchronize");
}

}  // namespace cuoverlap::diagnosis
