#include "cuoverlap/text_report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "cuoverlap/names.h"

namespace cuoverlap {

namespace {

// Durations in the largest unit that keeps at least one integer digit.
std::string duration(Ns ns) {
  double v = static_cast<double>(ns);
  double a = v < 0 ? -v : v;
  if (a < 1e3) return fmt::format("{} ns", ns);
  if (a < 1e6) return fmt::format("{:.1f} us", v / 1e3);
  if (a < 1e9) return fmt::format("{:.3f} ms", v / 1e6);
  return fmt::format("{:.3f} s", v / 1e9);
}

std::string percent(double fraction) { return fmt::format("{:.1f}%", fraction * 100.0); }

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
    items.push_back(fmt::format("{} {} ({})", engineName(e.engine), duration(e.busy_ns), percent(e.share)));
  }
  renderList("  engines     ", items, out);
}

void renderConcurrency(const DeviceMetrics& m, std::ostream& out) {
  std::vector<std::string> items;
  for (std::size_t k = 0; k < m.concurrency_ns.size(); ++k) {
    items.push_back(fmt::format("{}: {} ({})", k, duration(m.concurrency_ns[k]),
                                percent(share(m.concurrency_ns[k], m.span_ns))));
  }
  renderList("  concurrency ", items, out);
}

void renderGaps(const GapAnalysis& gaps, Ns origin, std::ostream& out) {
  out << fmt::format("  idle gaps   {} of at least {}, {} in total\n", gaps.count,
                     duration(gaps.threshold_ns), duration(gaps.time_ns));
  for (const GapCauseTotal& t : gaps.totals) {
    out << fmt::format("    {:<18} {:>6} gaps {:>12}  {} of idle\n", gapCauseName(t.cause), t.count,
                       duration(t.time_ns), percent(t.share_of_idle));
  }
  if (!gaps.largest.empty()) out << "    largest:\n";
  for (const IdleGap& g : gaps.largest) {
    out << fmt::format("      at +{:<12} {:>12}  {}\n", duration(g.start - origin),
                       duration(g.duration()), gapCauseName(g.cause));
  }
}

void renderDevice(const DeviceReport& device, std::ostream& out) {
  const DeviceMetrics& m = device.metrics;
  out << fmt::format("device {}{}{}\n", m.device_id, m.name.empty() ? "" : ": ", m.name);
  out << fmt::format("  ops         {} kernels, {} memcpys, {} memsets\n", m.kernels, m.memcpys,
                     m.memsets);
  out << fmt::format("  span        {}   busy {} ({})   idle {} ({})   sum of ops {}\n",
                     duration(m.span_ns), duration(m.busy_ns), percent(share(m.busy_ns, m.span_ns)),
                     duration(m.idle_ns), percent(share(m.idle_ns, m.span_ns)), duration(m.sum_ns));
  out << fmt::format("  overlap     ratio {:.3f}   copy time hidden under kernels {}\n",
                     m.overlap_ratio, percent(m.copy_hidden_fraction));
  renderEngines(m, out);
  renderConcurrency(m, out);
  out << fmt::format("  ideal       {} with perfect overlap   pipeline efficiency {}\n",
                     duration(m.ideal_ns), percent(m.pipeline_efficiency));
  renderGaps(device.gaps, m.first_start, out);
}

void renderFinding(const Finding& f, std::ostream& out) {
  out << fmt::format("  [{}] {} (device {}): {}\n", severityName(f.severity), f.id, f.device_id,
                     f.summary);
  out << fmt::format("      {} occurrence(s), about {} lost\n", f.count, duration(f.time_ns));
  for (const Evidence& e : f.evidence) {
    out << fmt::format("      - {} (correlation {}, stream {}, t={} ns){}{}\n", e.api,
                       e.correlation_id, e.stream_id, e.time, e.detail.empty() ? "" : ": ",
                       e.detail);
  }
  if (!f.advice.empty()) out << "      fix: " << f.advice << '\n';
}

void renderFindings(std::vector<Finding> findings, std::ostream& out) {
  out << (findings.empty() ? "findings: none\n" : "findings (worst first):\n");
  std::stable_sort(findings.begin(), findings.end(), [](const Finding& a, const Finding& b) {
    if (a.severity != b.severity) return a.severity > b.severity;
    return a.time_ns > b.time_ns;
  });
  for (const Finding& f : findings) renderFinding(f, out);
}

void renderTrace(const TraceReport& trace, std::ostream& out) {
  out << fmt::format("== {} ({})\n", trace.path, sourceName(trace.source));
  if (trace.devices.empty()) out << "no GPU activity in scope\n";
  for (const DeviceReport& device : trace.devices) renderDevice(device, out);
  renderFindings(trace.findings, out);
  for (const RangeInstance& range : trace.range_instances) {
    out << fmt::format("range \"{}\" [{} .. {}] ({})\n", range.name, range.start, range.end,
                       duration(range.end - range.start));
    for (const DeviceReport& device : range.devices) renderDevice(device, out);
    renderFindings(range.findings, out);
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
