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

void renderGaps(const GapAnalysis& gaps, Ns origin, std::ostream& out) {
  out << fmt::format("  idle gaps   {} of at least {}, {} in total\n", gaps.count,
                     formatDuration(gaps.threshold_ns), formatDuration(gaps.time_ns));
  for (const GapCauseTotal& t : gaps.totals) {
    out << fmt::format("    {:<18} {:>6} gaps {:>12}  {} of idle\n", gapCauseName(t.cause), t.count,
                       formatDuration(t.time_ns), formatPercent(t.share_of_idle));
  }
  if (!gaps.largest.empty()) out << "    largest:\n";
  for (const IdleGap& g : gaps.largest) {
    out << fmt::format("      at +{:<12} {:>12}  {}\n", formatDuration(g.start - origin),
                       formatDuration(g.duration()), gapCauseName(g.cause));
  }
}

void renderDevice(const DeviceReport& device, std::ostream& out) {
  const DeviceMetrics& m = device.metrics;
  out << fmt::format("device {}{}{}\n", m.device_id, m.name.empty() ? "" : ": ", m.name);
  out << fmt::format("  ops         {} kernels, {} memcpys, {} memsets\n", m.kernels, m.memcpys,
                     m.memsets);
  out << fmt::format("  span        {}   busy {} ({})   idle {} ({})   sum of ops {}\n",
                     formatDuration(m.span_ns), formatDuration(m.busy_ns),
                     formatPercent(share(m.busy_ns, m.span_ns)), formatDuration(m.idle_ns),
                     formatPercent(share(m.idle_ns, m.span_ns)), formatDuration(m.sum_ns));
  out << fmt::format("  overlap     ratio {:.3f}   copy time hidden under kernels {}\n",
                     m.overlap_ratio, formatPercent(m.copy_hidden_fraction));
  renderEngines(m, out);
  renderConcurrency(m, out);
  out << fmt::format("  ideal       {} with perfect overlap   pipeline efficiency {}\n",
                     formatDuration(m.ideal_ns), formatPercent(m.pipeline_efficiency));
  renderGaps(device.gaps, m.first_start, out);
}

void renderFinding(const TraceReport& trace, const Finding& f, std::ostream& out) {
  out << fmt::format("  [{}] {} (device {}): {}\n", severityName(f.severity), f.id, f.device_id,
                     f.summary);
  out << fmt::format("      {} occurrence(s), about {} lost\n", f.count,
                     formatDuration(f.time_ns));
  for (const Evidence& e : f.evidence) {
    out << fmt::format("      - at {}: {} (correlation {}, stream {}){}{}\n",
                       render::evidenceTime(trace, f, e.time), e.api, e.correlation_id,
                       e.stream_id, e.detail.empty() ? "" : ": ", e.detail);
  }
  if (!f.advice.empty()) out << "      fix: " << f.advice << '\n';
}

void renderFindings(const TraceReport& trace, const std::vector<Finding>& findings,
                    std::ostream& out) {
  out << (findings.empty() ? "findings: none\n" : "findings (worst first):\n");
  for (const Finding* f : render::findingsWorstFirst(findings)) renderFinding(trace, *f, out);
}

void renderTrace(const TraceReport& trace, std::ostream& out) {
  out << fmt::format("== {} ({})\n", trace.path, sourceName(trace.source));
  if (trace.first_op_start > 0) out << render::timeBaseLine(trace) << '\n';
  const std::vector<std::string> range_lines = render::rangeSummaryLines(trace);
  for (std::size_t i = 0; i < range_lines.size(); ++i) out << (i ? "  " : "") << range_lines[i] << '\n';
  for (const std::string& line : render::steadyStateLines(trace)) out << line << '\n';
  if (trace.steady_state && trace.steady_state->found) {
    out << "-- steady state\n";
    for (const DeviceReport& device : trace.steady_state->devices) renderDevice(device, out);
    renderFindings(trace, trace.steady_state->findings, out);
    out << "-- whole run\n";
  }
  if (trace.devices.empty()) out << "no GPU activity in scope\n";
  for (const DeviceReport& device : trace.devices) renderDevice(device, out);
  renderFindings(trace, trace.findings, out);
  for (const RangeInstance& range : trace.range_instances) {
    out << fmt::format("range \"{}\" [{} .. {}] ({})\n", range.name, range.start, range.end,
                       formatDuration(range.end - range.start));
    for (const DeviceReport& device : range.devices) renderDevice(device, out);
    renderFindings(trace, range.findings, out);
  }
}

}  // namespace

void renderText(const Report& report, std::ostream& out) {
  for (std::size_t i = 0; i < report.traces.size(); ++i) {
    if (i > 0) out << '\n';
    renderTrace(report.traces[i], out);
  }
}

std::string renderTextString(const Report& report) {
  std::ostringstream out;
  renderText(report, out);
  return out.str();
}

}  // namespace cuoverlap
