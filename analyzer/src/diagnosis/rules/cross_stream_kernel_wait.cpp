// cross-stream-kernel-wait: a cudaStreamWaitEvent that made a kernel X wait for a kernel Y of
// another stream (diagnosis/stream_waits.h resolves X and Y) although X was ready (StreamWait::
// ready) at least 10 µs before it started; the fix drops the call, so the other rounds of that call
// site (same event, same stream) count too, however briefly they held their kernel
// (roundsOfHeldSites in diagnosis/stream_waits.h; evidence: the rounds that held). Chains of such
// waits run kernels one after another on a device they could share; whether they could is the
// what-if's to say (each kernel takes its SM share, a kernel still placing blocks holds later ones
// back: diagnosis/schedule_estimate.h), so two device-filling kernels cost nothing and a full
// kernel behind a long one-block kernel costs what running beside it saves. A wait that guards a
// copy's buffer (the only order from the
// kernel reading an HtoD copy to the next copy into its buffer: guardsBufferReuse in
// diagnosis/stream_waits.h) is no fix and is not counted. A trace cannot tell whether X
// reads what Y wrote (then the wait is needed, and the fix is more parallel work per kernel), so
// the finding is info. event-wait-serialization leaves kernel -> kernel waits alone (a kernel may
// feed a kernel), so no wait is counted by both. Communication kernels (NCCL) are left out: their
// order across streams is the collective order every rank must keep, and their exposure is
// exposed-communication's and communication-serialized's to cost, not SM sharing.
// Cost: how much the span would shrink without these waits: the what-if schedule with every wait
// (also as its recorded constraints) minus the same schedule without these
// (diagnosis/schedule_estimate.h); not reported under 10 µs. Each wait releases its kernel the
// lag the trace shows for such waits after the kernel it waited for ended (StreamWait::
// release_lag), which dropping it gives back too; the legacy stream's implicit barriers
// (diagnosis/legacy_barriers.h) stay in both schedules: they order the program whatever its waits.
// A kernel that ran slowed beside kernels holding SM slots it needed takes its alone run in a
// schedule that runs it beside none of them (diagnosis/kernels_alone.h, both schedules).
// Where: the union of [X ready, X start).
// Needs: synchronization records, launch calls, grid sizes and the device's SM limits.
#include <fmt/format.h>

#include <algorithm>

#include "cuoverlap/communication.h"
#include "diagnosis/data_order.h"
#include "diagnosis/finding_builder.h"
#include "diagnosis/kernels_alone.h"
#include "diagnosis/legacy_barriers.h"
#include "diagnosis/rules/rules.h"
#include "diagnosis/schedule_estimate.h"
#include "diagnosis/stream_waits.h"

namespace cuoverlap::diagnosis {
namespace {

bool computeKernel(const CommunicationKernels& communication, const GpuOp& op) {
  return op.kind == OpKind::kKernel && !communication.isCommunication(op);
}

}  // namespace

std::optional<Finding> findCrossStreamKernelWait(const DeviceView& view) {
  const Device* device = view.device();
  if (device == nullptr || device->sm_count <= 0) return std::nullopt;
  const std::vector<StreamWait> waits = streamWaits(view);
  if (waits.empty()) return std::nullopt;
  const CommunicationKernels communication(view.trace());
  std::vector<bool> between_kernels(waits.size(), false);
  std::vector<bool> held(waits.size(), false);
  for (std::size_t w = 0; w < waits.size(); ++w) {
    const StreamWait& wait = waits[w];
    const ScopedOp released = view.ops()[wait.released];
    bool kernels = !wait.waited_for.empty() && computeKernel(communication, view.op(released));
    for (std::size_t y : wait.waited_for) {
      kernels = kernels && computeKernel(communication, view.op(view.ops()[y]));
    }
    between_kernels[w] = kernels;
    held[w] = wait.ready && released.start - *wait.ready >= kMinimumCostNs;
  }
  // Every round of a call site that held its kernel back once (roundsOfHeldSites).
  const std::vector<bool> counts = roundsOfHeldSites(waits, between_kernels, held);
  // With the memory each op touched recorded, whether X reads what Y wrote is known
  // (diagnosis/data_order.h): the waits that order no data dependence are dropped for certain. A
  // wait whose data order is unsure (slices of one buffer) is judged by the reuse guard, as without
  // op buffers; the finding is a warning that the kernels share no memory only when the data
  // decided every wait.
  const auto reuse = [&] { return guardsBufferReuse(view, waits, counts); };
  bool with_buffers = recordsOpBuffers(view);
  const std::vector<bool> guards =
      with_buffers ? waitsToKeep(waitsOrderingData(view, waits, counts), reuse, &with_buffers) : reuse();
  FindingBuilder builder(view, "cross-stream-kernel-wait", with_buffers ? Severity::kWarning : Severity::kInfo);
  std::vector<OrderEdge> kept;
  std::vector<OrderEdge> removed;
  for (std::size_t w = 0; w < waits.size(); ++w) {
    const StreamWait& wait = waits[w];
    const ScopedOp released = view.ops()[wait.released];
    const GpuOp& x = view.op(released);
    const bool dropped = counts[w] && !guards[w];
    auto& edges = dropped ? removed : kept;
    for (std::size_t y : wait.waited_for) edges.push_back({y, wait.released, wait.release_lag});
    if (!dropped || !held[w]) continue;
    const GpuOp& y = view.op(view.ops()[wait.waited_for.back()]);
    builder.add(Interval{*wait.ready, released.start},
                evidenceForOp(view, x,
                              fmt::format("{} ({} blocks) waited for {} ({} blocks) on stream {}{}",
                                          describeOp(view, x), x.grid_blocks, describeOp(view, y),
                                          y.grid_blocks, y.stream_id,
                                          with_buffers ? ", though neither touches memory the other writes" : "")));
  }
  if (builder.count() == 0) return std::nullopt;
  const std::vector<OrderEdge> barriers = legacyBarrierEdges(view);
  kept.insert(kept.end(), barriers.begin(), barriers.end());
  std::vector<OrderEdge> recorded = kept;
  recorded.insert(recorded.end(), removed.begin(), removed.end());
  const ScheduleModel model(view, buildHostTimeline(view), recorded);
  const Ns saving = std::max<Ns>(
      0, spanFreedOfSlotHolders(view, model, recorded) - spanFreedOfSlotHolders(view, model, kept));
  if (saving < kMinimumClaimNs) return std::nullopt;  // the waits cost nothing
  builder.estimateSaving(saving);
  if (with_buffers) {
    return builder.build(
        fmt::format("{} cudaStreamWaitEvent waits ran kernels of different streams one after another "
                    "that share no memory, though side by side they would have shared the SMs",
                    builder.count()),
        "Drop these waits (or record one event per produced buffer and wait only for the buffers "
        "each kernel reads) so the kernels share the device");
  }
  return builder.build(
      fmt::format("{} cudaStreamWaitEvent waits ran kernels of different streams one after "
                  "another, though side by side they would have shared the SMs",
                  builder.count()),
      "If the waiting kernel does not read what the other one wrote, drop the wait (record one "
      "event per produced buffer and wait only for those) so the kernels share the device; if it "
      "does, give each kernel more parallel work (larger batches, fused kernels) or capture the "
      "chain in a CUDA graph");
}

}  // namespace cuoverlap::diagnosis
