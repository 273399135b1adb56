#include "cuoverlap/markdown_report.h"

#include <fmt/format.h>

#include <iterator>

#include "cuoverlap/names.h"
#include "cuoverlap/units.h"
#include "render_common.h"
#include "scope_summary.h"

namespace cuoverlap {
namespace {

using units::formatDuration;
using units::formatPercent;

constexpr std::size_t kKernelRowsShown = 10;  // unless Report::kernel_rows says; JSON keeps all

void appendMetrics(std::string& out, const DeviceMetrics& m) {
  auto row = [&out](std::string_view name, const std::string& value) {
    fmt::format_to(std::back_inserter(out), "| {} | {} |\n", name, value);
  };
  out += "| metric | value |\n| --- | --- |\n";
  row("overlap ratio", fmt::format("{:.3f}", m.overlap_ratio));
  row("copy hidden", formatPercent(m.copy_hidden_fraction));
  row("idle share", fmt::format("{} ({})", formatPercent(units::idleShare(m)),
                                formatDuration(m.idle_ns)));
  row("pipeline efficiency", formatPercent(m.pipeline_efficiency));
  row("potential speedup", units::formatSpeedup(units::potentialSpeedup(m)));
  row("span", formatDuration(m.span_ns));
  row("busy", formatDuration(m.busy_ns));
  row("sum of op durations", formatDuration(m.sum_ns));
  row("engine bound (busiest engine, back to back)", formatDuration(m.ideal_ns));
  row("ops", fmt::format("{} kernels, {} memcpys, {} memsets", m.kernels, m.memcpys, m.memsets));
  if (m.communication.kernels > 0) {
    row("communication", fmt::format("{} kernels, busy {}, hidden under compute {} ({}), exposed {}",
                                     m.communication.kernels, formatDuration(m.communication.busy_ns),
                                     formatDuration(m.communication.hidden_ns),
                                     formatPercent(m.communication.hidden_fraction),
                                     formatDuration(m.communication.exposed_ns)));
  }
  out += "\n";
}

void appendEngines(std::string& out, const DeviceMetrics& m) {
  if (m.engines.empty()) return;
  out += "| engine | busy | share of span |\n| --- | --- | --- |\n";
  for (const EngineUsage& usage : m.engines) {
    if (usage.busy_ns == 0) continue;
    fmt::format_to(std::back_inserter(out), "| {} | {} | {} |\n", engineName(usage.engine),
                   formatDuration(usage.busy_ns), formatPercent(usage.share));
  }
  out += "\n";
}

void appendKernelSummary(std::string& out, const std::vector<KernelSummary>& kernels, std::size_t rows) {
  if (kernels.empty() || rows == 0) return;
  out += "**Top kernels by GPU time**\n\n| kernel | launches | total | mean | share of kernel time |\n"
         "| --- | --- | --- | --- | --- |\n";
  for (const render::KernelRow& row : render::kernelTable(kernels, rows)) {
    const KernelSummary& k = *row.kernel;
    fmt::format_to(std::back_inserter(out), "| {} | {} | {} | {} | {} |\n", escapeMarkdown(row.name),
                   k.count, formatDuration(k.total_ns), formatDuration(k.mean_ns), formatPercent(k.share));
  }
  if (kernels.size() > rows) {
    fmt::format_to(std::back_inserter(out), "\n{} more kernel names (`--kernels N` shows more; JSON has all).\n",
                   kernels.size() - rows);
  }
  out += "\n";
}

void appendGaps(std::string& out, const DeviceReport& device, const TraceReport& trace) {
  const GapAnalysis& gaps = device.gaps;
  fmt::format_to(std::back_inserter(out), "**Idle gaps ≥ {}:** {} gaps, {} in total.\n\n",
                 formatDuration(gaps.threshold_ns), gaps.count, formatDuration(gaps.time_ns));
  if (!gaps.totals.empty()) {
    out += "| cause | gaps | time | share of idle |\n| --- | --- | --- | --- |\n";
    for (const GapCauseTotal& total : gaps.totals) {
      if (total.count == 0) continue;
      fmt::format_to(std::back_inserter(out), "| {} | {} | {} | {} |\n", gapCauseName(total.cause),
                     total.count, formatDuration(total.time_ns), formatPercent(total.share_of_idle));
    }
    out += "\n";
  }
  if (gaps.largest.empty()) return;
  out += "Largest gaps:\n\n| at | length | cause | before | after | call |\n"
         "| --- | --- | --- | --- | --- | --- |\n";
  for (const IdleGap& gap : gaps.largest) {
    fmt::format_to(std::back_inserter(out), "| {} | {} | {} | {} | {} | {} |\n",
                   render::relativeTime(trace, gap.start),
                   formatDuration(gap.duration()), render::describeGapCauses(gap),
                   escapeMarkdown(render::describeOp(trace.trace, gap.prev_op)),
                   escapeMarkdown(render::describeOp(trace.trace, gap.next_op)),
                   escapeMarkdown(render::describeCall(trace.trace, gap.call)));
  }
  out += "\n";
}

void appendFinding(std::string& out, const TraceReport& trace, const Finding& finding) {
  fmt::format_to(std::back_inserter(out), "#### {} `{}` (device {})\n\n",
                 severityName(finding.severity), finding.id, finding.device_id);  // ids are ours: [a-z-]
  fmt::format_to(std::back_inserter(out), "{}  \n{} occurrence(s), {}.\n\n",
                 escapeMarkdown(finding.summary), finding.count, render::lostTime(finding));
  if (finding.instance_saving) {
    fmt::format_to(std::back_inserter(out), "{}.\n\n", escapeMarkdown(render::instanceSavingNote(finding)));
  }
  if (!finding.advice.empty()) {
    fmt::format_to(std::back_inserter(out), "**Fix:** {}\n\n", escapeMarkdown(finding.advice));
  }
  if (finding.evidence.empty()) return;
  out += "| api / op | correlation | stream | time | detail |\n| --- | --- | --- | --- | --- |\n";
  for (const Evidence& e : finding.evidence) {
    fmt::format_to(std::back_inserter(out), "| {} | {} | {} | {} | {} |\n", escapeMarkdown(e.api),
                   render::correlationCell(e), e.has_stream ? std::to_string(e.stream_id) : "",
                   render::relativeTime(trace, e.time),
                   escapeMarkdown(e.detail));
  }
  out += "\n";
}

void appendRangeInstances(std::string& out, const TraceReport& trace) {
  if (trace.range_instances.empty()) return;
  out += "### NVTX range instances\n\n| range | start | length | device | overlap ratio | "
         "copy hidden | findings |\n| --- | --- | --- | --- | --- | --- | --- |\n";
  for (const RangeInstance& instance : trace.range_instances) {
    for (const DeviceReport& device : instance.devices) {
      fmt::format_to(std::back_inserter(out), "| {} | {} | {} | {} | {:.3f} | {} | {} |\n",
                     escapeMarkdown(instance.name), render::relativeTime(trace, instance.start),
                     formatDuration(instance.end - instance.start), device.metrics.device_id,
                     device.metrics.overlap_ratio,
                     formatPercent(device.metrics.copy_hidden_fraction), instance.findings.size());
    }
  }
  out += "\n";
}

void appendTrace(std::string& out, const TraceReport& trace, std::size_t kernel_rows) {
  fmt::format_to(std::back_inserter(out), "## {} ({})\n\n", escapeMarkdown(trace.path),
                 sourceName(trace.source));
  for (const std::string& warning : trace.warnings) {
    fmt::format_to(std::back_inserter(out), "> **Warning:** {}\n\n", escapeMarkdown(warning));
  }
  if (const std::string capture = render::captureWindowLine(trace); !capture.empty()) {
    out += escapeMarkdown(capture) + ".\n\n";
  }
  if (trace.first_op_start > 0) out += escapeMarkdown(render::timeBaseLine(trace)) + ".\n\n";
  const std::vector<std::string> range_lines = render::rangeSummaryLines(trace);
  if (!range_lines.empty()) {
    out += "### " + escapeMarkdown(range_lines.front()) + "\n\n";
    for (std::size_t i = 1; i < range_lines.size(); ++i) out += "- " + escapeMarkdown(range_lines[i]) + "\n";
    out += "\n";
  }
  const std::vector<std::string> steady_lines = render::steadyStateLines(trace);
  for (const std::string& line : steady_lines) {
    out += "- " + escapeMarkdown(line.substr(line.find_first_not_of(' '))) + "\n";
  }
  if (!steady_lines.empty()) out += "\n";
  if (render::hasSeparateSteadyState(trace)) {
    out += "### Steady state\n\n";
    for (const DeviceReport& device : trace.steady_state->devices) {
      fmt::format_to(std::back_inserter(out), "#### Device {}: {}\n\n", device.metrics.device_id,
                     escapeMarkdown(device.metrics.name));
      appendMetrics(out, device.metrics);
    }
    out += "#### Steady-state findings\n\n";
    if (trace.steady_state->findings.empty()) out += "No findings.\n\n";
    for (const Finding* finding : render::findingsWorstFirst(trace.steady_state->findings)) {
      appendFinding(out, trace, *finding);
    }
    out += "### Whole run\n\n";
  }
  if (trace.devices.empty()) out += "No GPU activity in this trace (within the chosen scope).\n\n";
  for (const DeviceReport& device : trace.devices) {
    fmt::format_to(std::back_inserter(out), "### Device {}: {}\n\n", device.metrics.device_id,
                   escapeMarkdown(device.metrics.name));
    appendMetrics(out, device.metrics);
    appendEngines(out, device.metrics);
    appendKernelSummary(out, device.kernels, kernel_rows);
    fmt::format_to(std::back_inserter(out),
                   "Findings explain {} of the {} by which the span exceeds its packed bound {} "
                   "(kernels packed onto the SMs they used) ({}){}.\n\n",
                   formatDuration(device.explained.explained_ns),
                   formatDuration(device.explained.explainable_ns),
                   formatDuration(render::packedBound(device)),
                   formatPercent(device.explained.fraction),
                   render::idealReductionNote(device.explained));
    if (const std::string note = render::waitingThreadsNote(device.explained); !note.empty()) {
      out += escapeMarkdown(note) + ".\n\n";
    }
    appendGaps(out, device, trace);
  }
  appendRangeInstances(out, trace);
  std::vector<std::string> um_lines = render::unifiedMemoryLines(trace);
  for (const std::string& line : render::gpuMetricsLines(trace)) um_lines.push_back(line);
  for (const std::string& line : um_lines) out += "- " + escapeMarkdown(line) + "\n";
  if (!um_lines.empty()) out += "\n";
  out += "### Findings\n\n";
  if (trace.findings.empty()) out += "No findings.\n\n";
  for (const Finding* finding : render::findingsWorstFirst(trace.findings)) {
    appendFinding(out, trace, *finding);
  }
}

void appendJob(std::string& out, const JobAnalysis& job) {
  fmt::format_to(std::back_inserter(out), "## Job: {} ranks\n\n{}.\n\n", job.ranks.size(),
                 escapeMarkdown(job.clock));
  out += "| rank | file | pid | device | span | compute | communication | exposed communication | "
         "idle | collectives | arrived last |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- | "
         "--- | --- |\n";
  for (const RankRow& r : job.ranks) {
    fmt::format_to(std::back_inserter(out), "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
                   r.rank, escapeMarkdown(r.path), r.pid, r.device_id, formatDuration(r.span_ns),
                   formatDuration(r.compute_ns), formatDuration(r.comm_busy_ns),
                   formatDuration(r.comm_exposed_ns), formatDuration(r.idle_ns), r.collectives,
                   r.arrived_last);
  }
  fmt::format_to(std::back_inserter(out),
                 "\n**Collectives matched across ranks:** {}; skew max {}, mean {}; type mismatches {}.\n\n",
                 job.matched, formatDuration(job.max_skew_ns), formatDuration(job.mean_skew_ns),
                 job.type_mismatches);
  if (!job.largest_skews.empty()) {
    out += "| collective | stream | skew | first rank | last rank |\n| --- | --- | --- | --- | --- |\n";
    for (const MatchedCollective& m : job.largest_skews) {
      fmt::format_to(std::back_inserter(out), "| {} #{} | {} | {} | {} | {} |\n", escapeMarkdown(m.type),
                     m.sequence + 1, m.stream + 1, formatDuration(m.skew_ns), m.first_rank, m.last_rank);
    }
    out += "\n";
  }
  for (const Finding& f : job.findings) {
    fmt::format_to(std::back_inserter(out), "#### {} `{}` (device {})\n\n{}  \n{} occurrence(s), about {} lost.\n\n",
                   severityName(f.severity), f.id, f.device_id, escapeMarkdown(f.summary), f.count,
                   formatDuration(f.time_ns));
    if (!f.advice.empty()) fmt::format_to(std::back_inserter(out), "**Fix:** {}\n\n", escapeMarkdown(f.advice));
  }
}

}  // namespace

std::string escapeMarkdown(std::string_view text) {
  static constexpr std::string_view kSpecial = "\\`*_[]<>|&#~";
  std::string flat(text);
  for (char& c : flat) c = c == '\n' || c == '\r' ? ' ' : c;
  const std::string safe = render::inert(flat);
  std::string out;
  out.reserve(safe.size());
  for (std::size_t i = 0; i < safe.size(); ++i) {
    const char c = safe[i];
    // GitHub autolinks "scheme://", "www." and e-mail addresses in text; an escaped ':', '.'
    // or '@' is not matched, and renders the same.
    const bool link = (c == ':' && safe.compare(i + 1, 2, "//") == 0) || c == '@' ||
                      (c == '.' && i >= 3 && safe.compare(i - 3, 3, "www") == 0);
    if (link || kSpecial.find(c) != std::string_view::npos) out += '\\';
    out += c;
  }
  return out;
}

std::string renderMarkdown(const Report& report) {
  std::string out = "# cuoverlap report\n\n";
  for (const TraceReport& trace : report.traces) {
    appendTrace(out, trace, report.kernel_rows.value_or(kKernelRowsShown));
  }
  if (report.job) appendJob(out, *report.job);
  return out;
}

void renderMarkdown(const Report& report, std::ostream& out) { out << renderMarkdown(report); }

}  // namespace cuoverlap
