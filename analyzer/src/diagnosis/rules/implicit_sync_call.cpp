// implicit-sync-call: allocation and free calls between GPU work (cudaMalloc, cudaFree,
// cudaMallocHost, cudaHostAlloc, cudaFreeHost, cudaHostRegister/Unregister, cudaMallocManaged
// and their driver equivalents, made after the device's first op started and before its last op
// started). They synchronize the device implicitly, or at least hold their thread for their own
// time (pinning pages for cudaMallocHost takes milliseconds for large buffers) while the device
// waits for the next launch. Synchronous memsets are sync-memset's.
// Fix (the lab's transform hoist-alloc): allocate once before the GPU work and free after it.
// Cost: from the what-if schedule with the host modelled (schedule_estimate.h, host_timeline.h:
// each such call is a barrier that waits for the work its process had issued, or for nothing when
// it returned before that ended): the span as recorded minus the span with these calls gone (no
// wait, no time of their own). Where (ledger): per call, the call's own time and the device idle
// time after the drain that the next op could have been spared (host_blocking_cost.cpp).
// Not reported under 10 µs; info under 5% of the span, a warning from there.
// Needs: runtime calls.
#include <fmt/format.h>

#include "cuoverlap/units.h"
#include "diagnosis/finding_builder.h"
#include "diagnosis/rules/host_blocking_cost.h"
#include "diagnosis/rules/rules.h"
#include "diagnosis/schedule_estimate.h"
#include "diagnosis/stream_waits.h"

namespace cuoverlap::diagnosis {
namespace {

// Below this share of the span the finding is info: allocations a framework makes while it sets
// up (pinned staging buffers, the caching allocator growing) cost little next to the run.
constexpr double kWarningShareOfSpan = 0.05;

// The allocation calls between GPU work: after the first op started, before the last op started.
std::vector<std::size_t> allocationCalls(const DeviceView& view) {
  Ns last_start = 0;
  for (const ScopedOp& scoped : view.ops()) last_start = std::max(last_start, scoped.start);
  std::vector<std::size_t> calls;
  for (std::size_t call : view.calls()) {
    const RuntimeCall& c = view.call(call);
    if (view.callKind(call) != ApiKind::kAllocation) continue;
    if (c.start >= view.spanStart() && c.start < last_start) calls.push_back(call);
  }
  return calls;
}

}  // namespace

std::optional<Finding> findImplicitSyncCall(const DeviceView& view) {
  const std::vector<std::size_t> calls = allocationCalls(view);
  if (calls.empty()) return std::nullopt;
  const HostTimeline host = buildHostTimeline(view);
  if (host.empty()) return std::nullopt;
  std::vector<CallChange> removed;
  for (std::size_t call : calls) removed.push_back({call, false, 0});
  const ScheduleModel model(view, host);
  const std::vector<OrderEdge> waits = waitEdges(streamWaits(view));
  const Ns saving = std::max<Ns>(0, model.span(waits) - model.span(waits, {}, {}, removed));
  if (saving < kMinimumCostNs) return std::nullopt;
  const bool warn = static_cast<double>(saving) >=
                    kWarningShareOfSpan * static_cast<double>(view.spanLength());
  FindingBuilder builder(view, "implicit-sync-call", warn ? Severity::kWarning : Severity::kInfo);
  const std::vector<HostBlockingCharge> charges = chargeHostBlockingCalls(view);
  for (std::size_t call : calls) {
    const RuntimeCall& c = view.call(call);
    const HostBlockingCharge* charge = chargeOf(charges, call);
    const bool drained = charge != nullptr && charge->idle.length() > 0;
    const std::string detail =
        drained ? fmt::format("waited {} for work in flight, then {} after the device drained; the "
                              "device idled {} that the next op could have been spared",
                              units::formatDuration(charge->lead),
                              units::formatDuration(charge->drain),
                              units::formatDuration(charge->idle.length()))
                : fmt::format("took {} between GPU work", units::formatDuration(c.end - c.start));
    builder.add(Interval{c.start, c.end}, evidenceForCall(view, call, 0, detail));
    if (drained) builder.addRegion(charge->idle);
  }
  builder.estimateSaving(saving);
  return builder.build(
      fmt::format("{} allocation or free calls between GPU work synchronized the device or held "
                  "the host while the device waited for the next launch",
                  builder.count()),
      "Allocate and pin buffers once before the GPU work and free them after it, or use the "
      "stream-ordered allocator (cudaMallocAsync/cudaFreeAsync)");
}

}  // namespace cuoverlap::diagnosis
