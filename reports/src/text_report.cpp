#include "cuoverlap/text_report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "cuoverlap/names.h"
#include "cuoverlap/units.h"
#include "render_common.h"
#include "scope_summary.h"

namespace cuoverlap {

namespace {

using units::formatDuration;
using units::formatPercent;

// The style of the report being rendered (one render at a time per thread).
thread_local TextStyle style;
// Rows of its top-kernels tables (Report::kernel_rows; 5 unless asked).
constexpr std::size_t kKernelRowsShown = 5;
thread_local std::size_t kernel_rows = kKernelRowsShown;

std::string paint(const char* code, std::string_view text) {
  return fmt::format("\x1b[{}m{}\x1b[0m", code, text);
}

const char* severityColor(Severity severity) {
  switch (severity) {
    case Severity::kError: return "1;31";
    case Severity::kWarning: return "33";
    case Severity::kInfo: return "36";
  }
  return "0";
}

// With style.color: headings ("== trace", "device N", "findings") in bold and the severity tag
// that starts a finding line in its colour. Runs on the finished, inert text, so trace text can
// never carry or fake a colour.
std::string colorize(const std::string& text) {
  if (!style.color) return text;
  std::string out;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    const std::string_view line(text.data() + pos, end - pos);
    const auto starts = [&](std::string_view prefix) { return line.substr(0, prefix.size()) == prefix; };
    if (starts("== ") || starts("device ") || starts("findings")) {
      out += paint("1", line);
    } else if (starts("  [error] ") || starts("  [warning] ") || starts("  [info] ")) {
      const std::size_t close = line.find(']');
      const std::string_view tag = line.substr(2, close - 1);
      const char* code = tag == "[error]" ? severityColor(Severity::kError)
                         : tag == "[warning]" ? severityColor(Severity::kWarning)
                                              : severityColor(Severity::kInfo);
      out += "  " + paint(code, tag) + std::string(line.substr(close + 1));
    } else {
      out += line;
    }
    if (end < text.size()) out += '\n';
    pos = end + 1;
  }
  return out;
}

// `text` as lines of at most style.width columns (counting UTF-8 code points), the first starting
// after `first` and the rest after `indent`; one line when there is no width.
std::string wrapped(std::string_view first, std::string_view text, std::string_view indent) {
  const auto columns = [](std::string_view s) {  // code points, colour sequences not counted
    std::size_t n = 0;
    for (std::size_t i = 0; i < s.size(); ++i) {
      if (s[i] == '\x1b') {
        while (i < s.size() && s[i] != 'm') ++i;
        continue;
      }
      n += (static_cast<unsigned char>(s[i]) & 0xC0) != 0x80 ? 1 : 0;
    }
    return n;
  };
  std::string out(first);
  if (style.width == 0) return out + std::string(text) + "\n";
  std::size_t used = columns(first);
  std::size_t pos = 0;
  bool line_has_word = false;
  while (pos < text.size()) {
    const std::size_t space = text.find(' ', pos);
    const std::string_view word =
        text.substr(pos, space == std::string_view::npos ? std::string_view::npos : space - pos);
    pos = space == std::string_view::npos ? text.size() : space + 1;
    if (word.empty()) continue;
    const std::size_t need = columns(word) + (line_has_word ? 1 : 0);
    if (line_has_word && used + need > style.width) {
      out += "\n";
      out += indent;
      used = columns(indent);
      line_has_word = false;
    }
    if (line_has_word) { out += ' '; ++used; }
    out += word;
    used += columns(word);
    line_has_word = true;
  }
  return out + "\n";
}

double share(Ns part, Ns whole) {
  return whole > 0 ? static_cast<double>(part) / static_cast<double>(whole) : 0.0;
}

// "label  item  item" or "label  none" when there are no items.
void renderList(const char* label, const std::vector<std::string>& items, std::ostream& out) {
  out << label << (items.empty() ? std::string("none") : fmt::format("{}", fmt::join(items, "  ")))
      << '\n';
}

void renderEngines(const DeviceMetrics& m, std::ostream& out) {
  std::vector<std::string> items;
  for (const EngineUsage& e : m.engines) {
    if (e.busy_ns == 0) continue;
    items.push_back(fmt::format("{} {} ({})", engineName(e.engine), formatDuration(e.busy_ns),
                                formatPercent(e.share)));
  }
  renderList("  engines     ", items, out);
}

void renderConcurrency(const DeviceMetrics& m, std::ostream& out) {
  std::vector<std::string> items;
  for (std::size_t k = 0; k < m.concurrency_ns.size(); ++k) {
    items.push_back(fmt::format("{}: {} ({})", k, formatDuration(m.concurrency_ns[k]),
                                formatPercent(share(m.concurrency_ns[k], m.span_ns))));
  }
  renderList("  concurrency ", items, out);
}

void renderGaps(const TraceReport& trace, const GapAnalysis& gaps, std::ostream& out) {
  out << fmt::format("  idle gaps   {} of at least {}, {} in total\n", gaps.count,
                     formatDuration(gaps.threshold_ns), formatDuration(gaps.time_ns));
  for (const GapCauseTotal& t : gaps.totals) {
    out << fmt::format("    {:<18} {:>6} gaps {:>12}  {} of idle\n", gapCauseName(t.cause), t.count,
                       formatDuration(t.time_ns), formatPercent(t.share_of_idle));
  }
  if (!gaps.largest.empty()) out << "    largest:\n";
  for (const IdleGap& g : gaps.largest) {
    out << fmt::format("      at {:<13} {:>12}  {}\n", render::relativeTime(trace, g.start),
                       formatDuration(g.duration()), render::describeGapCauses(g));
  }
}

// The kernels with the most GPU time (`kernel_rows` of them), names shortened but distinct (JSON
// keeps the full ones); the last line says how many more there are.
void renderKernelSummary(const std::vector<KernelSummary>& kernels, std::ostream& out) {
  if (kernels.empty() || kernel_rows == 0) return;
  out << "  top kernels  launches        total         mean  share  name\n";
  for (const render::KernelRow& row : render::kernelTable(kernels, kernel_rows)) {
    const KernelSummary& k = *row.kernel;
    out << fmt::format("    {:>17} {:>12} {:>12} {:>6}  {}\n", k.count, formatDuration(k.total_ns),
                       formatDuration(k.mean_ns), formatPercent(k.share), render::inert(row.name));
  }
  if (kernels.size() > kernel_rows) {
    out << fmt::format("    ... {} more kernel names (--kernels N shows more; JSON has all)\n",
                       kernels.size() - kernel_rows);
  }
}

void renderDevice(const TraceReport& trace, const DeviceReport& device, std::ostream& out) {
  const DeviceMetrics& m = device.metrics;
  out << fmt::format("device {}{}{}\n", m.device_id, m.name.empty() ? "" : ": ",
                     render::inert(m.name));
  out << fmt::format("  ops         {} kernels, {} memcpys, {} memsets\n", m.kernels, m.memcpys,
                     m.memsets);
  out << fmt::format("  span        {}   busy {} ({})   idle {} ({})   sum of ops {}\n",
                     formatDuration(m.span_ns), formatDuration(m.busy_ns),
                     formatPercent(share(m.busy_ns, m.span_ns)), formatDuration(m.idle_ns),
                     formatPercent(share(m.idle_ns, m.span_ns)), formatDuration(m.sum_ns));
  out << fmt::format("  overlap     ratio {:.3f}   copy time hidden under kernels {}\n",
                     m.overlap_ratio, formatPercent(m.copy_hidden_fraction));
  renderEngines(m, out);
  if (m.communication.kernels > 0) {
    out << fmt::format("  comm        {} kernels, busy {}: hidden under compute {} ({})   exposed {}\n",
                       m.communication.kernels, formatDuration(m.communication.busy_ns),
                       formatDuration(m.communication.hidden_ns),
                       formatPercent(m.communication.hidden_fraction),
                       formatDuration(m.communication.exposed_ns));
  }
  renderConcurrency(m, out);
  out << fmt::format("  bounds      engine bound {} (busiest engine, back to back)   pipeline efficiency {}\n",
                     formatDuration(m.ideal_ns), formatPercent(m.pipeline_efficiency));
  const Ns packed = render::packedBound(device);
  if (packed != m.ideal_ns) {
    out << fmt::format("              packed bound {} (kernels packed onto the SMs they used): what "
                       "findings are measured against\n", formatDuration(packed));
  }
  renderKernelSummary(device.kernels, out);
  out << fmt::format("  findings    explain {} of the {} the span exceeds its packed bound ({}){}\n",
                     formatDuration(device.explained.explained_ns),
                     formatDuration(device.explained.explainable_ns),
                     formatPercent(device.explained.fraction),
                     render::idealReductionNote(device.explained));
  if (const std::string note = render::waitingThreadsNote(device.explained); !note.empty()) {
    out << wrapped("  threads     ", note, "              ");
  }
  renderGaps(trace, device.gaps, out);
}

void renderFinding(const TraceReport& trace, const Finding& f, std::ostream& out) {
  out << wrapped(fmt::format("  [{}] {} (device {}): ", severityName(f.severity), f.id, f.device_id),
                 render::inert(f.summary), "      ");
  out << fmt::format("      {} occurrence(s), {}\n", f.count, render::lostTime(f));
  if (f.instance_saving) out << wrapped("      ", render::instanceSavingNote(f), "      ");
  for (const Evidence& e : f.evidence) {
    // Host code and other evidence without a call has no correlation id (CUPTI's start at 1).
    std::string ids = e.correlation_id != 0 ? fmt::format("correlation {}", e.correlation_id) : "";
    if (e.has_stream) ids += fmt::format("{}stream {}", ids.empty() ? "" : ", ", e.stream_id);
    out << fmt::format("      - at {}: {}{}{}{}\n", render::relativeTime(trace, e.time),
                       render::inert(e.api), ids.empty() ? "" : " (" + ids + ")",
                       e.detail.empty() ? "" : ": ", render::inert(e.detail));
  }
  if (!f.advice.empty()) out << wrapped("      fix: ", render::inert(f.advice), "           ");
}

void renderFindings(const TraceReport& trace, const std::vector<Finding>& findings,
                    std::ostream& out) {
  out << (findings.empty() ? "findings: none\n" : "findings (worst first):\n");
  for (const Finding* f : render::findingsWorstFirst(findings)) renderFinding(trace, *f, out);
}

void renderTrace(const TraceReport& trace, std::ostream& out) {
  out << fmt::format("== {} ({})\n", render::inert(trace.path), sourceName(trace.source));
  for (const std::string& warning : trace.warnings) {
    out << "warning: " << render::inert(warning) << '\n';
  }
  if (const std::string capture = render::captureWindowLine(trace); !capture.empty()) {
    out << render::inert(capture) << '\n';
  }
  if (trace.first_op_start > 0) out << render::timeBaseLine(trace) << '\n';
  const std::vector<std::string> range_lines = render::rangeSummaryLines(trace);
  for (std::size_t i = 0; i < range_lines.size(); ++i) out << (i ? "  " : "") << range_lines[i] << '\n';
  for (const std::string& line : render::steadyStateLines(trace)) out << line << '\n';
  if (render::hasSeparateSteadyState(trace)) {
    out << "-- steady state\n";
    for (const DeviceReport& device : trace.steady_state->devices) renderDevice(trace, device, out);
    renderFindings(trace, trace.steady_state->findings, out);
    out << "-- whole run\n";
  }
  if (trace.devices.empty()) out << "no GPU activity in scope\n";
  for (const DeviceReport& device : trace.devices) renderDevice(trace, device, out);
  for (const std::string& line : render::unifiedMemoryLines(trace)) out << line << '\n';
  for (const std::string& line : render::gpuMetricsLines(trace)) out << line << '\n';
  renderFindings(trace, trace.findings, out);
  for (const RangeInstance& range : trace.range_instances) {
    out << fmt::format("range \"{}\" {} to {} ({})\n", render::inert(range.name),
                       render::relativeTime(trace, range.start), render::relativeTime(trace, range.end),
                       formatDuration(range.end - range.start));
    for (const DeviceReport& device : range.devices) renderDevice(trace, device, out);
    renderFindings(trace, range.findings, out);
  }
}

void renderJob(const JobAnalysis& job, std::ostream& out) {
  out << fmt::format("== job: {} ranks ({})\n", job.ranks.size(), job.clock);
  out << fmt::format("  {:>4}  {:<28} {:>8} {:>3} {:>11} {:>11} {:>11} {:>11} {:>11} {:>6} {:>5}\n",
                     "rank", "file", "pid", "dev", "span", "compute", "comm", "exposed", "idle",
                     "colls", "last");
  for (const RankRow& r : job.ranks) {
    out << fmt::format("  {:>4}  {:<28} {:>8} {:>3} {:>11} {:>11} {:>11} {:>11} {:>11} {:>6} {:>5}\n",
                       r.rank, r.path.size() > 28 ? "…" + r.path.substr(r.path.size() - 27) : r.path,
                       r.pid, r.device_id, formatDuration(r.span_ns), formatDuration(r.compute_ns),
                       formatDuration(r.comm_busy_ns), formatDuration(r.comm_exposed_ns),
                       formatDuration(r.idle_ns), r.collectives, r.arrived_last);
  }
  out << fmt::format("  collectives matched across ranks: {}   skew max {}  mean {}{}\n", job.matched,
                     formatDuration(job.max_skew_ns), formatDuration(job.mean_skew_ns),
                     job.type_mismatches ? fmt::format("   type mismatches {}", job.type_mismatches) : "");
  if (!job.largest_skews.empty()) out << "  largest skews (largest first):\n";
  for (const MatchedCollective& m : job.largest_skews) {
    out << fmt::format("    {} #{} of communication stream {}: {} (rank {} first, rank {} last)\n",
                       m.type, m.sequence + 1, m.stream + 1, formatDuration(m.skew_ns), m.first_rank,
                       m.last_rank);
  }
  // Job times are on the job's axis (the first rank's clock, docs/metrics.md "Clocks"), counted
  // from the job's first GPU op, stated once.
  Ns origin = job.ranks.empty() ? 0 : job.ranks.front().first_start;
  for (const RankRow& r : job.ranks) origin = std::min(origin, r.first_start);
  if (!job.findings.empty()) {
    out << fmt::format("  job times are relative to the job's first GPU op, at {} ns on rank {}'s clock\n",
                       origin, job.ranks.front().rank);
  }
  out << (job.findings.empty() ? "job findings: none\n" : "job findings:\n");
  for (const Finding& f : job.findings) {
    out << fmt::format("  [{}] {} (device {}): {}\n", severityName(f.severity), f.id, f.device_id,
                       f.summary);
    out << fmt::format("      {} occurrence(s), about {} lost\n", f.count, formatDuration(f.time_ns));
    for (const Evidence& e : f.evidence) {
      const Ns at = e.time - origin;
      out << fmt::format("      - at {}{}: {} (stream {}): {}\n", at < 0 ? "-" : "+",
                         formatDuration(at < 0 ? -at : at), e.api, e.stream_id, e.detail);
    }
    if (!f.advice.empty()) out << "      fix: " << f.advice << '\n';
  }
}

}  // namespace

void renderText(const Report& report, std::ostream& out) { renderText(report, out, TextStyle{}); }

void renderText(const Report& report, std::ostream& out, const TextStyle& text_style) {
  style = text_style;
  kernel_rows = report.kernel_rows.value_or(kKernelRowsShown);
  // Fields are made inert one by one; the pass over the whole text catches any other. Colour is
  // added after that pass, to lines whose shape the renderer made (never to trace text).
  std::ostringstream text;
  for (std::size_t i = 0; i < report.traces.size(); ++i) {
    if (i > 0) text << '\n';
    renderTrace(report.traces[i], text);
  }
  if (report.job) {
    text << '\n';
    renderJob(*report.job, text);
  }
  out << colorize(render::inert(text.str(), render::Newlines::kKeep));
}

std::string renderTextString(const Report& report) {
  std::ostringstream out;
  renderText(report, out);
  return out.str();
}

}  // namespace cuoverlap
