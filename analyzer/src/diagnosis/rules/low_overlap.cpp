// low-overlap: copies and kernels ran on more than one stream, yet little of the copy time was
// hidden under compute. With C = |union of copies|, K = |union of kernels|, H = |C ∩ K| and the
// overlappable time P = min(C, K): fires when P >= 10% of the device span and H < P / 2.
// The summary names the device's other findings that explain it, or the issue order when none
// does (work issued stream by stream instead of interleaved).
// Cost: P - H, the overlap that could have happened but did not.
#include <set>

#include <fmt/format.h>

#include "cuoverlap/intervals.h"
#include "diagnosis/finding_builder.h"
#include "diagnosis/rules/rules.h"

namespace cuoverlap::diagnosis {
namespace {

constexpr double kMinOverlappableShare = 0.10;
constexpr double kMaxHiddenShare = 0.5;

std::string explanation(const DeviceView& view, const std::vector<Finding>& earlier) {
  std::string causes;
  for (const Finding& finding : earlier) {
    if (finding.device_id != view.deviceId()) continue;
    causes += (causes.empty() ? "" : ", ") + finding.id;
  }
  return causes.empty() ? "the issue order (no other finding explains it)" : causes;
}

}  // namespace

std::optional<Finding> findLowOverlap(const DeviceView& view, const std::vector<Finding>& earlier) {
  std::set<std::uint64_t> streams;
  std::vector<Interval> copies;
  std::vector<Interval> kernels;
  for (const ScopedOp& scoped : view.ops()) {
    const GpuOp& op = view.op(scoped);
    if (op.kind == OpKind::kMemset) continue;
    streams.insert(DeviceView::streamKey(op));
    (op.kind == OpKind::kMemcpy ? copies : kernels).push_back({scoped.start, scoped.end});
  }
  if (streams.size() < 2 || copies.empty() || kernels.empty()) return std::nullopt;
  const auto copy_union = unionOf(std::move(copies));
  const auto kernel_union = unionOf(std::move(kernels));
  const Ns overlappable = std::min(totalLength(copy_union), totalLength(kernel_union));
  const Ns hidden = totalLength(intersectionOf(copy_union, kernel_union));
  if (static_cast<double>(overlappable) < kMinOverlappableShare * view.spanLength() ||
      static_cast<double>(hidden) >= kMaxHiddenShare * overlappable) {
    return std::nullopt;
  }
  FindingBuilder builder(view, "low-overlap", Severity::kWarning);
  const GpuOp& first = view.op(view.ops().front());
  builder.add(overlappable - hidden,
              evidenceForOp(view, first,
                            fmt::format("{} of {} ns of overlappable copy time hidden", hidden,
                                        overlappable)));
  return builder.build(
      fmt::format("copies and kernels ran on {} streams but only {:.0f}% of the overlappable time "
                  "overlapped; responsible: {}",
                  streams.size(), 100.0 * hidden / overlappable, explanation(view, earlier)),
      "Fix the findings named above; if there are none, issue work breadth-first (copy-in of all "
      "chunks, then kernels, then copy-outs, across streams) or use at least three streams so a "
      "copy of one chunk runs while another chunk computes");
}

}  // namespace cuoverlap::diagnosis
