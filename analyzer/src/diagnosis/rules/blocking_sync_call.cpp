// blocking-sync-call: cudaDeviceSynchronize / cudaStreamSynchronize / cudaEventSynchronize (and
// the driver's cuCtx/cuStream/cuEventSynchronize) called while GPU work was in flight (the device
// was busy at some point during the call) and followed by more GPU work.
// Cost of each call: the device idle time from the moment the device drained (the start of the
// idle interval in which the call returned; never before the call began) to the start of the next
// op that started after the call returned: the device drained and then waited for the host. A call that
// cost less than 10 µs is not counted; a synchronize followed by no GPU work costs nothing.
// Needs: runtime calls.
#include <algorithm>

#include <fmt/format.h>

#include "diagnosis/finding_builder.h"
#include "diagnosis/rules/rules.h"

namespace cuoverlap::diagnosis {

std::optional<Finding> findBlockingSyncCall(const DeviceView& view) {
  FindingBuilder builder(view, "blocking-sync-call", Severity::kWarning);
  for (std::size_t index : view.calls()) {
    if (!isExplicitSync(view.callKind(index))) continue;
    const RuntimeCall& call = view.call(index);
    const Ns from = std::max(call.start, view.spanStart());
    const Ns to = std::min(call.end, view.spanEnd());
    const bool work_in_flight = to > from && view.idleWithin(from, to) < to - from;
    const auto next = view.firstOpStartingAtOrAfter(call.end);
    if (!work_in_flight || !next) continue;
    const Ns cost = view.idleWithin(std::max(call.start, view.idleSince(call.end)),
                                    view.ops()[*next].start);
    if (cost < kMinimumCostNs) continue;
    builder.add(cost, evidenceForCall(view, index, 0,
                                      fmt::format("device idle {} ns until the next op", cost)));
  }
  return builder.build(
      fmt::format("{} synchronize calls made the device drain and wait for the host",
                  builder.count()),
      "Remove synchronizations between GPU work; where the host needs a result, record an event "
      "after the producing work and cudaEventSynchronize on it as late as possible, or express the "
      "dependency on the GPU with cudaStreamWaitEvent");
}

}  // namespace cuoverlap::diagnosis
