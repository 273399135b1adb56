// Iterations from NVTX ranges that repeat.
//
// Only the user's ranges count: ranges that libraries emit (a domain other than the default one;
// NCCL's `nccl*`, PyTorch's internal `aten::*`, `c10d::*`, `autograd::*`, `Optimizer.*` and
// `nn.Module*`, cuDNN's and cuBLAS's
// `cudnn*`/`cublas*`, XLA's `Xla*` and `Thunk*`) mark a slice of an iteration or a library call,
// never the user's loop. Ranges (push/pop or start/end, end > start, of the scope's process) are
// grouped by (pid, tid,
// nesting depth, name pattern), where the pattern is the name with every digit run replaced by N
// ("step 7" and "step 12" are one group; op ids in PyTorch's names vanish the same way). A group
// qualifies with at least kMinIterations instances that do not overlap one another. Its score is
// the GPU work (sum of op durations, ops by start) inside its instances projected onto the GPU
// (range start to the end of the work launched inside it): an outer `step` holds all of a step's
// work, a nested `forward` or a per-op range only part of it. The best score wins; ties go to the
// outer level. Each instance is projected onto the GPU (projectedRangeWindows: from the first op
// it launched to the last op's end), and iteration i runs from instance i's GPU start to instance
// i+1's: the loop's period, whether the host range covers only the enqueue (a graph replay) or
// only part of the step (a DataLoader wait outside it). The last ends at its projected end.
#include <algorithm>
#include <cctype>
#include <map>
#include <tuple>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cuoverlap/diagnosis.h"
#include "cuoverlap/edit_distance.h"
#include "cuoverlap/error.h"
#include "cuoverlap/metrics.h"
#include "phases/iterations.h"

