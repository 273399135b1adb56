// blocking-sync-call: cudaDeviceSynchronize / cudaStreamSynchronize / cudaEventSynchronize (and
// the driver's cuCtx/cuStream/cuEventSynchronize) called while GPU work was in flight (the device
// busy for at least 1 µs during the call) and followed by more GPU work.
// Cost of each call (host_blocking_cost.cpp): the device idle time after the drain that the next
// op could have been spared had the host not blocked: from the drain to the next op, capped at the
// call's lead (time blocked while the device still had work) plus its drain (time blocked after
// the device went idle). CPU work after the call returned is not charged beyond that; idle time
// goes to the first blocking call only (shared with implicit-sync-call, sync-memcpy, sync-memset).
// Calls charged less than 10 µs are not counted.
// Needs: runtime calls.
#include <fmt/format.h>

#include "cuoverlap/units.h"
#include "diagnosis/finding_builder.h"
#include "diagnosis/rules/host_blocking_cost.h"
#include "diagnosis/rules/rules.h"

namespace cuoverlap::diagnosis {

std::optional<Finding> findBlockingSyncCall(const DeviceView& view) {
  FindingBuilder builder(view, "blocking-sync-call", Severity::kWarning);
  for (const HostBlockingCharge& charge : chargeHostBlockingCalls(view)) {
    if (!isExplicitSync(view.callKind(charge.call))) continue;
    if (charge.idle.length() < kMinimumCostNs) continue;
    builder.add(charge.idle,
                evidenceForCall(view, charge.call, 0,
                                fmt::format("blocked {} while the device had work, then {} after "
                                            "it drained; the device idled {} that the next op "
                                            "could have been spared",
                                            units::formatDuration(charge.lead),
                                            units::formatDuration(charge.drain),
                                            units::formatDuration(charge.idle.length()))));
  }
  return builder.build(
      fmt::format("{} synchronize calls made the device drain and wait for the host",
                  builder.count()),
      "Remove synchronizations between GPU work; where the host needs a result, record an event "
      "after the producing work and cudaEventSynchronize on it as late as possible, or express the "
      "dependency on the GPU with cudaStreamWaitEvent");
}

}  // namespace cuoverlap::diagnosis
