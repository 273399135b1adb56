// single-stream: the device's copies and kernels (and memsets) all ran on one stream (null or
// not), so nothing could overlap. Fires with at least one copy, one kernel and three ops.
// Cost: min(|union of copies|, |union of kernels|), the time perfect overlap of copies with
// kernels could have saved at most.
#include <fmt/format.h>

#include "cuoverlap/intervals.h"
#include "diagnosis/finding_builder.h"
#include "diagnosis/rules/rules.h"

namespace cuoverlap::diagnosis {

std::optional<Finding> findSingleStream(const DeviceView& view) {
  if (view.empty()) return std::nullopt;
  const std::uint64_t stream = DeviceView::streamKey(view.op(view.ops().front()));
  // Ops come in start order, so the unions stream through O(1) state.
  UnionLength copy_union;
  UnionLength kernel_union;
  std::size_t copies = 0;
  std::size_t kernels = 0;
  for (const ScopedOp scoped : view.ops()) {
    const GpuOp& op = view.op(scoped);
    if (DeviceView::streamKey(op) != stream) return std::nullopt;
    if (op.kind == OpKind::kMemcpy) {
      ++copies;
      copy_union.add(scoped.start, scoped.end);
    }
    if (op.kind == OpKind::kKernel) {
      ++kernels;
      kernel_union.add(scoped.start, scoped.end);
    }
  }
  if (copies == 0 || kernels == 0 || view.ops().size() < 3) return std::nullopt;
  const Ns copy_time = copy_union.length();
  const Ns kernel_time = kernel_union.length();
  FindingBuilder builder(view, "single-stream", Severity::kWarning);
  const GpuOp& first = view.op(view.ops().front());
  builder.add(std::min(copy_time, kernel_time),
              evidenceForOp(view, first,
                            fmt::format("all {} copies and {} kernels on stream {}", copies,
                                        kernels, first.stream_id)));
  auto finding = builder.build(
      fmt::format("{} copies and {} kernels all ran on stream {}: nothing could overlap",
                  copies, kernels, first.stream_id),
      "Split the work into chunks and issue each chunk's copy-in, kernel and copy-out to its own "
      "created stream (cudaStreamCreate), with pinned host buffers, so that copies of one chunk "
      "overlap kernels of another");
  if (finding) finding->count = view.ops().size();
  return finding;
}

}  // namespace cuoverlap::diagnosis
