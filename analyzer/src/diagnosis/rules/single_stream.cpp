// single-stream: the device's copies and kernels (and memsets) all ran on one stream (null or
// not), so nothing could overlap, and some host<->device transfer could have been hidden under
// compute by splitting the work over streams. A copy is hideable when it moves data between host
// and device (HtoD or DtoH; not device-to-device), uses pinned (or unknown) host memory — a
// pageable copy is synchronous to the host on any stream, pageable-memcpy's case — and is not a
// link of a dependency chain: a copy whose neighbours on the stream are all kernels (kernel ->
// copy -> kernel, or the run's first copy before a kernel, or its last after one) feeds the one
// after it or drains the one before it, and splitting the work over streams cannot run it beside
// either. Fires with at least one kernel and three ops.
// Cost: min(|union of hideable copies|, |union of kernels|), the most that overlapping them with
// compute could save; not reported under 10 µs. Where: the hideable copies.
#include <fmt/format.h>

#include "cuoverlap/intervals.h"
#include "diagnosis/finding_builder.h"
#include "diagnosis/rules/rules.h"

namespace cuoverlap::diagnosis {
namespace {

bool hostDeviceTransfer(const GpuOp& op) {
  const Engine engine = engineOf(op);
  return op.kind == OpKind::kMemcpy && (engine == Engine::kH2D || engine == Engine::kD2H) &&
         op.src_kind != MemKind::kPageable && op.dst_kind != MemKind::kPageable;
}

}  // namespace

std::optional<Finding> findSingleStream(const DeviceView& view) {
  if (view.empty()) return std::nullopt;
  const auto& ops = view.ops();
  const std::uint64_t stream = DeviceView::streamKey(view.op(ops.front()));
  // Ops come in start order (one stream: also issue order), so the unions stream through O(1) state.
  UnionLength hideable_union;
  UnionLength kernel_union;
  std::vector<Interval> hideable;
  std::size_t copies = 0;
  std::size_t kernels = 0;
  for (std::size_t pos = 0; pos < ops.size(); ++pos) {
    const GpuOp& op = view.op(ops[pos]);
    if (DeviceView::streamKey(op) != stream) return std::nullopt;
    if (op.kind == OpKind::kKernel) {
      ++kernels;
      kernel_union.add(ops[pos].start, ops[pos].end);
    }
    if (op.kind != OpKind::kMemcpy) continue;
    ++copies;
    // Every neighbour it has on the stream is a kernel (the run's first or last op has one).
    const bool chain_link = (pos == 0 || view.op(ops[pos - 1]).kind == OpKind::kKernel) &&
                            (pos + 1 == ops.size() || view.op(ops[pos + 1]).kind == OpKind::kKernel);
    if (!hostDeviceTransfer(op) || chain_link) continue;
    hideable_union.add(ops[pos].start, ops[pos].end);
    hideable.push_back({ops[pos].start, ops[pos].end});
  }
  if (hideable.empty() || kernels == 0 || ops.size() < 3) return std::nullopt;
  const Ns cost = std::min(hideable_union.length(), kernel_union.length());
  if (cost < kMinimumCostNs) return std::nullopt;
  FindingBuilder builder(view, "single-stream", Severity::kWarning);
  const GpuOp& first = view.op(ops.front());
  builder.add(Ns{0}, evidenceForOp(view, first,
                                   fmt::format("all {} copies and {} kernels on stream {}; {} "
                                               "host<->device copies could run beside kernels",
                                               copies, kernels, first.stream_id, hideable.size())));
  for (const Interval& copy : unionOf(std::move(hideable))) builder.addRegion(copy);
  builder.estimateSaving(cost);
  auto finding = builder.build(
      fmt::format("{} copies and {} kernels all ran on stream {}: nothing could overlap",
                  copies, kernels, first.stream_id),
      "Split the work into chunks and issue each chunk's copy-in, kernel and copy-out to its own "
      "created stream (cudaStreamCreate), with pinned host buffers and one device buffer per "
      "stream, so that copies of one chunk overlap kernels of another");
  if (finding) finding->count = ops.size();
  return finding;
}

}  // namespace cuoverlap::diagnosis
