// blocking-sync-call: cudaDeviceSynchronize / cudaStreamSynchronize / cudaEventSynchronize (and
// the driver's cuCtx/cuStream/cuEventSynchronize) called while GPU work was in flight (the device
// busy for at least 1 µs during the call) and followed by more GPU work, except those the host
// needs (needed_syncs.h: a synchronize that brings a DtoH copy's result back, or orders a
// synchronous copy after other streams' work): their fix is to wait later, not to remove them.
// Cost: how much sooner the work would end without these calls, from the what-if schedule with
// the host modelled (schedule_estimate.h, host_timeline.h): the span as recorded minus the span
// with every such call waiting for nothing. That counts both the device idle after each drain and
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

std::optional<Finding> findBlockingSyncCall(const DeviceView& view) {
  const HostTimeline host = buildHostTimeline(view);
  const std::vector<bool> needed = neededSyncs(view, host);
  std::vector<std::size_t> kept;  // synchronizes the host needs, sorted by call
  for (std::size_t b = 0; b < host.barriers.size(); ++b) {
    if (needed[b]) kept.push_back(host.barriers[b].call);
  }
  std::sort(kept.begin(), kept.end());
  FindingBuilder builder(view, "blocking-sync-call", Severity::kWarning);
  for (const HostBlockingCharge& charge : chargeHostBlockingCalls(view)) {
    if (!isExplicitSync(view.callKind(charge.call))) continue;
    if (std::binary_search(kept.begin(), kept.end(), charge.call)) continue;
    builder.add(charge.idle,
                evidenceForCall(view, charge.call, 0,
                                fmt::format("blocked {} while the device had work, then {} after "
                                            "it drained; the device idled {} that the next op "
                                            "could have been spared",
                                            units::formatDuration(charge.lead),
                                            units::formatDuration(charge.drain),
                                            units::formatDuration(charge.idle.length()))));
  }
  if (builder.count() == 0) return std::nullopt;
  if (!host.empty()) {
    // Every explicit synchronize the host does not need goes, not only those that blocked while
    // work was in flight: a second synchronize right after the first would otherwise block in
    // their place.
    std::vector<CallChange> removed;
    for (std::size_t b = 0; b < host.barriers.size(); ++b) {
      const HostBarrier& barrier = host.barriers[b];
      if (isExplicitSync(view.callKind(barrier.call)) && !needed[b]) {
        removed.push_back({barrier.call, false, 0});
      }
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

}  // namespace cuoverlap::diagnosis
