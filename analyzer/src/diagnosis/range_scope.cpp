// Scope by NVTX range and by time window.
//
// An instance of a range selected by --range PATTERN (range_pattern.cpp) is an NVTX push/pop or
// start/end range of the scoped process. NVTX ranges are host time; the GPU work they issue runs
// later. An instance's window is therefore projected onto the GPU: [range start, max(range end,
// end of the last op launched by a call of the same thread that began inside the range)).
// Metrics, gaps and findings are computed per instance in that window (analyzeWindows), then
// summed (sumRangeInstances, mergeRangeFindings).
//
// Cost: the projection is one pass over the runtime calls and one over the ops (each op's
// correlation id looked up by binary search among the calls inside selected ranges), then a
// range-maximum query per instance over its thread's calls in start order (BlockMaxTree).
//
// Work bound: analyzing an instance visits the ops and calls in its window, so instances that
// overlap each other multiply the work (10^5 instances over the same 10^4 ops are 10^9 visits:
// minutes). When the ops and calls starting inside the instances, summed over all of them, pass
// kMaxInstanceVisits, every k-th instance in time order is analyzed (k the smallest stride that
// fits), and those kept in full (--instances) too; the summary says how many were summed.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>

#include "cuoverlap/diagnosis.h"
#include "cuoverlap/error.h"
#include "cuoverlap/metrics.h"
#include "diagnosis/block_max.h"
#include "diagnosis/range_aggregate.h"

namespace cuoverlap {
namespace {

constexpr double kMaxDurationNs = 4611686018427387904.0;  // 2^62

// Per thread of the selected ranges: its launch calls inside those ranges, by start, each with
// the latest end of the ops it launched.
class LaunchedWorkEnds {
 public:
  LaunchedWorkEnds(const Trace& trace, const std::vector<std::size_t>& ranges) {
    for (std::size_t r : ranges) threads_.push_back(threadOf(trace.nvtx[r]));
    std::sort(threads_.begin(), threads_.end());
    threads_.erase(std::unique(threads_.begin(), threads_.end()), threads_.end());
    calls_.resize(threads_.size());
    std::vector<std::vector<Interval>> covered(threads_.size());
    for (std::size_t r : ranges) {
      covered[slot(threadOf(trace.nvtx[r]))].push_back({trace.nvtx[r].start, trace.nvtx[r].end});
    }
    for (auto& intervals : covered) intervals = unionOf(std::move(intervals));
    collectCalls(trace, covered);
    matchOps(trace);
    for (const auto& calls : calls_) {
      end_trees_.emplace_back(calls.size(), [&](std::size_t p) { return calls[p].work_end; });
      start_trees_.emplace_back(calls.size(), [&](std::size_t p) { return calls[p].minus_work_start; });
    }
  }

  // The GPU work launched from inside `range` by its thread: [its first op's start, max(range end,
  // its last op's end)); [range start, range end) when it launched none.
  Interval projected(const NvtxRange& range) const {
    const std::size_t t = slot(threadOf(range));
    const auto& calls = calls_[t];
    const auto at = [&](Ns time) {
      return static_cast<std::size_t>(
          std::lower_bound(calls.begin(), calls.end(), time,
                           [](const Call& c, Ns x) { return c.start < x; }) - calls.begin());
    };
    const std::size_t from = at(range.start), to = at(range.end);
    const Ns launched_end = end_trees_[t].maxIn(from, to, [&](std::size_t p) { return calls[p].work_end; });
    const Ns minus_start = start_trees_[t].maxIn(from, to, [&](std::size_t p) { return calls[p].minus_work_start; });
    const Ns start = minus_start == diagnosis::BlockMaxTree::kNone ? range.start : -minus_start;
    return {start, std::max(range.end, launched_end)};
  }

 private:
  struct Call {
    Ns start = 0;
    std::uint32_t correlation_id = 0;
    std::uint32_t pid = 0;
    Ns work_end = diagnosis::BlockMaxTree::kNone;
    Ns minus_work_start = diagnosis::BlockMaxTree::kNone;  // -(first op start): a max tree finds the min
  };
  using Thread = std::pair<std::uint32_t, std::uint32_t>;  // pid, tid

  static Thread threadOf(const NvtxRange& range) { return {range.pid, range.tid}; }
  std::size_t slot(const Thread& thread) const {
    return static_cast<std::size_t>(
        std::lower_bound(threads_.begin(), threads_.end(), thread) - threads_.begin());
  }

