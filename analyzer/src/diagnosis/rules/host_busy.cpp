// host-busy: the device idled while the thread that issued the next op ran its own code, in no
// CUDA call (the host-busy parts of the idle gaps, docs/gaps.md): data generation or loading,
// Python and framework overhead, compilation outside CUDA, sleeping. Each stretch of at least
// 10 µs in one gap is an instance, except stretches under 100 µs in a gap between two kernels
// shorter than 50 µs: that is the per-launch overhead of a launch loop, host-launch-bound's.
// Cost: the stretches' total length, the device idle time the host's own work left uncovered.
// Fires when the cost reaches 1% of the device span. Severity by share of the span: info below
// 5%, warning from 5%, error from 25%.
// Evidence: the longest stretches, with the thread, the NVTX range they fall in and the CUDA
// calls around them.
// Needs: runtime calls (the thread that launched each op).
#include <algorithm>

#include <fmt/format.h>

#include "cuoverlap/units.h"
#include "diagnosis/finding_builder.h"
#include "diagnosis/idle_gaps.h"
#include "diagnosis/rules/rules.h"

namespace cuoverlap::diagnosis {
namespace {

constexpr double kWarningShareOfSpan = 0.05;
// One-off host time below this share of the span (the lazy load of the first kernel, a short
// pause) is not worth a finding; the gap parts still show it.
constexpr double kMinimumShareOfSpan = 0.01;
constexpr Ns kLaunchLoopStretchNs = 100'000;
constexpr Ns kShortKernelNs = 50'000;

struct Stretch {
  Interval time;
  std::size_t launch = 0;         // the launch call of the op that ended the gap
  bool before_module_load = false;  // module loading followed it in the same gap
};

// Where `stretch` of the thread's own code sits among its NVTX ranges (push/pop ranges of the
// thread, start/end ranges of its process): in the innermost range that covers most of it, else
// after the range that ended in it (the latest to end) and before the range that began in it (the
// first), when there are such. (The range open at the stretch's start alone misleads: a training
// loop loads the next batch after `step N` ends and before `step N+1` begins, but the stretch
// starts inside `step N`.)
std::string nvtxContext(const Trace& trace, std::uint32_t pid, std::uint32_t tid, Interval stretch) {
  const NvtxRange* covering = nullptr;
  Ns covered = 0;
  const NvtxRange* before = nullptr;  // began before the stretch and ended in it, the latest
  const NvtxRange* next = nullptr;    // the first to begin in it
  for (const NvtxRange& range : trace.nvtx) {  // sorted by start
    if (range.pid != pid || range.end <= range.start) continue;
    if (range.tid != tid && range.event_type != static_cast<std::int32_t>(
                                                    schema::NvtxEventType::kStartEndRange)) {
      continue;
    }
    if (range.start >= stretch.end) break;
    if (range.start >= stretch.start) {
      if (next == nullptr) next = &range;
    } else if (range.end > stretch.start && range.end < stretch.end &&
               (before == nullptr || range.end >= before->end)) {
      before = &range;
    }
    const Ns overlap = std::min(range.end, stretch.end) - std::max(range.start, stretch.start);
    if (overlap > 0 && (covering == nullptr || overlap >= covered)) {  // equal: the inner one
      covering = &range;
      covered = overlap;
    }
  }
  const auto name = [&](const NvtxRange* range) { return std::string(trace.str(range->text)); };
  if (covering != nullptr && 2 * covered >= stretch.length()) {
    return fmt::format(", in NVTX range \"{}\"", name(covering));
  }
  if (before != nullptr && next != nullptr) {
    return fmt::format(", between NVTX ranges \"{}\" and \"{}\"", name(before), name(next));
  }
  if (before != nullptr) return fmt::format(", after NVTX range \"{}\"", name(before));
  if (next != nullptr) return fmt::format(", before NVTX range \"{}\"", name(next));
  return {};
}

Evidence describeStretch(const DeviceView& view, const Stretch& stretch, bool detailed) {
  const RuntimeCall& launch = view.call(stretch.launch);
  Evidence evidence;
  evidence.api = fmt::format("host thread {}", launch.tid);
  evidence.has_stream = false;  // the host's own code: no call, no stream
  evidence.time = stretch.time.start;
  evidence.detail = fmt::format("ran its own code for {} in no CUDA call while the device idled",
                                units::formatDuration(stretch.time.length()));
  if (!detailed) return evidence;
  const HostState& host = view.hostState();
  const auto thread = host.threadOf(launch);
  const auto before = thread ? host.lastCallBefore(*thread, stretch.time.start) : std::nullopt;
  evidence.detail += nvtxContext(view.trace(), launch.pid, launch.tid, stretch.time);
  evidence.detail += fmt::format("; after {}, before {}",
                                 before ? std::string(view.callName(*before)) : "its first CUDA call",
                                 view.callName(stretch.launch));
  // Code loaded right after the host's own work: a JIT compiler (NVRTC, NVVM, XLA, Triton) ran
  // in the program's own code and produced it.
  if (stretch.before_module_load) evidence.detail += "; module loading followed: likely JIT compilation";
  return evidence;
}

bool isShortKernel(const DeviceView& view, std::optional<std::size_t> position) {
  if (!position) return false;
  const ScopedOp op = view.ops()[*position];
  return view.op(op).kind == OpKind::kKernel && op.end - op.start < kShortKernelNs;
}

// Whether `gap` lies between two short kernels (the op that ended it and the op after it).
bool inLaunchLoop(const DeviceView& view, const Interval& gap) {
  const auto next = view.firstOpStartingAtOrAfter(gap.end);
  if (!isShortKernel(view, next)) return false;
  // The op that ended at the gap's start: the last op starting before it that ends there.
  const auto after_start = view.firstOpStartingAtOrAfter(gap.start);
  for (std::size_t pos = after_start ? *after_start : view.ops().size(); pos-- > 0;) {
    if (view.ops()[pos].end == gap.start) return isShortKernel(view, pos);
    if (pos + 64 < (after_start ? *after_start : view.ops().size())) break;  // bounded search
  }
  return false;
}

}  // namespace

std::optional<Finding> findHostBusy(const DeviceView& view) {
  std::vector<Stretch> stretches;
  Ns total = 0;
  std::size_t gap_first = 0;  // the first stretch of the current gap
  Ns current_gap = -1;
  forEachGapHostPart(view, [&](const Interval& gap, const HostPart& part, std::size_t launch) {
    if (gap.start != current_gap) {
      current_gap = gap.start;
      gap_first = stretches.size();
    }
    if (part.activity == HostActivity::kModuleLoad) {
      for (std::size_t i = gap_first; i < stretches.size(); ++i) stretches[i].before_module_load = true;
      gap_first = stretches.size();
    }
    const Ns length = part.end - part.start;
    if (part.activity != HostActivity::kCpu || length < kMinimumCostNs) return;
    if (length < kLaunchLoopStretchNs && inLaunchLoop(view, gap)) return;
    stretches.push_back({{part.start, part.end}, launch, false});
    total += part.end - part.start;
  });
  const double span = static_cast<double>(view.spanLength());
  if (stretches.empty() || static_cast<double>(total) < kMinimumShareOfSpan * span) return std::nullopt;
  const bool warn = static_cast<double>(total) >= kWarningShareOfSpan * span;
  FindingBuilder builder(view, "host-busy", warn ? Severity::kWarning : Severity::kInfo);
  // Only the longest stretches can become evidence: describe those in full (NVTX lookups).
  std::vector<Ns> lengths;
  for (const Stretch& s : stretches) lengths.push_back(s.time.length());
  const std::size_t shown = std::min(kMaxEvidence, lengths.size());
  std::nth_element(lengths.begin(), lengths.begin() + static_cast<std::ptrdiff_t>(shown - 1),
                   lengths.end(), std::greater<>());
  const Ns detailed_from = lengths[shown - 1];
  for (const Stretch& s : stretches) {
    builder.add(s.time, describeStretch(view, s, s.time.length() >= detailed_from));
  }
  return builder.build(
      fmt::format("the device idled {} in {} stretches while the host thread that issued the "
                  "next op ran its own code, in no CUDA call",
                  units::formatDuration(total), builder.count()),
      "Overlap host work with GPU work: prepare the next batch while the current one runs "
      "(prefetch, asynchronous data loading with worker processes and pinned memory), move "
      "setup out of the measured region, and cut per-step host overhead with CUDA graphs");
}

}  // namespace cuoverlap::diagnosis
