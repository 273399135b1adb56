// host-launch-bound: the device idled between short kernels because the host could not launch
// them fast enough. Fires when the device ran at least 20 kernels, their median duration is under
// 50 µs, and idle gaps between two kernels attributed to host-launch or host-busy (the host was
// late: launching, or in its own per-launch code; of any length) add up to at least 10% of the
// device span. Severity by share: a warning, an error from 25% of the span (as every warning).
// Cost: the total length of those gaps. Where: the gaps.
// Advice: capture the launches in a CUDA graph, unless the kernels after most of that idle time
// already ran as graph nodes (a graph replay loop): then the host is late between replays, and the
// fix is more work per replay, not a graph.
// Needs: launch calls.
#include <algorithm>

#include <fmt/format.h>

#include "cuoverlap/units.h"
#include "diagnosis/finding_builder.h"
#include "diagnosis/idle_gaps.h"
#include "diagnosis/rules/rules.h"

namespace cuoverlap::diagnosis {
namespace {

constexpr std::size_t kMinKernels = 20;
constexpr Ns kShortKernelNs = 50'000;
constexpr double kMinIdleShare = 0.1;

Ns medianKernelDuration(const DeviceView& view) {
  std::vector<Ns> durations;
  for (const ScopedOp& scoped : view.ops()) {
    if (view.op(scoped).kind == OpKind::kKernel) durations.push_back(scoped.end - scoped.start);
  }
  if (durations.size() < kMinKernels) return kShortKernelNs;  // too few kernels: never short
  auto middle = durations.begin() + static_cast<std::ptrdiff_t>(durations.size() / 2);
  std::nth_element(durations.begin(), middle, durations.end());
  return *middle;
}

}  // namespace

std::optional<Finding> findHostLaunchBound(const DeviceView& view) {
  if (!view.hasRuntimeData() || medianKernelDuration(view) >= kShortKernelNs) return std::nullopt;
  const auto& ops = view.trace().ops;
  FindingBuilder builder(view, "host-launch-bound", Severity::kWarning);
  Ns before_graph_nodes = 0;  // idle time before kernels launched as CUDA graph nodes
  for (const IdleGap& gap : attributeGaps(view, 1)) {
    const bool host_late = gap.cause == GapCause::kHostLaunch || gap.cause == GapCause::kHostBusy;
    if (!host_late || !gap.prev_op || !gap.next_op) continue;
    const GpuOp& next = ops[*gap.next_op];
    if (ops[*gap.prev_op].kind != OpKind::kKernel || next.kind != OpKind::kKernel) continue;
    Evidence evidence = evidenceForOp(view, next,
                                      fmt::format("device idle {} before {}",
                                                  units::formatDuration(gap.duration()),
                                                  describeOp(view, next)));
    evidence.time = gap.start;
    builder.add(Interval{gap.start, gap.end}, std::move(evidence));
    if ((next.flags & op_flag::kFromGraph) != 0) before_graph_nodes += gap.duration();
  }
  if (static_cast<double>(builder.time()) < kMinIdleShare * static_cast<double>(view.spanLength())) {
    return std::nullopt;
  }
  const double share = static_cast<double>(builder.time()) / static_cast<double>(view.spanLength());
  if (2 * before_graph_nodes >= builder.time()) {
    return builder.build(
        fmt::format("the device waited for the host {} times between short kernels ({:.0f}% of the "
                    "span), most of it before CUDA graph replays: the kernels already run as graph "
                    "nodes", builder.count(), 100.0 * share),
        "Give each graph launch more work: capture several steps, or the host code between "
        "replays (input copies, optimizer steps), in one graph, and do more work per kernel (fuse or "
        "batch small kernels); the launches are already graphs, so capturing them again saves nothing");
  }
  return builder.build(
      fmt::format("the device waited for kernel launches {} times between short kernels ({:.0f}% "
                  "of the span)", builder.count(), 100.0 * share),
      "Do more work per kernel (fuse or batch small kernels), or capture the launch sequence in a "
      "CUDA graph (cudaStreamBeginCapture / cudaGraphLaunch) to cut per-launch overhead");
}

}  // namespace cuoverlap::diagnosis
