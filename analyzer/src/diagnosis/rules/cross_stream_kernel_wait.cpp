// cross-stream-kernel-wait: a cudaStreamWaitEvent that made a kernel X wait for a kernel Y of
// another stream (diagnosis/stream_waits.h resolves X and Y) although the two together would have
// left SMs idle: each occupies less than half of the device's SMs (grid blocks / (SM count x
// resident blocks per SM), diagnosis/schedule_estimate.h) and X was ready (launch returned,
// previous op of its stream done) at least 10 µs before it started. Chains of such waits run
// small kernels one after another on a device they could share. A trace cannot tell whether X
// reads what Y wrote (then the wait is needed, and the fix is more parallel work per kernel), so
// the finding is info. event-wait-serialization leaves kernel -> kernel waits alone (a kernel may
// feed a kernel), so no wait is counted by both. Communication kernels (NCCL) are left out: their
// order across streams is the collective order every rank must keep, and their exposure is
// exposed-communication's and communication-serialized's to cost, not SM sharing.
// Cost: how much the span would shrink without these waits: the what-if schedule with every wait
// minus the same schedule without these (diagnosis/schedule_estimate.h); not reported under 10 µs.
// Where: the union of [X ready, X start).
// Needs: synchronization records, launch calls, grid sizes and the device's SM limits.
#include <fmt/format.h>

#include "cuoverlap/communication.h"
#include "diagnosis/finding_builder.h"
#include "diagnosis/rules/rules.h"
#include "diagnosis/schedule_estimate.h"
#include "diagnosis/stream_waits.h"

namespace cuoverlap::diagnosis {
namespace {

constexpr double kMaxShare = 0.5;

bool smallKernel(const DeviceView& view, const CommunicationKernels& communication,
                 const GpuOp& op) {
  return op.kind == OpKind::kKernel && !communication.isCommunication(op) &&
         smShare(view.device(), op) < kMaxShare;
}

}  // namespace

std::optional<Finding> findCrossStreamKernelWait(const DeviceView& view) {
  const Device* device = view.device();
  if (device == nullptr || device->sm_count <= 0) return std::nullopt;
  const std::vector<StreamWait> waits = streamWaits(view);
  if (waits.empty()) return std::nullopt;
  const CommunicationKernels communication(view.trace());
  FindingBuilder builder(view, "cross-stream-kernel-wait", Severity::kInfo);
  std::vector<OrderEdge> kept;
  std::vector<OrderEdge> removed;
  double largest_share = 0.0;
  for (const StreamWait& wait : waits) {
    const ScopedOp released = view.ops()[wait.released];
    const GpuOp& x = view.op(released);
    const auto ready = view.readyTime(wait.released);
    bool counts = ready && released.start - *ready >= kMinimumCostNs && !wait.waited_for.empty() &&
                  smallKernel(view, communication, x);
    for (std::size_t y : wait.waited_for) {
      counts = counts && smallKernel(view, communication, view.op(view.ops()[y]));
    }
    auto& edges = counts ? removed : kept;
    for (std::size_t y : wait.waited_for) edges.push_back({y, wait.released});
    if (!counts) continue;
    const GpuOp& y = view.op(view.ops()[wait.waited_for.back()]);
    largest_share = std::max({largest_share, smShare(device, x), smShare(device, y)});
    builder.add(Interval{*ready, released.start},
                evidenceForOp(view, x,
                              fmt::format("{} ({} blocks) waited for {} ({} blocks) on stream {}",
                                          describeOp(view, x), x.grid_blocks, describeOp(view, y),
                                          y.grid_blocks, y.stream_id)));
  }
  if (builder.count() == 0) return std::nullopt;
  const Ns saving = ScheduleModel(view, buildHostTimeline(view)).savingWithout(kept, removed);
  if (saving < kMinimumCostNs) return std::nullopt;  // the waits cost nothing
  builder.estimateSaving(saving);
  return builder.build(
      fmt::format("{} cudaStreamWaitEvent waits ran kernels of different streams one after "
                  "another, though none of them filled more than {:.0f}% of the SMs",
                  builder.count(), 100.0 * largest_share),
      "If the waiting kernel does not read what the other one wrote, drop the wait (record one "
      "event per produced buffer and wait only for those) so the kernels share the device; if it "
      "does, give each kernel more parallel work (larger batches, fused kernels) or capture the "
      "chain in a CUDA graph");
}

}  // namespace cuoverlap::diagnosis
