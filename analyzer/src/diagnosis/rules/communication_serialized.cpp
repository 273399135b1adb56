// communication-serialized: a collective that was held back behind compute it did not overlap.
// For each communication kernel C with a launch call, ready(C) is when its launch returned and the
// previous op of its stream ended (docs/findings.md, "Ready"). C was serialized behind compute when
//   - same stream: the previous op of C's stream is a compute kernel that was still running when
//     C's launch returned (C was issued in time, stream order alone made it wait); or
//   - waited: a compute kernel K of another stream of the device ended at most 20 µs before C
//     started (an NCCL kernel starts some 8 µs after the event it waits on: measured on H200), and
//     C was ready at least 10 µs before K ended (C's stream waited on an event recorded after K:
//     PyTorch's NCCL stream waiting on the compute stream, or a cudaStreamWaitEvent of one's own).
// Such a C counts when it then ran exposed (no other kernel beside it) for at least 10 µs: the
// collective could have overlapped compute had it been issued earlier or on its own stream (a
// smaller first bucket, a separate stream), but ran alone after it. The finding fires when those
// stretches reach 5% of the device span, as exposed-communication does (the last bucket of a
// healthy DDP step always waits for the end of backward, and costs little).
// Cost: the union of the exposed stretches of those collectives. They are part of
// exposed-communication's cost; this finding says which part was due to issue order.
// Needs: launch calls (runtime data) and kernel names.
#include <algorithm>
#include <limits>
#include <map>

#include <fmt/format.h>

#include "cuoverlap/units.h"
#include "diagnosis/communication_ops.h"
#include "diagnosis/finding_builder.h"
#include "diagnosis/rules/rules.h"

namespace cuoverlap::diagnosis {
namespace {

constexpr Ns kReleaseSlackNs = 20'000;
constexpr double kMinShareOfSpan = 0.05;

// Per stream, the position of the previous op of that stream, and the compute kernels by end.
class StreamOrder {
 public:
  StreamOrder(const DeviceView& view, const CommunicationOps& comm) : view_(view) {
    std::map<std::uint64_t, std::size_t> last;
    previous_.assign(view.ops().size(), kNone);
    for (std::size_t pos = 0; pos < view.ops().size(); ++pos) {
      const ScopedOp scoped = view.ops()[pos];
      const GpuOp& op = view.op(scoped);
      const auto key = DeviceView::streamKey(op);
      auto it = last.find(key);
      if (it != last.end()) previous_[pos] = it->second;
      last[key] = pos;
      if (op.kind == OpKind::kKernel && !comm.isCommunication(op)) {
        compute_ends_.push_back({scoped.end, pos});
      }
    }
    std::sort(compute_ends_.begin(), compute_ends_.end());
  }

  std::optional<std::size_t> previous(std::size_t pos) const {
    return previous_[pos] == kNone ? std::nullopt : std::optional<std::size_t>(previous_[pos]);
  }

  // A compute kernel of another stream that ended in [time - slack, time], the latest such.
  std::optional<std::size_t> computeEndingBefore(Ns time, std::uint64_t stream) const {
    auto it = std::upper_bound(compute_ends_.begin(), compute_ends_.end(),
                               std::make_pair(time, std::numeric_limits<std::size_t>::max()));
    while (it != compute_ends_.begin()) {
      --it;
      if (it->first < time - kReleaseSlackNs) break;
      if (DeviceView::streamKey(view_.op(view_.ops()[it->second])) != stream) return it->second;
    }
    return std::nullopt;
  }

 private:
  static constexpr std::size_t kNone = static_cast<std::size_t>(-1);
  const DeviceView& view_;
  std::vector<std::size_t> previous_;
  std::vector<std::pair<Ns, std::size_t>> compute_ends_;
};

// The compute kernel C was serialized behind, and how, if it was.
std::optional<std::pair<std::size_t, const char*>> heldBehind(const DeviceView& view,
                                                              const CommunicationOps& comm,
                                                              const StreamOrder& order,
                                                              std::size_t pos) {
  const ScopedOp scoped = view.ops()[pos];
  const GpuOp& op = view.op(scoped);
  const auto launch = view.launchCall(op);
  if (!launch) return std::nullopt;
  if (const auto prev = order.previous(pos)) {
    const GpuOp& before = view.op(view.ops()[*prev]);
    if (before.kind == OpKind::kKernel && !comm.isCommunication(before) &&
        view.ops()[*prev].end > view.call(*launch).end) {
      return std::make_pair(*prev, "was queued behind");
    }
  }
  const auto ready = view.readyTime(pos);
  if (!ready) return std::nullopt;
  const auto waited = order.computeEndingBefore(scoped.start, DeviceView::streamKey(op));
  if (waited && view.ops()[*waited].end - *ready >= kMinimumCostNs) {
    return std::make_pair(*waited, "waited for");
  }
  return std::nullopt;
}

}  // namespace

std::optional<Finding> findCommunicationSerialized(const DeviceView& view) {
  if (!view.hasRuntimeData()) return std::nullopt;
  const CommunicationOps comm(view);
  if (comm.empty()) return std::nullopt;
  const StreamOrder order(view, comm);
  FindingBuilder builder(view, "communication-serialized", Severity::kWarning);
  for (std::size_t pos : comm.positions()) {
    const ScopedOp scoped = view.ops()[pos];
    const std::vector<Interval> pieces = comm.exposedPieces(scoped.start, scoped.end);
    if (totalLength(pieces) < kMinimumCostNs) continue;
    const auto held = heldBehind(view, comm, order, pos);
    if (!held) continue;
    const GpuOp& op = view.op(scoped);
    const GpuOp& compute = view.op(view.ops()[held->first]);
    for (const Interval& piece : pieces) {
      builder.add(piece, evidenceForOp(view, op,
                                       fmt::format("{} {} {} on stream {}{}; then {} ran alone",
                                                   describeCollective(view.trace().str(op.name)),
                                                   held->second,
                                                   shortKernelName(view.trace().str(compute.name)),
                                                   compute.stream_id,
                                                   compute.stream_id == op.stream_id ? " (its own)" : "",
                                                   units::formatDuration(piece.length()))));
    }
  }
  if (static_cast<double>(builder.time()) < kMinShareOfSpan * static_cast<double>(view.spanLength())) {
    return std::nullopt;
  }
  return builder.build(
      fmt::format("{} stretches of communication ran alone after the compute they were queued "
                  "behind, though they could have overlapped it",
                  builder.count()),
      "Issue each collective as soon as its input is ready, on its own stream, so that it runs "
      "beside the compute that follows: PyTorch DDP: smaller buckets (bucket_cap_mb) so the first "
      "all-reduces start early in backward; FSDP: backward_prefetch / forward_prefetch; "
      "own code: a separate (high-priority) stream and cudaStreamWaitEvent on the event of the "
      "producing kernel only, never a wait on the whole compute stream");
}

}  // namespace cuoverlap::diagnosis
