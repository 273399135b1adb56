// Phases and the steady state (also in docs/metrics.md, "Phases and steady state").
//
// start-up      from the trace's first event (runtime call, NVTX range or GPU op) to its first GPU
//               op: imports, model set-up and host data preparation before any GPU work;
// iterations    candidates in this order, the first credible one wins: the user's NVTX ranges
//               that repeat (nvtx_iterations.cpp; library ranges never count), CUDA graph
//               launches (graph_launch_iterations.cpp), the repeating pattern of kernel names
//               (kernel_pattern.cpp); `--iterations NAME` takes that NVTX range's instances and no
//               other candidate. Iterations start where their GPU work starts, so an
//               iteration's length is the loop's period: iterations x period = the span;
// warm-up       the leading iterations whose period exceeds kWarmupFactor x the median of the
//               later half of the iterations (compilation, allocator growth, autotuning), at most
//               half of them;
// credible      at least kMinIterations iterations after warm-up, whose window holds at least
//               kMinCoverage of the GPU work from its start to the end of the run; comparable:
//               iterations x the median period is at least kMinTypicalShare of the window (one
//               iteration holding most of the time is no loop of comparable work); and whose GPU
//               work fits them: in the median iteration, the ops that start in it end within
//               kMaxExtent periods of its start (twelve kernels on four streams started 1 us apart
//               are no loop, whatever their names);
// steady state  [GPU start of the first iteration after warm-up, end of the last iteration),
//               analyzed as the whole trace is (per device metrics and gaps, findings) through one
//               window of the device index (analyzeWindows). Without a credible candidate `found`
//               is false and `reason` says why, and the report leads with the whole run.
// Notes: a stretch with no GPU op running on any device that is longer than a quarter of the run
// (first event to last GPU op end) is said plainly, the start-up first.
#include <algorithm>
#include <limits>
#include <optional>
#include <stdexcept>

#include <fmt/format.h>

#include "cuoverlap/analysis.h"
#include "cuoverlap/diagnosis.h"
#include "cuoverlap/metrics.h"
#include "cuoverlap/units.h"
#include "diagnosis/block_max.h"
#include "diagnosis/range_aggregate.h"
#include "diagnosis/window_analysis.h"
#include "phases/iterations.h"
#include "phases/steady_state.h"

