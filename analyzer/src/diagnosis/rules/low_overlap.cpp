// low-overlap: copies and kernels ran on more than one stream, yet little of the copy time was
// hidden under compute. Only copies that some kernel could have run beside count: a copy that
// stream order and data-carrying event waits order with every kernel (op_order.h: the copy-in a
// kernel reads, the copy-out of its result, in a chain of such) cannot overlap any. With C =
// |union of those copies|, K = |union of kernels|, H = |C ∩ K| and the overlappable time
// P = min(C, K): fires when P >= 10% of the device span and H < P / 2.
// The summary names the device's other findings that explain it, or the issue order when none
// does (work issued stream by stream instead of interleaved).
// Cost: P - H, the overlap that could have happened but did not. Where (cost ledger): the copy
// time not under any kernel, so the ledger charges low-overlap only what the findings it names did
// not already explain.
#include <set>

#include <fmt/format.h>

#include "cuoverlap/intervals.h"
#include "cuoverlap/units.h"
#include "diagnosis/finding_builder.h"
#include "diagnosis/op_order.h"
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

// Whether the op at `position` is a copy that some kernel could have run beside.
bool overlappableCopy(const DeviceView& view, const std::vector<bool>& ordered, std::size_t position) {
  return view.kindAt(position) == OpKind::kMemcpy && (ordered.empty() || !ordered[position]);
}

// The overlappable copy time not under any kernel: union of those copies minus union of kernels.
std::vector<Interval> unhiddenCopyTime(const DeviceView& view, const std::vector<bool>& ordered) {
  std::vector<Interval> copies;
  std::vector<Interval> kernels;
  for (std::size_t pos = 0; pos < view.ops().size(); ++pos) {
    const ScopedOp scoped = view.ops()[pos];
    if (view.kindAt(pos) == OpKind::kKernel) kernels.push_back({scoped.start, scoped.end});
    if (overlappableCopy(view, ordered, pos)) copies.push_back({scoped.start, scoped.end});
  }
  copies = unionOf(std::move(copies));
  kernels = unionOf(std::move(kernels));
  std::vector<Interval> unhidden;
  std::size_t k = 0;
  for (Interval copy : copies) {
    while (k < kernels.size() && kernels[k].end <= copy.start) ++k;
    for (std::size_t j = k; j < kernels.size() && kernels[j].start < copy.end; ++j) {
      if (kernels[j].start > copy.start) unhidden.push_back({copy.start, kernels[j].start});
      copy.start = std::max(copy.start, kernels[j].end);
    }
    if (copy.start < copy.end) unhidden.push_back(copy);
  }
  return unhidden;
}

// The streams the view's copies and kernels ran on (memsets aside), and whether it has both.
struct CopyKernelStreams {
  std::size_t streams = 0;
  bool any_copy = false;
  bool any_kernel = false;
  bool both() const { return streams >= 2 && any_copy && any_kernel; }
};

// With `until_both`, the pass stops once both() holds: the rule's precondition is then settled,
// most often after a view's first ops, where a pass over every op costs a cache miss per op.
CopyKernelStreams copyKernelStreams(const DeviceView& view, bool until_both) {
  CopyKernelStreams seen;
  std::set<std::uint64_t> streams;
  std::uint64_t last_stream = 0;
  for (std::size_t pos = 0; pos < view.ops().size(); ++pos) {
    if (view.kindAt(pos) == OpKind::kMemset) continue;
    const GpuOp& op = view.op(view.ops()[pos]);
    const std::uint64_t stream = DeviceView::streamKey(op);
    if (streams.empty() || stream != last_stream) streams.insert(stream);
    last_stream = stream;
    (op.kind == OpKind::kMemcpy ? seen.any_copy : seen.any_kernel) = true;
    seen.streams = streams.size();
    if (until_both && seen.both()) break;
  }
  return seen;
}

}  // namespace

std::optional<Finding> findLowOverlap(const DeviceView& view, const std::vector<Finding>& earlier) {
  // Ops come in start order, so the unions stream through O(1) state: H = C + K - |C ∪ K|.
  UnionLength copy_union;
  UnionLength kernel_union;
  UnionLength either_union;
  if (!copyKernelStreams(view, true).both()) return std::nullopt;
  const std::vector<bool> ordered = orderedWithEveryKernel(view);
  for (std::size_t pos = 0; pos < view.ops().size(); ++pos) {
    // Kinds from the view's byte per op: memsets and ordered copies are not read.
    const bool copy = overlappableCopy(view, ordered, pos);
    if (view.kindAt(pos) != OpKind::kKernel && !copy) continue;
    const ScopedOp scoped = view.ops()[pos];
    (copy ? copy_union : kernel_union).add(scoped.start, scoped.end);
    either_union.add(scoped.start, scoped.end);
  }
  const Ns copy_time = copy_union.length();
  const Ns kernel_time = kernel_union.length();
  const Ns overlappable = std::min(copy_time, kernel_time);
  const Ns hidden = copy_time + kernel_time - either_union.length();
  if (static_cast<double>(overlappable) < kMinOverlappableShare * view.spanLength() ||
      static_cast<double>(hidden) >= kMaxHiddenShare * overlappable) {
    return std::nullopt;
  }
  FindingBuilder builder(view, "low-overlap", Severity::kWarning);
  const GpuOp& first = view.op(view.ops().front());
  for (const Interval& stretch : unhiddenCopyTime(view, ordered)) builder.addRegion(stretch);
  builder.estimateSaving(overlappable - hidden);
  builder.add(Ns{0},
              evidenceForOp(view, first,
                            fmt::format("{} of {} of overlappable copy time hidden",
                                        units::formatDuration(hidden),
                                        units::formatDuration(overlappable))));
  return builder.build(
      fmt::format("copies and kernels ran on {} streams but only {:.0f}% of the overlappable time "
                  "overlapped; responsible: {}",
                  copyKernelStreams(view, false).streams, 100.0 * hidden / overlappable,
                  explanation(view, earlier)),
      "Fix the findings named above; if there are none, issue work breadth-first (copy-in of all "
      "chunks, then kernels, then copy-outs, across streams) or use at least three streams so a "
      "copy of one chunk runs while another chunk computes");
}

}  // namespace cuoverlap::diagnosis
