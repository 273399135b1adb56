// `cuoverlap ranges FILE...`: the NVTX ranges of each trace, one row per name: instances, total and
// median duration (host time: NVTX ranges are pushed and popped by the host), and the share of the
// GPU's busy time (union of all ops, all devices) that falls inside the name's instances projected
// onto the GPU (range start to the end of the work launched inside it; docs/reports.md). Sorted by
// that share, then by total duration. Names to give `analyze --range`.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "help_sections.h"
#include "cuoverlap/diagnosis.h"
#include "cuoverlap/inert_text.h"
#include "cuoverlap/intervals.h"
#include "cuoverlap/reader.h"
#include "cuoverlap/units.h"

namespace cuoverlap::cli {
namespace {

// Names are printed inert and cut (a trace may hold 1 MB names); `analyze --range` takes a glob.
constexpr std::size_t kMaxNameBytes = 300;

struct RangesArgs {
  std::vector<std::string> files;
  std::size_t limit = 40;
};

// Names that differ only in their digits ("step 7", "step 12") are one row, shown as the glob that
// selects them all ("step *"); a name with no sibling is shown as it is.
std::string globOf(std::string_view name) {
  std::string glob;
  for (std::size_t i = 0; i < name.size(); ++i) {
    const bool digit = std::isdigit(static_cast<unsigned char>(name[i])) != 0;
    if (!digit) glob += name[i];
    else if (i == 0 || !std::isdigit(static_cast<unsigned char>(name[i - 1]))) glob += '*';
  }
  return glob;
}

struct NameRow {
  std::string name;
  std::vector<StringId> names;    // distinct names in the row
  std::vector<Ns> durations;
  std::vector<Interval> windows;  // projected onto the GPU
  Ns gpu_busy_ns = 0;
};

// Busy time of `busy` (sorted, disjoint) inside the union of `windows`.
Ns busyInside(const std::vector<Interval>& busy, std::vector<Interval> windows) {
  return totalLength(intersectionOf(busy, unionOf(std::move(windows))));
}

void listRanges(const Trace& trace, std::size_t limit) {
  std::vector<Interval> busy;
  for (const GpuOp& op : trace.ops) {
    if (op.start > 0 && op.end > op.start) busy.push_back({op.start, op.end});
  }
  busy = unionOf(std::move(busy));
  const Ns busy_total = totalLength(busy);
  std::vector<std::size_t> ranges;
  for (std::size_t i = 0; i < trace.nvtx.size(); ++i) {
    if (isNvtxRange(trace.nvtx[i])) ranges.push_back(i);
  }
  const std::vector<Interval> windows = projectedRangeWindows(trace, ranges);
  std::map<std::string, NameRow> rows;
  for (std::size_t k = 0; k < ranges.size(); ++k) {
    const NvtxRange& r = trace.nvtx[ranges[k]];
    NameRow& row = rows[globOf(trace.str(r.text))];
    if (std::find(row.names.begin(), row.names.end(), r.text) == row.names.end()) row.names.push_back(r.text);
    row.durations.push_back(r.end - r.start);
    row.windows.push_back({r.start, windows[k].end});
  }
  std::vector<NameRow> sorted;
  for (auto& [glob, row] : rows) {
    row.name = row.names.size() > 1 ? glob : std::string(trace.str(row.names.front()));
    row.gpu_busy_ns = busyInside(busy, std::move(row.windows));
    sorted.push_back(std::move(row));
  }
  const auto total = [](const NameRow& r) {
    Ns t = 0;
    for (Ns d : r.durations) t += d;
    return t;
  };
  std::stable_sort(sorted.begin(), sorted.end(), [&](const NameRow& a, const NameRow& b) {
    return a.gpu_busy_ns != b.gpu_busy_ns ? a.gpu_busy_ns > b.gpu_busy_ns : total(a) > total(b);
  });
  fmt::print("== {}: {} NVTX range names or name patterns, {} instances; GPU busy {}\n",
             inertLine(trace.path, kMaxNameBytes), sorted.size(),
             ranges.size(), units::formatDuration(busy_total));
  if (sorted.empty()) return;
  fmt::print("{:>8} {:>12} {:>12} {:>9}  {}\n", "count", "total", "median", "GPU busy", "name");
  for (std::size_t i = 0; i < sorted.size() && i < limit; ++i) {
    NameRow& row = sorted[i];
    std::nth_element(row.durations.begin(), row.durations.begin() + static_cast<std::ptrdiff_t>(row.durations.size() / 2),
                     row.durations.end());
    const double share = busy_total > 0 ? static_cast<double>(row.gpu_busy_ns) / busy_total : 0.0;
    fmt::print("{:>8} {:>12} {:>12} {:>9}  {}\n", row.durations.size(), units::formatDuration(total(row)),
               units::formatDuration(row.durations[row.durations.size() / 2]),
               units::formatPercent(share), inertLine(row.name, kMaxNameBytes));
  }
  if (sorted.size() > limit) fmt::print("({} more names; --limit N shows more)\n", sorted.size() - limit);
}

}  // namespace

void registerRangesCommand(CLI::App& app, CommandResult& result) {
  auto* cmd = app.add_subcommand("ranges", "List the NVTX ranges of traces (names for analyze --range)");
  auto args = std::make_shared<RangesArgs>();
  cmd->add_option("files", args->files, "Traces: cuoverlap traces, Nsight Systems SQLite exports (either also gzip-compressed, .sqlite.gz) or PyTorch profiler (Kineto) JSON (.json, .json.gz)")
      ->required();
  cmd->add_option("--limit", args->limit, "Show at most N names")->capture_default_str();
  setHelpSections(*cmd, {
      kTracesNote,
      {{"cuoverlap ranges run.sqlite", "each range name (numbers folded: step 7 -> step *) with its count and times"},
       {"cuoverlap analyze run.sqlite --range 'step *'", "then: summarize the instances of one of them"}},
      reportExitStatus("the ranges were listed"),
      traceEnvironment(TerminalUse::kNone)});
  cmd->callback([args, &result] {
    for (const std::string& file : args->files) listRanges(readTrace(file), args->limit);
    result.exit_code = 0;
  });
}

}  // namespace cuoverlap::cli