  void collectCalls(const Trace& trace, const std::vector<std::vector<Interval>>& covered) {
    for (const RuntimeCall& call : trace.runtime_calls) {
      if (call.correlation_id == 0) continue;
      const Thread thread{call.pid, call.tid};
      const std::size_t t = slot(thread);
      if (t == threads_.size() || threads_[t] != thread) continue;
      const auto& union_of_ranges = covered[t];
      auto it = std::upper_bound(union_of_ranges.begin(), union_of_ranges.end(), call.start,
                                 [](Ns x, const Interval& i) { return x < i.start; });
      if (it == union_of_ranges.begin() || std::prev(it)->end <= call.start) continue;
      calls_[t].push_back({call.start, call.correlation_id, call.pid});
    }
    for (auto& calls : calls_) {
      std::stable_sort(calls.begin(), calls.end(),
                       [](const Call& a, const Call& b) { return a.start < b.start; });
    }
  }

  // Each op's end goes to every collected call of its process with its correlation id.
  void matchOps(const Trace& trace) {
    std::vector<std::tuple<std::uint32_t, std::uint32_t, Call*>> by_id;  // correlation, pid, call
    for (auto& calls : calls_) {
      for (Call& call : calls) by_id.emplace_back(call.correlation_id, call.pid, &call);
    }
    std::sort(by_id.begin(), by_id.end(), [](const auto& a, const auto& b) {
      return std::tie(std::get<0>(a), std::get<1>(a)) < std::tie(std::get<0>(b), std::get<1>(b));
    });
    for (const GpuOp& op : trace.ops) {
      if (op.correlation_id == 0) continue;
      auto it = std::lower_bound(by_id.begin(), by_id.end(), std::make_pair(op.correlation_id, op.pid),
                                 [](const auto& entry, const std::pair<std::uint32_t, std::uint32_t>& key) {
                                   return std::make_pair(std::get<0>(entry), std::get<1>(entry)) < key;
                                 });
      for (; it != by_id.end() && std::get<0>(*it) == op.correlation_id && std::get<1>(*it) == op.pid; ++it) {
        Call& call = *std::get<2>(*it);
        call.work_end = std::max(call.work_end, op.end);
        call.minus_work_start = std::max(call.minus_work_start, -op.start);
      }
    }
  }

