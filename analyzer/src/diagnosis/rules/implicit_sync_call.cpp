// implicit-sync-call: calls that synchronize the device implicitly (cudaMalloc, cudaFree,
// cudaMallocHost, cudaHostAlloc, cudaFreeHost, cudaHostRegister/Unregister, their driver
// equivalents, and synchronous memsets) issued between GPU work: after the first op of the device
// started and before the last op started.
// Cost of each call: the device idle time from the moment the device drained (the start of the
// idle interval in which the call returned; never before the call began) to the start of the next
// op that started after the call returned (idle time is charged to the first such call only).
// Needs: runtime calls.
#include <algorithm>

#include <fmt/format.h>

#include "cuoverlap/units.h"
#include "diagnosis/finding_builder.h"
#include "diagnosis/rules/rules.h"

namespace cuoverlap::diagnosis {

std::optional<Finding> findImplicitSyncCall(const DeviceView& view) {
  FindingBuilder builder(view, "implicit-sync-call", Severity::kWarning);
  Ns charged_until = view.spanStart();
  for (std::size_t index : view.calls()) {
    const ApiKind kind = view.callKind(index);
    if (kind != ApiKind::kAllocation && kind != ApiKind::kMemsetSync) continue;
    const RuntimeCall& call = view.call(index);
    if (view.empty() || call.start <= view.spanStart()) continue;
    const auto next = view.firstOpStartingAtOrAfter(call.end);
    if (!next) continue;
    // Idle time already charged to an earlier call is not charged again.
    const Ns from = std::max({call.start, view.idleSince(call.end), charged_until});
    const Ns next_start = view.ops()[*next].start;
    const Ns cost = from < next_start ? view.idleWithin(from, next_start) : 0;
    charged_until = std::max(charged_until, next_start);
    builder.add(cost, evidenceForCall(view, index, 0,
                                      "device idle " + units::formatDuration(cost) + " until the next op"));
  }
  return builder.build(
      fmt::format("{} allocation, free or memset calls between GPU work synchronize the device "
                  "implicitly",
                  builder.count()),
      "Allocate and pin buffers once before the GPU work and free them after it, or use the "
      "stream-ordered allocator (cudaMallocAsync/cudaFreeAsync)");
}

}  // namespace cuoverlap::diagnosis
