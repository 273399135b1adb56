// blocking-sync-call and early-result-wait: cudaDeviceSynchronize / cudaStreamSynchronize / cudaEventSynchronize (and
// the driver's cuCtx/cuStream/cuEventSynchronize) called while GPU work was in flight (the device
// busy for at least 1 µs during the call) and followed by more GPU work, except a synchronize
// that orders a synchronous copy after other streams' work (needed_syncs.h: kKept).
// blocking-sync-call takes the synchronizes that bring nothing back (kRemovable; fix, the lab's
// remove-sync: remove them); early-result-wait those that bring an asynchronous DtoH copy's result
// back (kDeferrable; fix, the lab's defer-read: wait for the previous step's result instead,
// double-buffered).
// Cost: how much sooner the work would end with that fix, from the what-if schedule with the host
// modelled (schedule_estimate.h, host_timeline.h): the span as recorded minus the span with each
// removable call waiting for nothing (blocking-sync-call), or each deferrable one for what the
// thread's previous one waited for (early-result-wait). That counts both the device idle after each drain and
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

#include "diagnosis/finding_builder.h"
#include "diagnosis/needed_syncs.h"
#include "diagnosis/rules/host_blocking_cost.h"
#include "diagnosis/rules/rules.h"
#include "diagnosis/schedule_estimate.h"
#include "diagnosis/stream_waits.h"

namespace cuoverlap::diagnosis {

namespace {

// The explicit synchronizes of `need`, with the idle time each one's drain cost the device.
FindingBuilder syncInstances(const DeviceView& view, const HostTimeline& host,
                             const std::vector<SyncNeed>& needs, SyncNeed need,
                             const std::string& id) {
  std::vector<std::size_t> calls;  // sorted
  for (std::size_t b = 0; b < host.barriers.size(); ++b) {
    if (needs[b] == need) calls.push_back(host.barriers[b].call);
  }
  std::sort(calls.begin(), calls.end());
  FindingBuilder builder(view, id, Severity::kWarning);
  for (const HostBlockingCharge& charge : chargeHostBlockingCalls(view)) {
    if (!std::binary_search(calls.begin(), calls.end(), charge.call)) continue;
    builder.add(charge.idle,
                evidenceForCall(view, charge.call, 0,
                                fmt::format("blocked {} while the device had work, then {} after "
                                            "it drained; the device idled {} that the next op "
                                            "could have been spared",
                                            units::formatDuration(charge.lead),
                                            units::formatDuration(charge.drain),
                                            units::formatDuration(charge.idle.length()))));
  }
  return builder;
}

}  // namespace

std::optional<Finding> findBlockingSyncCall(const DeviceView& view) {
  const HostTimeline host = buildHostTimeline(view);
  const std::vector<SyncNeed> needs = syncNeeds(view, host);
  FindingBuilder builder =
      syncInstances(view, host, needs, SyncNeed::kRemovable, "blocking-sync-call");
  if (builder.count() == 0) return std::nullopt;
  if (!host.empty()) {
    // Every removable synchronize goes, not only those that blocked while work was in flight: a
    // second synchronize right after the first would otherwise block in their place.
    std::vector<CallChange> removed;
    for (std::size_t b = 0; b < host.barriers.size(); ++b) {
      if (needs[b] == SyncNeed::kRemovable) removed.push_back({host.barriers[b].call, false, 0});
    }
    const ScheduleModel model(view, host);
    const std::vector<OrderEdge> waits = waitEdges(streamWaits(view));
    builder.estimateSaving(std::max<Ns>(0, model.span(waits) - model.span(waits, {}, {}, removed)));
  }
  if (builder.time() < kMinimumCostNs) return std::nullopt;
  return builder.build(
      fmt::format("{} synchronize calls held the host back while the device had work: the device "
                  "drained and waited for the host, and work the host could have issued meanwhile "
                  "did not overlap",
                  builder.count()),
      "Remove synchronizations between GPU work; where the host needs a result, record an event "
      "after the producing work and cudaEventSynchronize on it as late as possible, or express the "
      "dependency on the GPU with cudaStreamWaitEvent");
}

std::optional<Finding> findEarlyResultWait(const DeviceView& view) {
  const HostTimeline host = buildHostTimeline(view);
  if (host.empty()) return std::nullopt;
  const std::vector<SyncNeed> needs = syncNeeds(view, host);
  FindingBuilder builder =
      syncInstances(view, host, needs, SyncNeed::kDeferrable, "early-result-wait");
  if (builder.count() == 0) return std::nullopt;
  const ScheduleModel model(view, host);
  const ScheduleModel deferred(view, deferredTimeline(view, host, needs));
  const std::vector<OrderEdge> waits = waitEdges(streamWaits(view));
  builder.estimateSaving(std::max<Ns>(0, model.span(waits) - deferred.span(waits)));
  if (builder.time() < kMinimumCostNs) return std::nullopt;
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
