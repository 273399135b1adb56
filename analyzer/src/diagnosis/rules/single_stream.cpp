// single-stream: the device's copies and kernels (and memsets) all ran on one stream (null or
// not), so nothing could overlap. Fires with at least one copy, one kernel and three ops.
// Cost: min(|union of copies|, |union of kernels|), the time perfect overlap of copies with
// kernels could have saved at most.
#include <set>

#include <fmt/format.h>

#include "cuoverlap/intervals.h"
#include "diagnosis/finding_builder.h"
#include "diagnosis/rules/rules.h"

namespace cuoverlap::diagnosis {

std::optional<Finding> findSingleStream(const DeviceView& view) {
  std::set<std::uint64_t> streams;
  std::vector<Interval> copies;
  std::vector<Interval> kernels;
  for (const ScopedOp& scoped : view.ops()) {
    const GpuOp& op = view.op(scoped);
    streams.insert(DeviceView::streamKey(op));
    if (op.kind == OpKind::kMemcpy) copies.push_back({scoped.start, scoped.end});
    if (op.kind == OpKind::kKernel) kernels.push_back({scoped.start, scoped.end});
  }
  if (streams.size() != 1 || copies.empty() || kernels.empty() || view.ops().size() < 3) {
    return std::nullopt;
  }
  const Ns copy_time = totalLength(unionOf(copies));
  const Ns kernel_time = totalLength(unionOf(kernels));
  FindingBuilder builder(view, "single-stream", Severity::kWarning);
  const GpuOp& first = view.op(view.ops().front());
  builder.add(std::min(copy_time, kernel_time),
              evidenceForOp(view, first,
                            fmt::format("all {} copies and {} kernels on stream {}", copies.size(),
                                        kernels.size(), first.stream_id)));
  auto finding = builder.build(
      fmt::format("{} copies and {} kernels all ran on stream {}: nothing could overlap",
                  copies.size(), kernels.size(), first.stream_id),
      "Split the work into chunks and issue each chunk's copy-in, kernel and copy-out to its own "
      "created stream (cudaStreamCreate), with pinned host buffers, so that copies of one chunk "
      "overlap kernels of another");
  if (finding) finding->count = view.ops().size();
  return finding;
}

}  // namespace cuoverlap::diagnosis
