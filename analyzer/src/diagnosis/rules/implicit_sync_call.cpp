// implicit-sync-call: calls that synchronize the device implicitly (cudaMalloc, cudaFree,
// cudaMallocHost, cudaHostAlloc, cudaFreeHost, cudaHostRegister/Unregister and their driver
// equivalents) made while GPU work was in flight (the device busy for at least 1 µs during the
// call) and followed by more GPU work. Synchronous memsets are sync-memset's.
// Cost of each call: as blocking-sync-call (host_blocking_cost.cpp): the idle time after the drain
// that the next op could have been spared, capped at the call's lead plus its drain, charged to
// the first blocking call only. Calls charged less than 10 µs are not counted.
// Needs: runtime calls.
#include <fmt/format.h>

#include "cuoverlap/units.h"
#include "diagnosis/finding_builder.h"
#include "diagnosis/rules/host_blocking_cost.h"
#include "diagnosis/rules/rules.h"

namespace cuoverlap::diagnosis {

std::optional<Finding> findImplicitSyncCall(const DeviceView& view) {
  FindingBuilder builder(view, "implicit-sync-call", Severity::kWarning);
  for (const HostBlockingCharge& charge : chargeHostBlockingCalls(view)) {
    if (view.callKind(charge.call) != ApiKind::kAllocation) continue;
    if (charge.idle.length() < kMinimumCostNs) continue;
    builder.add(charge.idle,
                evidenceForCall(view, charge.call, 0,
                                fmt::format("waited {} for work in flight, then {} after the "
                                            "device drained; the device idled {} that the next "
                                            "op could have been spared",
                                            units::formatDuration(charge.lead),
                                            units::formatDuration(charge.drain),
                                            units::formatDuration(charge.idle.length()))));
  }
  return builder.build(
      fmt::format("{} allocation or free calls between GPU work synchronized the device "
                  "implicitly",
                  builder.count()),
      "Allocate and pin buffers once before the GPU work and free them after it, or use the "
      "stream-ordered allocator (cudaMallocAsync/cudaFreeAsync)");
}

}  // namespace cuoverlap::diagnosis