namespace cuoverlap::phases {
namespace {

constexpr double kMinCoverage = 0.5;
constexpr double kMaxExtent = 4.0;
constexpr double kMinTypicalShare = 0.5;
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

// Per iteration from `first` on, the latest end of the ops in scope that start in it (kNone when
// none), for iterations out of order (walkAfterWarmup finds those of iterations in order): one
// walk over the ops (sorted by start), since each iteration begins where the one before ends; a
// range-maximum index over all ops and two binary searches per iteration cost more.
std::vector<Ns> latestEnds(const Trace& trace, const Scope& scope, const IterationRun& r, std::size_t first) {
  const auto position = [&](Ns t) {
    return static_cast<std::size_t>(std::lower_bound(trace.ops.begin(), trace.ops.end(), t,
                                                     [](const GpuOp& op, Ns x) { return op.start < x; }) -
                                    trace.ops.begin());
  };
  std::vector<Ns> ends;
  std::size_t p = 0;
  Ns walked_to = std::numeric_limits<Ns>::min();  // p is the first op starting at or after it
  for (std::size_t i = first; i < r.starts.size(); ++i) {
    const Ns from = r.starts[i];
    const Ns to = i + 1 < r.starts.size() ? r.starts[i + 1] : r.last_end;
    if (i == first || from != walked_to) p = position(from);
    Ns latest = diagnosis::BlockMaxTree::kNone;
    for (; p < trace.ops.size() && trace.ops[p].start < to; ++p) {
      const GpuOp& op = trace.ops[p];
      if (opInScope(op, scope)) latest = std::max(latest, clippedEnd(op, scope));
    }
    walked_to = std::max(from, to);
    ends.push_back(latest);
  }
  return ends;
}

// What judge reads of the ops in scope from the iterations' start on (`first`, after warm-up), in
// one walk over them (sorted by start): the GPU work (GpuWork::in's sums) that starts in the
// iterations and from their start on, and per iteration the latest end (latestEnds), where the
// iterations are in time order (each op then falls in the last one starting at or before it).
// A prefix sum over every op (GpuWork) for the two sums and a second walk for the ends cost two
// passes and 8 bytes an op more.
struct AfterWarmup {
  Ns work_in_iterations = 0;
  Ns work = 0;
  std::vector<Ns> latest_ends;  // empty where the iterations are out of order
};

AfterWarmup walkAfterWarmup(const Trace& trace, const Scope& scope, const IterationRun& r, std::size_t first) {
  constexpr Ns kEnd = std::numeric_limits<Ns>::max();
  const std::size_t n = r.starts.size();
  const bool in_order = std::is_sorted(r.starts.begin() + static_cast<std::ptrdiff_t>(first), r.starts.end());
  AfterWarmup after;
  if (in_order) after.latest_ends.assign(n - first, diagnosis::BlockMaxTree::kNone);
  std::size_t i = first;  // the iteration of the op walked (in order)
  auto op = std::lower_bound(trace.ops.begin(), trace.ops.end(), r.starts[first],
                             [](const GpuOp& o, Ns x) { return o.start < x; });
  for (; op != trace.ops.end() && op->start < kEnd; ++op) {
    if (!opInScope(*op, scope)) continue;
    const Ns end = clippedEnd(*op, scope);
    const Ns length = end - clippedStart(*op, scope);
    after.work += length;
    if (op->start < r.last_end) after.work_in_iterations += length;
    if (!in_order) continue;
    while (i + 1 < n && op->start >= r.starts[i + 1]) ++i;
    const Ns to = i + 1 < n ? r.starts[i + 1] : r.last_end;
    if (op->start < to) after.latest_ends[i - first] = std::max(after.latest_ends[i - first], end);
  }
  return after;
}

// A candidate's iterations after warm-up, or why they are not a credible steady state.
struct Candidate {
  IterationRun run;
  std::vector<Ns> periods;
  std::size_t dropped = 0;
  std::string not_credible;  // empty: credible
};

Candidate judge(IterationRun run, const Trace& trace, const Scope& scope) {
  Candidate c;
  c.periods = durationsOf(run);
  c.dropped = warmupCount(c.periods);
  c.run = std::move(run);
  const IterationRun& r = c.run;
  const std::size_t kept = c.periods.size() - c.dropped;
  if (kept < kMinIterations) {
    c.not_credible = fmt::format("{} gives {} iterations, {} after warm-up: fewer than {}", r.source,
                                 c.periods.size(), kept, kMinIterations);
    return c;
  }
  const Ns start = r.starts[c.dropped];
  AfterWarmup after = walkAfterWarmup(trace, scope, r, c.dropped);
  const double coverage =
      after.work > 0 ? static_cast<double>(after.work_in_iterations) / static_cast<double>(after.work) : 0.0;
  if (coverage < kMinCoverage) {
    c.not_credible = fmt::format("{} gives {} iterations after warm-up holding {} of the GPU work: "
                                 "less than {}", r.source, kept, units::formatPercent(coverage),
                                 units::formatPercent(kMinCoverage));
    return c;
  }
  std::vector<Ns> kept_periods(c.periods.begin() + static_cast<std::ptrdiff_t>(c.dropped), c.periods.end());
  const double typical_span = static_cast<double>(durationSpread(kept_periods).median) * static_cast<double>(kept);
  const double span = static_cast<double>(r.last_end - start);
  if (typical_span < kMinTypicalShare * span) {
    c.not_credible = fmt::format("{} gives {} iterations of a median period of {} that together make "
                                 "{} of their {} window: not iterations of comparable work", r.source,
                                 kept, units::formatDuration(durationSpread(kept_periods).median),
                                 units::formatPercent(typical_span / span), units::formatDuration(r.last_end - start));
    return c;
  }
  std::vector<double> extents;
  const std::vector<Ns> latest_ends =
      after.latest_ends.empty() ? latestEnds(trace, scope, r, c.dropped) : std::move(after.latest_ends);
  for (std::size_t i = c.dropped; i < r.starts.size(); ++i) {
    const Ns to = i + 1 < r.starts.size() ? r.starts[i + 1] : r.last_end;
    const Ns latest = latest_ends[i - c.dropped];
    if (latest == diagnosis::BlockMaxTree::kNone || to <= r.starts[i]) continue;
    extents.push_back(static_cast<double>(latest - r.starts[i]) / static_cast<double>(to - r.starts[i]));
  }
  std::nth_element(extents.begin(), extents.begin() + static_cast<std::ptrdiff_t>(extents.size() / 2), extents.end());
  if (!extents.empty() && extents[extents.size() / 2] > kMaxExtent) {
    c.not_credible = fmt::format("{} gives {} iterations whose GPU work runs {:.0f}x past their "
                                 "period: not a loop", r.source, kept, extents[extents.size() / 2]);
  }
  return c;
}

// The first credible candidate (user NVTX ranges, graph launches, kernel pattern); else the first
// candidate's reason, `found` false. With --iterations NAME, that range's instances or nothing.
Candidate chooseIterations(const Trace& trace, const Scope& scope, const std::optional<std::string>& only) {
  std::optional<GpuWork> work;
  std::vector<IterationRun> runs;
  runs.push_back(nvtxIterations(trace, scope, work, only));
  if (only && runs.front().starts.empty()) {
    Candidate none;
    none.not_credible = fmt::format("--iterations {}: its instances overlap, launch no GPU work or are "
                                    "fewer than {} on one thread and nesting level", only->substr(0, 80),
                                    kMinIterations);
    return none;
  }
  if (!only) {
    runs.push_back(graphLaunchIterations(trace, scope));
    runs.push_back(kernelPatternIterations(trace, scope));
  }
  std::optional<Candidate> first;
  for (IterationRun& run : runs) {
    if (run.starts.empty()) continue;
    Candidate c = judge(std::move(run), trace, scope);
    if (c.not_credible.empty()) return c;
    if (!first) first = std::move(c);
  }
  if (first) return std::move(*first);
  Candidate none;
  none.not_credible = fmt::format("no NVTX range of the program, graph launch or sequence of kernel "
                                  "names repeats {} times or more", kMinIterations);
  return none;
}

}  // namespace

void analyzeSteadyWindow(const Trace& trace, const AnalysisOptions& options, SteadyState& steady) {
  if (!steady.found) return;
  WindowReport window = analyzeWindowWithoutMetrics(trace, options, {steady.start, steady.end});
  steady.devices = std::move(window.devices);
  steady.findings = std::move(window.findings);
}

std::vector<DeviceMetrics> steadyWindowMetrics(const Trace& trace, const AnalysisOptions& options,
                                               const SteadyState& steady) {
  if (!steady.found) return {};
  return windowMetrics(trace, options.scope, {steady.start, steady.end});
}

void addSteadyWindowMetrics(SteadyState& steady, std::vector<DeviceMetrics> metrics) {
  // The same devices in the same order (devicesInScope's rule, window_analysis.h); checked.
  if (metrics.size() != steady.devices.size()) {
    throw std::logic_error("the steady state's metrics do not match its devices");
  }
  for (std::size_t i = 0; i < metrics.size(); ++i) {
    if (metrics[i].device_id != steady.devices[i].metrics.device_id) {
      throw std::logic_error("the steady state's metrics do not match its devices");
    }
    steady.devices[i].metrics = std::move(metrics[i]);
  }
}

SteadyState chooseSteadyState(const Trace& trace, const AnalysisOptions& options) {
  SteadyState steady;
  Candidate c = chooseIterations(trace, options.scope, options.iterations);
  if (!c.not_credible.empty()) {
    steady.reason = std::move(c.not_credible);
    return steady;
  }
  const IterationRun& run = c.run;
  c.periods.erase(c.periods.begin(), c.periods.begin() + static_cast<std::ptrdiff_t>(c.dropped));
  steady.found = true;
  steady.source = run.source;
  steady.start = run.starts[c.dropped];
  steady.end = run.last_end;
  steady.iterations = c.periods.size();
  steady.warmup_dropped = c.dropped;
  steady.iteration_starts.assign(run.starts.begin() + static_cast<std::ptrdiff_t>(c.dropped),
                                 run.starts.end());
  steady.iteration_ns = durationSpread(c.periods);
  if (!run.host_ns.empty()) {
    steady.host_range_ns = durationSpread(std::vector<Ns>(
        run.host_ns.begin() + static_cast<std::ptrdiff_t>(c.dropped), run.host_ns.end()));
  }
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
  // Times count from the report's one origin, the trace's first GPU op on any device, even when
  // --device or --pid leaves that op out of scope (a pass over the ops: only for a gap to note).
  std::optional<Ns> origin;
  for (const Interval& gap : idle) {
    if (!long_enough(gap.length())) continue;
    if (!origin) origin = firstOpStart(trace);
    phases.notes.push_back(fmt::format(
        "from +{} to +{} ({}, {} of the run) no GPU work ran on any device",
        units::formatDuration(gap.start - *origin), units::formatDuration(gap.end - *origin),
        units::formatDuration(gap.length()),
        units::formatPercent(static_cast<double>(gap.length()) / run)));
  }
  return phases;
}

}  // namespace cuoverlap::phases
