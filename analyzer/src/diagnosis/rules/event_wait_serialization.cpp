// event-wait-serialization: a cudaStreamWaitEvent that held back an op which could have run
// concurrently with the op it waited for. For each stream-wait-event record (synchronization
// data) on stream S, X is the first op of S launched after the wait was issued. The wait was
// binding when X was ready (StreamWait::ready: launch returned, or began for a call that blocked
// until X ran; previous op of S done) at least 10 µs before it
// started; the fix drops the call, so the other rounds of that call site (same event, same stream)
// count too (roundsOfHeldSites in diagnosis/stream_waits.h; evidence: the rounds that held). Y, the
// op the wait waited for: diagnosis/stream_waits.h (exact from CUDA event records; else every op of
// another stream that ended at most 5 µs before X started, and the wait counts only when none of
// them could explain it; a wait without a producer is skipped). It serialized when X and Y use
// different engines and Y does not feed X in the usual data flow (copy-in -> kernel -> kernel ->
// copy-out): a kernel waiting for its input copy is a
// real dependency; a copy-in waiting for a kernel, or a copy waiting for a copy of another
// direction, is not (a trace cannot tell a buffer-reuse hazard from an unnecessary wait; more
// buffers remove the hazard too). A copy-in's wait for a kernel that only orders the reader of
// its stream's previous copy through kernel -> kernel waits (stream_waits.h: guardsBufferReuse,
// as cross-stream-kernel-wait keeps) stays: it is the reuse guard carried by a chain of waits (lab
// g006050: the chain's next-round copy waits for its last stage, the only order from the kernel
// reading the buffer to the copy overwriting it). Its one-hop form, the copy waiting for that
// very kernel, is counted: one buffer slice per tile makes it unnecessary (the bundled
// streams event-dag-serialized trace).
// Cost: how much the span would shrink without these waits: the what-if schedule of the device's
// ops with every wait minus the same schedule without the serializing ones
// (diagnosis/schedule_estimate.h), the waits also its recorded constraints: a copy whose call
// blocked while a wait held it is released, without the wait, when its call began, and a staged
// (pageable) copy's call that the wait held returns as its copy ends (diagnosis/host_timeline.h),
// so the thread's later work moves up with it. A wait releases
// its op the lag the trace shows for such waits after Y ended (StreamWait::release_lag: 6-12 µs
// from a DtoH copy to an HtoD one on an H100), which dropping it gives back too; the legacy
// stream's implicit barriers (diagnosis/legacy_barriers.h) stay in both schedules: a wait for the
// legacy stream that its barrier orders anyway saves nothing. A kernel that ran slowed beside
// kernels holding SM slots it needed takes its alone run in a schedule that runs it beside none of
// them (diagnosis/kernels_alone.h: kernelsFreedOfSlotHolders, both schedules): a wait that held a
// full-wave kernel back until another thread's few-block kernel was resident made it run a round
// longer, and without the wait it starts first and holds the device only as long as it takes
// alone. Where: the
// union over such waits of [X ready, X start), which the cost ledger charges once across findings. Not reported when the saving is under 10 µs: the
// waits then cost nothing, whatever they protect.
// Needs: synchronization records with stream ids, launch calls; CUDA event records for the exact Y.
#include <fmt/format.h>

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "cuoverlap/communication.h"
#include "diagnosis/data_order.h"
#include "diagnosis/finding_builder.h"
#include "diagnosis/kernels_alone.h"
#include "diagnosis/legacy_barriers.h"
#include "diagnosis/rules/rules.h"
#include "diagnosis/schedule_estimate.h"
#include "diagnosis/stream_waits.h"

