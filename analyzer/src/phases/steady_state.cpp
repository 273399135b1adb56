// Phases and the steady state (also in docs/metrics.md, "Phases and steady state").
//
// start-up      from the trace's first event (runtime call, NVTX range or GPU op) to its first GPU
//               op: imports, model set-up and host data preparation before any GPU work;
// iterations    from NVTX ranges that repeat (nvtx_iterations.cpp) when a group of them holds at
//               least kMinCoverage of the GPU work from its first instance on; else from the
//               repeating pattern of kernel names (kernel_pattern.cpp);
// warm-up       the leading iterations whose duration exceeds kWarmupFactor x the median of the
//               later half of the iterations (compilation, allocator growth, autotuning), at most
//               half of them;
// steady state  [start of the first iteration after warm-up, end of the last iteration), analyzed
//               as the whole trace is (per device metrics and gaps, findings) through one window
//               of the device index (analyzeWindows). Needs kMinIterations iterations after
//               warm-up; otherwise `found` is false and `reason` says what was missing.
// Notes: a stretch with no GPU op running on any device that is longer than a quarter of the run
// (first event to last GPU op end) is said plainly, the start-up first.
#include <algorithm>

#include <fmt/format.h>

#include "cuoverlap/diagnosis.h"
#include "cuoverlap/metrics.h"
#include "cuoverlap/units.h"
#include "diagnosis/range_aggregate.h"
#include "phases/iterations.h"
#include "phases/steady_state.h"

namespace cuoverlap::phases {
namespace {

constexpr double kMinCoverage = 0.5;
constexpr double kWarmupFactor = 1.5;
constexpr double kNoteShare = 0.25;

std::vector<Ns> durationsOf(const IterationRun& run) {
  std::vector<Ns> d;
  for (std::size_t i = 0; i < run.starts.size(); ++i) {
    d.push_back((i + 1 < run.starts.size() ? run.starts[i + 1] : run.last_end) - run.starts[i]);
  }
  return d;
}

std::size_t warmupCount(const std::vector<Ns>& durations) {
  std::vector<Ns> later(durations.begin() + static_cast<std::ptrdiff_t>(durations.size() / 2),
                        durations.end());
  const Ns typical = durationSpread(later).median;
  std::size_t dropped = 0;
  while (dropped < durations.size() / 2 &&
         static_cast<double>(durations[dropped]) > kWarmupFactor * static_cast<double>(typical)) {
    ++dropped;
  }
  return dropped;
}

IterationRun chooseIterations(const Trace& trace, const Scope& scope, std::string& why_not_nvtx) {
  std::optional<GpuWork> work;
  IterationRun nvtx = nvtxIterations(trace, scope, work);
  if (!nvtx.starts.empty()) {
    const Ns after = work->in(nvtx.starts.front(), std::numeric_limits<Ns>::max());
    const double coverage = after > 0 ? static_cast<double>(nvtx.gpu_work_ns) / after : 0.0;
    if (coverage >= kMinCoverage) return nvtx;
    why_not_nvtx = fmt::format("NVTX ranges '{}' hold only {} of the GPU work after them",
                               nvtx.source.substr(5), units::formatPercent(coverage));
  } else {
    why_not_nvtx = fmt::format("no NVTX range repeats {} times or more", kMinIterations);
  }
  return kernelPatternIterations(trace, scope);
}

}  // namespace

SteadyState findSteadyState(const Trace& trace, const AnalysisOptions& options) {
  SteadyState steady;
  std::string why_not_nvtx;
  IterationRun run = chooseIterations(trace, options.scope, why_not_nvtx);
  if (run.starts.empty()) {
    steady.reason = why_not_nvtx + ", and no sequence of kernel names repeats " +
                    std::to_string(kMinIterations) + " times or more";
    return steady;
  }
  std::vector<Ns> durations = durationsOf(run);
  const std::size_t dropped = warmupCount(durations);
  if (durations.size() - dropped < kMinIterations) {
    steady.reason = fmt::format("{} gives {} iterations, {} after warm-up: fewer than {}", run.source,
                                durations.size(), durations.size() - dropped, kMinIterations);
    return steady;
  }
  durations.erase(durations.begin(), durations.begin() + static_cast<std::ptrdiff_t>(dropped));
  steady.found = true;
  steady.source = run.source;
  steady.start = run.starts[dropped];
  steady.end = run.last_end;
  steady.iterations = durations.size();
  steady.warmup_dropped = dropped;
  steady.iteration_starts.assign(run.starts.begin() + static_cast<std::ptrdiff_t>(dropped), run.starts.end());
  steady.iteration_ns = durationSpread(durations);
  std::vector<WindowReport> window = analyzeWindows(trace, options, {{steady.start, steady.end}});
  steady.devices = std::move(window[0].devices);
  steady.findings = std::move(window[0].findings);
  return steady;
}

// One pass over the ops (sorted by start) with O(1) state: no copy of the ops' intervals.
Phases findPhases(const Trace& trace, const Scope& scope) {
  Phases phases;
  bool any = false;
  Ns first = 0;
  Ns covered_until = 0;
  // The 3 longest idle stretches between GPU work (all devices): no more can exceed a quarter.
  std::vector<Interval> idle;
  const auto keep = [&idle](Interval gap) {
    if (idle.size() < 3) return idle.push_back(gap);
    auto shortest = std::min_element(idle.begin(), idle.end(), [](const Interval& a, const Interval& b) {
      return a.length() < b.length();
    });
    if (gap.length() > shortest->length()) *shortest = gap;
  };
  for (const GpuOp& op : trace.ops) {
    if (!opInScope(op, scope)) continue;
    if (!any) {
      first = covered_until = op.start;
      any = true;
    }
    if (op.start > covered_until) keep({covered_until, op.start});
    covered_until = std::max(covered_until, op.end);
  }
  if (!any) return phases;
  phases.run_start = first;
  for (const RuntimeCall& call : trace.runtime_calls) {
    if (call.start > 0 && (!scope.pid || call.pid == *scope.pid)) phases.run_start = std::min(phases.run_start, call.start);
  }
  for (const NvtxRange& range : trace.nvtx) {
    if (range.start > 0 && (!scope.pid || range.pid == *scope.pid)) phases.run_start = std::min(phases.run_start, range.start);
  }
  phases.run_end = covered_until;
  phases.startup_ns = first - phases.run_start;
  const Ns run = phases.run_end - phases.run_start;
  const auto long_enough = [&](Ns length) { return static_cast<double>(length) > kNoteShare * run; };
  if (long_enough(phases.startup_ns)) {
    phases.notes.push_back(fmt::format("the first {} ({} of the run) are host start-up: no GPU work "
                                       "was submitted", units::formatDuration(phases.startup_ns),
                                       units::formatPercent(static_cast<double>(phases.startup_ns) / run)));
  }
  std::sort(idle.begin(), idle.end(), [](const Interval& a, const Interval& b) { return a.start < b.start; });
  for (const Interval& gap : idle) {
    if (!long_enough(gap.length())) continue;
    phases.notes.push_back(fmt::format(
        "from +{} to +{} ({}, {} of the run) no GPU work ran on any device",
        units::formatDuration(gap.start - first), units::formatDuration(gap.end - first),
        units::formatDuration(gap.length()),
        units::formatPercent(static_cast<double>(gap.length()) / run)));
  }
  return phases;
}

}  // namespace cuoverlap::phases
