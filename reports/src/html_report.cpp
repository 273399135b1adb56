// The HTML page: header, then per trace its devices (metric cards, engine use, timeline, largest
// gaps), its NVTX range instances and its findings. The timeline lives in html_timeline.cpp and
// the style sheet and script in html_assets.cpp.
#include "cuoverlap/html_report.h"

#include <fmt/format.h>

#include <iterator>
#include <sstream>
#include <vector>

#include "cuoverlap/names.h"
#include "cuoverlap/units.h"
#include "html_assets.h"
#include "html_job.h"
#include "html_timeline.h"
#include "render_common.h"
#include "scope_summary.h"

namespace cuoverlap {
namespace {

using units::formatDuration;
using units::formatPercent;

// A metric card; `quality` is "ok", "bad" or "" (no colour).
void appendCard(std::string& out, std::string_view key, const std::string& value,
                const std::string& detail, std::string_view quality) {
  fmt::format_to(std::back_inserter(out),
                 "<div class=\"card {}\"><div class=\"k\">{}</div><div class=\"v\">{}</div>"
                 "<div class=\"d\">{}</div></div>",
                 quality, key, escapeHtml(value), escapeHtml(detail));
}

std::string_view qualityOf(double value, double good, double bad, bool higher_is_better) {
  if (!higher_is_better) {
    value = -value;
    good = -good;
    bad = -bad;
  }
  if (value >= good) return "ok";
  if (value <= bad) return "bad";
  return "";
}

void appendCards(std::string& out, const DeviceMetrics& m) {
  out += "<div class=\"cards\">";
  appendCard(out, "overlap ratio", fmt::format("{:.3f}", m.overlap_ratio),
             "1 − busy / sum of op time", qualityOf(m.overlap_ratio, 0.3, 0.05, true));
  appendCard(out, "copy hidden", formatPercent(m.copy_hidden_fraction),
             m.memcpys == 0 ? "no copies" : "copy time under compute",
             m.memcpys == 0 ? "" : qualityOf(m.copy_hidden_fraction, 0.7, 0.3, true));
  const double idle = units::idleShare(m);
  appendCard(out, "idle share", formatPercent(idle), formatDuration(m.idle_ns) + " idle",
             qualityOf(idle, 0.1, 0.3, false));
  appendCard(out, "pipeline efficiency", formatPercent(m.pipeline_efficiency),
             "busiest engine / span", qualityOf(m.pipeline_efficiency, 0.8, 0.5, true));
  const auto speedup = units::potentialSpeedup(m);
  appendCard(out, "potential speedup", units::formatSpeedup(speedup),
             "span / engine bound " + formatDuration(m.ideal_ns),
             speedup ? qualityOf(*speedup, 1.1, 1.5, false) : "");
  out += "</div>";
  fmt::format_to(std::back_inserter(out),
                 "<p class=\"facts\">span {} · busy {} · sum of op time {} · {} kernels, {} "
                 "memcpys, {} memsets</p>",
                 formatDuration(m.span_ns), formatDuration(m.busy_ns), formatDuration(m.sum_ns),
                 m.kernels, m.memcpys, m.memsets);
}

void appendEngines(std::string& out, const DeviceMetrics& m) {
  out += "<div class=\"engines\">";
  for (const EngineUsage& usage : m.engines) {
    if (usage.busy_ns == 0) continue;
    fmt::format_to(std::back_inserter(out),
                   "<span>{}</span><div class=\"bar\"><i class=\"{}\" style=\"width:{:.1f}%\"></i>"
                   "</div><span>{} · {}</span>",
                   engineName(usage.engine), html::engineClass(usage.engine),
                   std::min(100.0, usage.share * 100.0), formatPercent(usage.share),
                   formatDuration(usage.busy_ns));
  }
  out += "</div>";
}

void appendGapTables(std::string& out, const DeviceReport& device, const Trace* trace, Ns origin) {
  const GapAnalysis& gaps = device.gaps;
  fmt::format_to(std::back_inserter(out), "<h4>Idle gaps ≥ {}: {} gaps, {}</h4>",
                 escapeHtml(formatDuration(gaps.threshold_ns)), gaps.count,
                 escapeHtml(formatDuration(gaps.time_ns)));
  if (!gaps.totals.empty()) {
    out += "<table><tr><th>cause</th><th>gaps</th><th>time</th><th>share of idle</th></tr>";
    for (const GapCauseTotal& total : gaps.totals) {
      if (total.count == 0) continue;
      fmt::format_to(std::back_inserter(out),
                     "<tr><td><i class=\"sw gap {}\"></i> {}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                     html::gapClass(total.cause), gapCauseName(total.cause), total.count,
                     formatDuration(total.time_ns), formatPercent(total.share_of_idle));
    }
    out += "</table>";
  }
  if (gaps.largest.empty()) return;
  out += "<table><colgroup><col style=\"width:9%\"><col style=\"width:9%\"><col style=\"width:16%\">"
         "<col><col><col style=\"width:20%\"></colgroup><tr><th>at</th><th>length</th><th>cause</th>"
         "<th>before</th><th>after</th><th>call</th></tr>";
  for (const IdleGap& gap : gaps.largest) {
    fmt::format_to(std::back_inserter(out),
                   "<tr><td>+{}</td><td>{}</td><td><i class=\"sw gap {}\"></i> {}</td><td>{}</td>"
                   "<td>{}</td><td>{}</td></tr>",
                   formatDuration(gap.start - origin),
                   formatDuration(gap.duration()), html::gapClass(gap.cause),
                   gapCauseName(gap.cause), escapeHtml(render::describeOp(trace, gap.prev_op)),
                   escapeHtml(render::describeOp(trace, gap.next_op)),
                   escapeHtml(render::describeCall(trace, gap.call)));
  }
  out += "</table>";
}

void appendFinding(std::string& out, const TraceReport& trace, const Finding& f) {
  fmt::format_to(std::back_inserter(out),
                 "<article class=\"finding sev-{0}\"><h4><span class=\"badge\">{0}</span>"
                 "<code>{1}</code></h4><div class=\"meta\">device {2} · {3} occurrence(s) · "
                 "{4}</div><p>{5}</p>",
                 severityName(f.severity), escapeHtml(f.id), f.device_id, f.count,
                 escapeHtml(render::lostTime(f)), escapeHtml(f.summary));
  if (!f.advice.empty()) {
    fmt::format_to(std::back_inserter(out), "<p class=\"fix\"><b>Fix:</b> {}</p>", escapeHtml(f.advice));
  }
  if (!f.evidence.empty()) {
    out += "<table><colgroup><col style=\"width:28%\"><col style=\"width:11%\"><col style=\"width:8%\">"
           "<col style=\"width:16%\"><col></colgroup><tr><th>api / op</th><th>correlation</th>"
           "<th>stream</th><th>time</th><th>detail</th></tr>";
    for (const Evidence& e : f.evidence) {
      fmt::format_to(std::back_inserter(out),
                     "<tr><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                     escapeHtml(e.api), render::correlationCell(e),
                     e.has_stream ? std::to_string(e.stream_id) : "",
                     render::evidenceTime(trace, f, e.time), escapeHtml(e.detail));
    }
    out += "</table>";
  }
  out += "</article>";
}

void appendRangeInstances(std::string& out, const TraceReport& trace) {
  if (trace.range_instances.empty()) return;
  out += "<h3>NVTX range instances</h3><table><tr><th>range</th><th>start (ns)</th><th>length</th>"
         "<th>device</th><th>overlap ratio</th><th>copy hidden</th><th>findings</th></tr>";
  for (const RangeInstance& instance : trace.range_instances) {
    for (const DeviceReport& device : instance.devices) {
      fmt::format_to(std::back_inserter(out),
                     "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.3f}</td><td>{}</td>"
                     "<td>{}</td></tr>",
                     escapeHtml(instance.name), instance.start,
                     formatDuration(instance.end - instance.start), device.metrics.device_id,
                     device.metrics.overlap_ratio,
                     formatPercent(device.metrics.copy_hidden_fraction), instance.findings.size());
    }
  }
  out += "</table>";
}

void appendSession(std::string& out, const Trace* trace) {
  if (trace == nullptr) return;
  for (const auto& [key, value] : trace->session) {
    if (key != schema::session_key::kCommand && key != schema::session_key::kHost) continue;
    fmt::format_to(std::back_inserter(out), "<p class=\"sub\">{}: <code>{}</code></p>",
                   escapeHtml(key), escapeHtml(value));
  }
}

// The time base and, with --range, the range summary (scope_summary.h).
void appendScopeSummary(std::string& out, const TraceReport& trace) {
  if (trace.first_op_start > 0) {
    fmt::format_to(std::back_inserter(out), "<p class=\"sub\">{}</p>", escapeHtml(render::timeBaseLine(trace)));
  }
  const std::vector<std::string> steady = render::steadyStateLines(trace);
  if (!steady.empty()) {
    out += "<ul>";
    for (const std::string& line : steady) {
      fmt::format_to(std::back_inserter(out), "<li>{}</li>", escapeHtml(line.substr(line.find_first_not_of(' '))));
    }
    out += "</ul>";
  }
  if (render::hasSeparateSteadyState(trace)) {
    out += "<h3>Steady state</h3>";
    for (const DeviceReport& device : trace.steady_state->devices) appendCards(out, device.metrics);
    out += "<h4>Steady-state findings</h4>";
    if (trace.steady_state->findings.empty()) out += "<p>No findings.</p>";
    for (const Finding* finding : render::findingsWorstFirst(trace.steady_state->findings)) {
      appendFinding(out, trace, *finding);
    }
    out += "<h3>Whole run</h3>";
  }
  const std::vector<std::string> lines = render::rangeSummaryLines(trace);
  if (lines.empty()) return;
  fmt::format_to(std::back_inserter(out), "<h3>{}</h3><ul>", escapeHtml(lines.front()));
  for (std::size_t i = 1; i < lines.size(); ++i) {
    fmt::format_to(std::back_inserter(out), "<li>{}</li>", escapeHtml(lines[i]));
  }
  out += "</ul>";
}

// The timeline comes first, on the axis it shares with the traces recorded on the same clock; gap
// times in the tables are relative to that axis's start, like the timeline's.
void appendTrace(std::string& out, const TraceReport& trace, const html::TimelineAxis& axis,
                 const HtmlOptions& options) {
  fmt::format_to(std::back_inserter(out), "<section><h2>{}</h2><p class=\"sub\">{} trace</p>",
                 escapeHtml(trace.path), sourceName(trace.source));
  appendSession(out, trace.trace);
  appendScopeSummary(out, trace);
  if (trace.devices.empty()) out += "<p>No GPU activity in this trace (within the chosen scope).</p>";
  html::appendTimeline(out, trace, axis, options);
  for (const DeviceReport& device : trace.devices) {
    fmt::format_to(std::back_inserter(out), "<h3>Device {}{}{}</h3>", device.metrics.device_id,
                   device.metrics.name.empty() ? "" : ": ", escapeHtml(device.metrics.name));
    appendCards(out, device.metrics);
    appendEngines(out, device.metrics);
    appendGapTables(out, device, trace.trace, axis.start);
  }
  appendRangeInstances(out, trace);
  out += "<h3>Findings</h3>";
  if (trace.findings.empty()) out += "<p>No findings.</p>";
  for (const Finding* finding : render::findingsWorstFirst(trace.findings)) {
    appendFinding(out, trace, *finding);
  }
  out += "</section>";
}

}  // namespace

// Also made inert (render::inert): the page is UTF-8, so invalid bytes become U+FFFD and control
// characters visible escapes; newlines stay.
std::string escapeHtml(std::string_view raw) {
  const std::string text = render::inert(raw, render::Newlines::kKeep);
  std::string out;
  out.reserve(text.size() + 16);
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

// Written one trace section at a time, so that memory holds one section, not the whole page.
void renderHtml(const Report& report, const HtmlOptions& options, std::ostream& out) {
  out << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
         "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
         "<title>cuoverlap report</title><style>"
      << html::kStyleSheet
      << "</style></head><body><main><h1>cuoverlap report</h1>"
         "<p class=\"sub\">Do the copies and kernels overlap, and why not?</p>\n";
  const std::vector<html::TimelineAxis> axes = html::timelineAxes(report);
  for (std::size_t i = 0; i < report.traces.size(); ++i) {
    std::string section;
    appendTrace(section, report.traces[i], axes[i], options);
    out << section;
  }
  if (report.job) {
    std::string job;
    html::appendJob(job, *report.job);
    out << job;
  }
  out << "</main><script>" << html::kScript << "</script></body></html>\n";
}

std::string renderHtml(const Report& report, const HtmlOptions& options) {
  std::ostringstream out;
  renderHtml(report, options, out);
  return std::move(out).str();
}

void renderHtml(const Report& report, std::ostream& out) { renderHtml(report, HtmlOptions{}, out); }

}  // namespace cuoverlap