namespace cuoverlap::diagnosis {

std::optional<Finding> findEventWaitSerialization(const DeviceView& view) {
  const std::vector<StreamWait> waits = streamWaits(view);
  if (waits.empty()) return std::nullopt;
  FindingBuilder builder(view, "event-wait-serialization", Severity::kWarning);
  std::vector<OrderEdge> kept;
  std::vector<OrderEdge> removed;
  std::vector<bool> serializing(waits.size(), false);
  std::vector<bool> held(waits.size(), false);
  // With the memory each op touched recorded, every wait but kernel -> kernel (cross-stream-kernel-
  // wait's) and those of communication kernels (the collective order) is a candidate, and the data
  // it orders decides (diagnosis/data_order.h) instead of the usual data flow and the reuse guard.
  const bool with_buffers = recordsOpBuffers(view);
  const CommunicationKernels communication(view.trace());
  const auto candidate = [&](const StreamWait& wait) {
    const GpuOp& x = view.op(view.ops()[wait.released]);
    bool kernels = x.kind == OpKind::kKernel;
    for (std::size_t y : wait.waited_for) {
      const GpuOp& op = view.op(view.ops()[y]);
      if (communication.isCommunication(op)) return false;
      kernels = kernels && op.kind == OpKind::kKernel;
    }
    return !communication.isCommunication(x) && !kernels;
  };
  for (std::size_t w = 0; w < waits.size(); ++w) {
    const StreamWait& wait = waits[w];
    const ScopedOp released = view.ops()[wait.released];
    held[w] = wait.ready && released.start - *wait.ready >= kMinimumCostNs;
    serializing[w] = !wait.waited_for.empty() && (with_buffers ? candidate(wait) : !waitIsRealDependency(view, wait));
  }
  // Every round of a call site that held its op back once (roundsOfHeldSites).
  const std::vector<bool> counts = roundsOfHeldSites(waits, serializing, held);
  // The reuse guard's one-hop form (a copy-in waiting for the very kernel that waited for the
  // previous copy of its stream) is counted: a buffer slice per tile makes it unnecessary.
  // `waits_releasing`: each kernel's waits; `copy_fed`: the kernels one of them held for a copy-in.
  std::unordered_map<std::size_t, std::vector<std::size_t>> waits_releasing;
  std::unordered_set<std::size_t> copy_fed;
  for (std::size_t w = 0; w < waits.size(); ++w) {
    const StreamWait& wait = waits[w];
    if (view.op(view.ops()[wait.released]).kind != OpKind::kKernel) continue;
    waits_releasing[wait.released].push_back(w);
    for (std::size_t c : wait.waited_for) {
      if (engineOf(view.op(view.ops()[c])) == Engine::kH2D) copy_fed.insert(wait.released);
    }
  }
  const auto oneHop = [&](const StreamWait& wait) {
    const auto stream = DeviceView::streamKey(view.op(view.ops()[wait.released]));
    return std::any_of(wait.waited_for.begin(), wait.waited_for.end(), [&](std::size_t kernel) {
      const auto released_by = waits_releasing.find(kernel);
      if (copy_fed.count(kernel) == 0 || released_by == waits_releasing.end()) return false;
      for (std::size_t k : released_by->second) {
        for (std::size_t c : waits[k].waited_for) {
          if (DeviceView::streamKey(view.op(view.ops()[c])) == stream) return true;
        }
      }
      return false;
    });
  };
  // Without op buffers, and for a wait whose data order is unsure (slices of one buffer), the usual
  // data flow and the reuse guard decide.
  const auto heuristicGuards = [&] {
    std::vector<bool> reuse = guardsBufferReuse(view, waits, counts);
    for (std::size_t w = 0; w < waits.size(); ++w) {
      if (reuse[w] && oneHop(waits[w])) reuse[w] = false;
    }
    return reuse;
  };
  std::vector<bool> guards;
  if (with_buffers) {
    // An unsure wait is one the usual data flow did not count: it stays where that says it is real.
    const auto judge = [&] {
      std::vector<bool> keep = heuristicGuards();
      for (std::size_t w = 0; w < waits.size(); ++w) keep[w] = keep[w] || waitIsRealDependency(view, waits[w]);
      return keep;
    };
    guards = waitsToKeep(waitsOrderingData(view, waits, counts), judge);
  } else {
    guards = heuristicGuards();
  }
  for (std::size_t w = 0; w < waits.size(); ++w) {
    const StreamWait& wait = waits[w];
    const auto ready = wait.ready;
    const ScopedOp released = view.ops()[wait.released];
    if (!counts[w] || guards[w]) {
      for (std::size_t y : wait.waited_for) kept.push_back({y, wait.released, wait.release_lag});
      continue;
    }
    for (std::size_t y : wait.waited_for) removed.push_back({y, wait.released, wait.release_lag});
    if (!held[w]) continue;
    const GpuOp& y = view.op(view.ops()[wait.waited_for.back()]);
    builder.add(Interval{*ready, released.start},
                evidenceForOp(view, view.op(released),
                              fmt::format("{} waited for {} on stream {}",
                                          describeOp(view, view.op(released)), describeOp(view, y),
                                          y.stream_id)));
  }
  if (builder.count() == 0) return std::nullopt;
  const std::vector<OrderEdge> barriers = legacyBarrierEdges(view);
  kept.insert(kept.end(), barriers.begin(), barriers.end());
  std::vector<OrderEdge> recorded = kept;
  recorded.insert(recorded.end(), removed.begin(), removed.end());
  const ScheduleModel model(view, buildHostTimeline(view), recorded);
  const Ns saving = std::max<Ns>(
      0, spanFreedOfSlotHolders(view, model, recorded) - spanFreedOfSlotHolders(view, model, kept));
  if (saving < kMinimumClaimNs) return std::nullopt;  // waits that cost nothing (a reuse hazard)
  builder.estimateSaving(saving);
  return builder.build(
      fmt::format("{} cudaStreamWaitEvent dependencies serialized work that could have overlapped",
                  builder.count()),
      "Wait only on the events the stream's work really depends on (record one event per "
      "produced buffer, after the op that produces it), so unrelated copies and kernels overlap");
}

}  // namespace cuoverlap::diagnosis