  std::vector<Thread> threads_;
  std::vector<std::vector<Call>> calls_;
  std::vector<diagnosis::BlockMaxTree> end_trees_;
  std::vector<diagnosis::BlockMaxTree> start_trees_;
};

}  // namespace

Ns parseDuration(std::string_view text) {
  std::size_t digits = 0;
  while (digits < text.size() &&
         (std::isdigit(static_cast<unsigned char>(text[digits])) || text[digits] == '.')) {
    ++digits;
  }
  const std::string number(text.substr(0, digits));
  const std::string_view unit = text.substr(digits);
  double scale = 0;
  if (unit.empty() || unit == "ns") scale = 1;
  if (unit == "us") scale = 1e3;
  if (unit == "ms") scale = 1e6;
  if (unit == "s") scale = 1e9;
  const bool has_digit = std::any_of(number.begin(), number.end(), [](char c) {
    return std::isdigit(static_cast<unsigned char>(c)) != 0;
  });
  if (!has_digit || scale == 0 || std::count(number.begin(), number.end(), '.') > 1) {
    throw UserError(fmt::format("bad duration '{}': expected a number with ns, us, ms or s", text));
  }
  // strtod, not stod: a long digit string is out of range, not an exception; 2^62 ns (146 years)
  // bounds every valid duration and keeps END - START of a window representable.
  const double ns = std::strtod(number.c_str(), nullptr) * scale;
  if (!(ns <= kMaxDurationNs)) {
    throw UserError(fmt::format("bad duration '{}': larger than 2^62 ns", text));
  }
  return static_cast<Ns>(std::llround(ns));
}

std::pair<Ns, Ns> parseWindow(std::string_view text, std::optional<Ns> origin) {
  const auto colon = text.find(':');
  if (colon == std::string_view::npos) {
    throw UserError(fmt::format("bad window '{}': expected START:END", text));
  }
  // "+9.741ms": relative to the trace's first GPU op, as reports print times.
  const auto side = [&](std::string_view part) {
    if (part.empty() || part.front() != '+') return parseDuration(part);
    if (!origin) {
      throw UserError(fmt::format("bad window '{}': +TIME needs a trace to count from", text));
    }
    return *origin + parseDuration(part.substr(1));
  };
  const Ns start = side(text.substr(0, colon));
  const Ns end = side(text.substr(colon + 1));
  if (end <= start) throw UserError(fmt::format("bad window '{}': END must be after START", text));
  return {start, end};
}

std::vector<Interval> projectedRangeWindows(const Trace& trace, const std::vector<std::size_t>& ranges) {
  const LaunchedWorkEnds work(trace, ranges);
  std::vector<Interval> windows;
  windows.reserve(ranges.size());
  for (std::size_t r : ranges) windows.push_back(work.projected(trace.nvtx[r]));
  return windows;
}

void endWhereTheNextBegins(std::vector<Interval>& windows) {
  Ns next_start = std::numeric_limits<Ns>::max();
  for (std::size_t i = windows.size(); i-- > 0;) {
    windows[i].end = std::min(windows[i].end, next_start);
    if (windows[i].end < windows[i].start) windows[i].end = windows[i].start;
    next_start = std::min(next_start, windows[i].start);
  }
}

namespace {

constexpr std::size_t kRangeNames = 10;
constexpr std::size_t kSlowest = 5;
constexpr std::uint64_t kMaxInstanceVisits = 2'000'000;

// Items of `items` (sorted by start) that start in [start, end).
template <typename T>
std::uint64_t startingIn(const std::vector<T>& items, Ns start, Ns end) {
  const auto before = [](const T& item, Ns t) { return item.start < t; };
  const auto first = std::lower_bound(items.begin(), items.end(), start, before);
  const auto last = std::lower_bound(first, items.end(), end, before);
  return static_cast<std::uint64_t>(last - first);
}

// Per instance: 1 when it is analyzed (all, or every k-th and the detailed ones: see above).
std::vector<char> analyzedInstances(const Trace& trace, const std::vector<RangeInstanceRef>& instances,
                                    const std::vector<std::size_t>& detail, std::uint64_t& visits) {
  visits = 0;
  for (const RangeInstanceRef& instance : instances) {
    visits += 1 + startingIn(trace.ops, instance.start, instance.end) +
              startingIn(trace.runtime_calls, instance.start, instance.end);
  }
  const std::uint64_t stride = (visits + kMaxInstanceVisits - 1) / kMaxInstanceVisits;
  std::vector<char> analyzed(instances.size(), 0);
  for (std::size_t i = 0; i < instances.size(); i += std::max<std::uint64_t>(stride, 1)) analyzed[i] = 1;
  for (std::size_t i : detail) analyzed[i] = 1;
  return analyzed;
}

// The instances' windows, projected onto the GPU (see the top of this file).
std::vector<RangeInstanceRef> rangeInstances(const Trace& trace, const AnalysisOptions& options) {
  const std::vector<std::size_t> ranges = rangesMatching(trace, options.scope);
  const std::vector<Interval> windows = projectedRangeWindows(trace, ranges);
  // Per thread (pid, tid), its instances' windows by start, each ending where the next begins.
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::vector<std::size_t>> by_thread;
  for (std::size_t k = 0; k < ranges.size(); ++k) {
    by_thread[{trace.nvtx[ranges[k]].pid, trace.nvtx[ranges[k]].tid}].push_back(k);
  }
  std::vector<Interval> clipped(windows.size());
  for (auto& entry : by_thread) {
    std::vector<std::size_t>& ks = entry.second;
    std::stable_sort(ks.begin(), ks.end(), [&](std::size_t a, std::size_t b) { return windows[a].start < windows[b].start; });
    std::vector<Interval> sorted;
    for (std::size_t k : ks) sorted.push_back(windows[k]);
    endWhereTheNextBegins(sorted);
    for (std::size_t i = 0; i < ks.size(); ++i) clipped[ks[i]] = sorted[i];
  }
  std::vector<RangeInstanceRef> instances;
  instances.reserve(ranges.size());
  for (std::size_t k = 0; k < ranges.size(); ++k) {
    const NvtxRange& range = trace.nvtx[ranges[k]];
    instances.push_back({std::string(trace.str(range.text)), clipped[k].start, clipped[k].end});
  }
  return instances;
}

AnalysisOptions withoutRange(const AnalysisOptions& options) {
  AnalysisOptions result = options;
  result.scope.range = std::nullopt;
  return result;
}

std::vector<std::pair<std::string, std::uint64_t>> namesByCount(
    const std::vector<RangeInstanceRef>& instances) {
  std::map<std::string, std::uint64_t> counts;
  for (const RangeInstanceRef& instance : instances) ++counts[instance.name];
  std::vector<std::pair<std::string, std::uint64_t>> names(counts.begin(), counts.end());
  std::stable_sort(names.begin(), names.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  if (names.size() > kRangeNames) names.resize(kRangeNames);
  return names;
}

// Positions of the `limit` longest instances, longest first (ties: earlier first).
std::vector<std::size_t> longest(const std::vector<RangeInstanceRef>& instances, std::size_t limit) {
  std::vector<std::size_t> order(instances.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  const auto longer = [&](std::size_t a, std::size_t b) {
    const Ns da = instances[a].end - instances[a].start;
    const Ns db = instances[b].end - instances[b].start;
    return da != db ? da > db : a < b;
  };
  limit = std::min(limit, order.size());
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(limit), order.end(), longer);
  order.resize(limit);
  return order;
}

RangeSummary summarize(const AnalysisOptions& options, const std::vector<RangeInstanceRef>& instances) {
  RangeSummary summary;
  summary.pattern = *options.scope.range;
  summary.count = instances.size();
  summary.names = namesByCount(instances);
  std::vector<Ns> durations;
  durations.reserve(instances.size());
  for (const RangeInstanceRef& instance : instances) durations.push_back(instance.end - instance.start);
  for (Ns d : durations) summary.total_ns += d;
  summary.duration_ns = durationSpread(durations);
  for (std::size_t i : longest(instances, kSlowest)) summary.slowest.push_back(instances[i]);
  return summary;
}

}  // namespace

void analyzeRanges(const Trace& trace, const AnalysisOptions& options, TraceReport& report) {
  const std::vector<RangeInstanceRef> instances = rangeInstances(trace, options);
  // Instances kept in full: the slowest, in time order; kept[i] is i's slot or -1.
  std::vector<std::size_t> detail = longest(instances, options.range_detail);
  std::sort(detail.begin(), detail.end());
  std::uint64_t visits = 0;
  const std::vector<char> analyzed = analyzedInstances(trace, instances, detail, visits);
  std::vector<Interval> windows;
  std::vector<std::size_t> instance_of;  // windows[w] is instance instance_of[w]
  for (std::size_t i = 0; i < instances.size(); ++i) {
    if (!analyzed[i]) continue;
    windows.push_back({instances[i].start, instances[i].end});
    instance_of.push_back(i);
  }
  std::vector<std::ptrdiff_t> kept(instances.size(), -1);
  report.range_instances.clear();
  for (std::size_t i : detail) {
    kept[i] = static_cast<std::ptrdiff_t>(report.range_instances.size());
    report.range_instances.push_back({instances[i].name, instances[i].start, instances[i].end, {}, {}});
  }
  RangeAggregator sum(windows.size());
  analyzeWindows(trace, withoutRange(options), windows,
                 [&](std::size_t w, DeviceReport&& device, std::vector<Finding>&& findings) {
                   sum.add(w, device, findings);
                   const std::ptrdiff_t slot = kept[instance_of[w]];
                   if (slot < 0) return;
                   RangeInstance& instance = report.range_instances[static_cast<std::size_t>(slot)];
                   instance.devices.push_back(std::move(device));
                   instance.findings.insert(instance.findings.end(), findings.begin(), findings.end());
                 });
  for (RangeInstance& instance : report.range_instances) sortFindingsByCost(instance.findings);
  report.devices = sum.devices();
  report.findings = sum.findings();
  report.range_summary = summarize(options, instances);
  report.range_summary->analyzed = windows.size();
  report.range_summary->visits = visits;
  report.range_summary->devices = sum.spreads();
}

std::vector<RangeInstance> analyzeRangeInstances(const Trace& trace, const AnalysisOptions& options) {
  if (!options.scope.range) return {};
  TraceReport report;
  AnalysisOptions all = options;
  all.range_detail = static_cast<std::size_t>(-1);
  analyzeRanges(trace, all, report);
  return std::move(report.range_instances);
}

}  // namespace cuoverlap
