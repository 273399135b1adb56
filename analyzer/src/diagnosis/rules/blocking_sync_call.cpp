// blocking-sync-call: cudaDeviceSynchronize / cudaStreamSynchronize / cudaEventSynchronize (and
// the driver's cuCtx/cuStream/cuEventSynchronize) called while GPU work was in flight (the device
// was busy at some point during the call) and followed by more GPU work.
// Cost of each call: the device idle time from the moment the device drained (the start of the
// idle interval in which the call returned; never before the call began) to the start of the next
// op that started after the call returned: the device drained and then waited for the host. Idle
// time is charged to the first such call only. A call that cost less than 10 µs is not counted;
// a synchronize followed by no GPU work costs nothing.
// Needs: runtime calls.
#include <algorithm>

#include <fmt/format.h>

#include "cuoverlap/units.h"
#include "diagnosis/finding_builder.h"
#include "diagnosis/rules/rules.h"

namespace cuoverlap::diagnosis {

std::optional<Finding> findBlockingSyncCall(const DeviceView& view) {
  FindingBuilder builder(view, "blocking-sync-call", Severity::kWarning);
  Ns charged_until = view.spanStart();
  for (std::size_t index : view.calls()) {
    if (!isExplicitSync(view.callKind(index))) continue;
    const RuntimeCall& call = view.call(index);
    const Ns call_from = std::max(call.start, view.spanStart());
    const Ns call_to = std::min(call.end, view.spanEnd());
    const bool work_in_flight =
        call_to > call_from && view.idleWithin(call_from, call_to) < call_to - call_from;
    const auto next = view.firstOpStartingAtOrAfter(call.end);
    if (!work_in_flight || !next) continue;
    // Idle time already charged to an earlier call is not charged again.
    const Ns from = std::max({call.start, view.idleSince(call.end), charged_until});
    const Ns next_start = view.ops()[*next].start;
    const Ns cost = from < next_start ? view.idleWithin(from, next_start) : 0;
    charged_until = std::max(charged_until, next_start);
    if (cost < kMinimumCostNs) continue;
    builder.add(cost, evidenceForCall(view, index, 0,
                                      "device idle " + units::formatDuration(cost) + " until the next op"));
  }
  return builder.build(
      fmt::format("{} synchronize calls made the device drain and wait for the host",
                  builder.count()),
      "Remove synchronizations between GPU work; where the host needs a result, record an event "
      "after the producing work and cudaEventSynchronize on it as late as possible, or express the "
      "dependency on the GPU with cudaStreamWaitEvent");
}

}  // namespace cuoverlap::diagnosis