namespace cuoverlap::phases {

GpuWork::GpuWork(const Trace& trace, const Scope& scope) : trace_(trace) {
  Ns sum = 0;
  prefix_.reserve(trace.ops.size());
  for (const GpuOp& op : trace.ops) {  // sorted by start (reader)
    if (opInScope(op, scope)) sum += clippedEnd(op, scope) - clippedStart(op, scope);
    prefix_.push_back(sum);
  }
}

Ns GpuWork::in(Ns from, Ns to) const {
  const auto at = [&](Ns t) {
    const auto i = std::lower_bound(trace_.ops.begin(), trace_.ops.end(), t,
                                    [](const GpuOp& op, Ns x) { return op.start < x; }) -
                   trace_.ops.begin();
    return i == 0 ? Ns{0} : prefix_[static_cast<std::size_t>(i - 1)];
  };
  return to > from ? at(to) - at(from) : 0;
}

std::string namePattern(std::string_view name) {
  std::string pattern;
  for (std::size_t i = 0; i < name.size(); ++i) {
    if (std::isdigit(static_cast<unsigned char>(name[i]))) {
      if (i == 0 || !std::isdigit(static_cast<unsigned char>(name[i - 1]))) pattern += 'N';
      continue;
    }
    pattern += name[i];
  }
  return pattern;
}

bool isLibraryRange(std::string_view name, std::string_view domain) {
  if (!domain.empty()) return true;
  static constexpr std::string_view kPrefixes[] = {"nccl", "NCCL", "aten::", "c10d::", "autograd::",
                                                   "cudnn", "cuDNN", "cublas", "cuBLAS", "Xla",
                                                   "Thunk", "Optimizer.", "nn.Module"};
  for (std::string_view prefix : kPrefixes) {
    if (name.substr(0, prefix.size()) == prefix) return true;
  }
  return false;
}

namespace {

using GroupKey = std::tuple<std::uint32_t, std::uint32_t, std::int32_t, std::string>;

IterationRun scoreGroup(const Trace& trace, const std::string& pattern,
                        const std::vector<std::size_t>& ranges, const GpuWork& work) {
  IterationRun run;
  for (std::size_t k = 1; k < ranges.size(); ++k) {
    if (trace.nvtx[ranges[k]].start < trace.nvtx[ranges[k - 1]].end) return run;  // overlapping
  }
  const std::vector<Interval> windows = projectedRangeWindows(trace, ranges);
  run.source = "nvtx:" + pattern;
  for (std::size_t k = 0; k < ranges.size(); ++k) {
    // An instance that launched nothing starts no earlier than the one before.
    run.starts.push_back(k == 0 ? windows[k].start : std::max(windows[k].start, run.starts.back()));
    run.host_ns.push_back(trace.nvtx[ranges[k]].end - trace.nvtx[ranges[k]].start);
  }
  for (std::size_t k = 0; k < ranges.size(); ++k) {
    const Ns next = k + 1 < ranges.size() ? run.starts[k + 1] : windows[k].end;
    run.gpu_work_ns += work.in(run.starts[k], std::min(windows[k].end, next));
  }
  run.last_end = std::max(windows.back().end, run.starts.back());
  return run;
}

// --iterations NAME as a name pattern: "step 7" and "step N" are "step N", and so is the glob
// `cuoverlap ranges` prints for them, "step *".
std::string wantedPattern(const std::string& name) {
  std::string pattern = namePattern(name);
  for (char& c : pattern) c = c == '*' ? 'N' : c;
  return pattern;
}

// How a pattern is offered to the user: its one name ("d2h"), or, for names that differ in their
// digits, the glob `cuoverlap ranges` prints ("tile *"), which --iterations takes back.
std::string shownPattern(const Trace& trace, const std::vector<std::size_t>& ranges) {
  const std::string_view first = trace.str(trace.nvtx[ranges.front()].text);
  for (std::size_t i : ranges) {
    if (trace.str(trace.nvtx[i].text) != first) {
      std::string glob;
      for (std::size_t k = 0; k < first.size(); ++k) {
        const bool digit = std::isdigit(static_cast<unsigned char>(first[k])) != 0;
        if (!digit) glob += first[k];
        else if (k == 0 || !std::isdigit(static_cast<unsigned char>(first[k - 1]))) glob += '*';
      }
      return glob;
    }
  }
  return std::string(first);
}

// --iterations NAME that no range of the scope has: its range names, those that repeat first,
// closest to NAME first (edit distance to the name or its start), with their instance counts.
[[noreturn]] void throwUnknownIterations(const Trace& trace, const std::string& name,
                                         const std::map<GroupKey, std::vector<std::size_t>>& groups) {
  std::map<std::string, std::size_t> instances;
  for (const auto& [key, ranges] : groups) instances[shownPattern(trace, ranges)] += ranges.size();
  std::vector<std::tuple<bool, std::size_t, std::string>> known;
  for (const auto& [pattern, count] : instances) {
    // A typo of a name's start ("tiel" for "tile *") is as close as one of the whole name.
    const std::size_t distance = std::min(editDistance(name, pattern),
                                          editDistance(name, std::string_view(pattern).substr(0, name.size())));
    known.emplace_back(count < kMinIterations, distance, pattern);
  }
  std::sort(known.begin(), known.end());
  std::vector<std::string> shown;
  for (std::size_t i = 0; i < known.size() && i < 5; ++i) {
    const std::string& pattern = std::get<2>(known[i]);
    shown.push_back(fmt::format("'{}' ({})", pattern.substr(0, 80), instances[pattern]));
  }
  if (shown.empty()) {
    throw UserError(fmt::format("{}: --iterations {}: the trace has no NVTX ranges to take iterations from",
                                trace.path, name.substr(0, 80)));
  }
  throw UserError(fmt::format("{}: --iterations {}: no NVTX range is named so; known ranges: {} "
                              "(`cuoverlap ranges {}` lists them all)",
                              trace.path, name.substr(0, 80), fmt::join(shown, ", "), trace.path));
}

}  // namespace

IterationRun nvtxIterations(const Trace& trace, const Scope& scope, std::optional<GpuWork>& work,
                            const std::optional<std::string>& only) {
  std::map<GroupKey, std::vector<std::size_t>> groups;
  std::map<StringId, std::string> patterns;
  for (std::size_t i = 0; i < trace.nvtx.size(); ++i) {
    const NvtxRange& range = trace.nvtx[i];
    if (!isNvtxRange(range) || (scope.pid && range.pid != *scope.pid)) continue;
    if (!only && isLibraryRange(trace.str(range.text), trace.str(range.domain))) continue;
    auto it = patterns.find(range.text);
    if (it == patterns.end()) it = patterns.emplace(range.text, namePattern(trace.str(range.text))).first;
    groups[{range.pid, range.tid, range.depth, it->second}].push_back(i);
  }
  if (only) {
    const std::string wanted = wantedPattern(*only);
    std::map<GroupKey, std::vector<std::size_t>> named;
    for (auto& [key, ranges] : groups) {
      if (std::get<3>(key) == wanted) named.emplace(key, std::move(ranges));
    }
    if (named.empty()) throwUnknownIterations(trace, *only, groups);
    groups = std::move(named);
  }
  IterationRun best;
  std::int32_t best_depth = 0;
  for (auto& [key, ranges] : groups) {
    if (ranges.size() < kMinIterations) continue;
    std::stable_sort(ranges.begin(), ranges.end(), [&](std::size_t a, std::size_t b) {
      return trace.nvtx[a].start < trace.nvtx[b].start;
    });
    if (!work) work.emplace(trace, scope);
    IterationRun run = scoreGroup(trace, std::get<3>(key), ranges, *work);
    const std::int32_t depth = std::get<2>(key);
    if (run.starts.empty() || run.gpu_work_ns == 0) continue;
    if (best.starts.empty() || run.gpu_work_ns > best.gpu_work_ns ||
        (run.gpu_work_ns == best.gpu_work_ns && depth < best_depth)) {
      best = std::move(run);
      best_depth = depth;
    }
  }
  return best;
}

}  // namespace cuoverlap::phases
