// The HTML page: header, then per trace its devices (metric cards, engine use, timeline, largest
// gaps), its NVTX range instances and its findings. The timeline lives in html_timeline.cpp and
// the style sheet and script in html_assets.cpp.
#include "cuoverlap/html_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <sstream>
#include <vector>

#include "cuoverlap/names.h"
#include "cuoverlap/units.h"
#include "html_assets.h"
#include "html_device.h"
#include "html_job.h"
#include "html_timeline.h"
#include "render_common.h"
#include "scope_summary.h"

namespace cuoverlap {
namespace {

using units::formatDuration;
using units::formatPercent;

constexpr std::size_t kKernelRowsShown = 10;  // top-kernels rows unless Report::kernel_rows says

// Where the rows of a trace's tables jump to on its timeline: the timeline's id and axis start.
// Links are written only when the timeline is (a trace read back, with GPU work).
struct Jumps {
  std::string timeline_id;
  Ns origin = 0;
  Ns end = 0;
  bool enabled = false;

  // A link to [from, to] on the timeline (from == to: a moment), relative to the axis start; the
  // page's script moves the view there. `text` is escaped HTML already.
  std::string link(Ns from, Ns to, const std::string& text) const {  // clipped to the axis
    if (!enabled || to < origin || from > end) return text;
    from = std::max(from, origin);  // the steady state may end past the last op the axis holds
    to = std::min(to, end);
    return fmt::format("<a class=\"jump\" href=\"#{}\" data-tl=\"{}\" data-t0=\"{}\" data-t1=\"{}\" "
                       "title=\"show on the timeline\">{}</a>",
                       timeline_id, timeline_id, from - origin, to - origin, text);
  }
};

void appendGapTables(std::string& out, const TraceReport& trace, const DeviceReport& device,
                     const Jumps& jumps) {
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
                   "<tr><td>{}</td><td>{}</td><td><i class=\"sw gap {}\"></i> {}</td><td>{}</td>"
                   "<td>{}</td><td>{}</td></tr>",
                   jumps.link(gap.start, gap.end, escapeHtml(render::relativeTime(trace, gap.start))),
                   formatDuration(gap.duration()), html::gapClass(gap.cause),
                   gapCauseName(gap.cause), escapeHtml(render::describeOp(trace.trace, gap.prev_op)),
                   escapeHtml(render::describeOp(trace.trace, gap.next_op)),
                   escapeHtml(render::describeCall(trace.trace, gap.call)));
  }
  out += "</table>";
}

// The heading links to the first evidence's place on the timeline, each evidence time to its own.
void appendFinding(std::string& out, const TraceReport& trace, const Finding& f, const Jumps& jumps) {
  std::string place;
  if (!f.evidence.empty()) place = " · " + jumps.link(f.evidence.front().time, f.evidence.front().time, "show on the timeline");
  if (place.find("<a ") == std::string::npos) place.clear();
  fmt::format_to(std::back_inserter(out),
                 "<article class=\"finding sev-{0}\"><h4><span class=\"badge\">{0}</span>"
                 "<code>{1}</code></h4><div class=\"meta\">device {2} · {3} occurrence(s) · "
                 "{4}{6}</div><p>{5}</p>",
                 severityName(f.severity), escapeHtml(f.id), f.device_id, f.count,
                 escapeHtml(render::lostTime(f)), escapeHtml(f.summary), place);
  if (f.instance_saving) {
    fmt::format_to(std::back_inserter(out), "<p class=\"spread\">{}</p>", escapeHtml(render::instanceSavingNote(f)));
  }
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
                     escapeHtml(render::apiName(e.api)), render::correlationCell(e),
                     e.has_stream ? std::to_string(e.stream_id) : "",
                     jumps.link(e.time, e.time, escapeHtml(render::relativeTime(trace, e.time))),
                     escapeHtml(e.detail));
    }
    out += "</table>";
  }
  out += "</article>";
}

void appendRangeInstances(std::string& out, const TraceReport& trace) {
  if (trace.range_instances.empty()) return;
  out += "<h3>NVTX range instances</h3><table><tr><th>range</th><th>start</th><th>length</th>"
         "<th>device</th><th>overlap ratio</th><th>copy hidden</th><th>findings</th></tr>";
  for (const RangeInstance& instance : trace.range_instances) {
    for (const DeviceReport& device : instance.devices) {
      fmt::format_to(std::back_inserter(out),
                     "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.3f}</td><td>{}</td>"
                     "<td>{}</td></tr>",
                     escapeHtml(instance.name), escapeHtml(render::relativeTime(trace, instance.start)),
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

// What the text and Markdown reports say first: a trace read up to its last commit, a capture window.
void appendWarnings(std::string& out, const TraceReport& trace) {
  for (const std::string& warning : trace.warnings) {
    fmt::format_to(std::back_inserter(out), "<p class=\"warn\"><b>Warning:</b> {}</p>", escapeHtml(warning));
  }
  if (const std::string capture = render::captureWindowLine(trace); !capture.empty()) {
    fmt::format_to(std::back_inserter(out), "<p class=\"warn\">{}</p>", escapeHtml(capture));
  }
}

// The time base, the GPU metrics and, with --range, the range summary (scope_summary.h).
void appendScopeSummary(std::string& out, const TraceReport& trace, const html::DeviceRanks& ranks,
                        const Jumps& jumps) {
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
    const SteadyState& steady = *trace.steady_state;
    fmt::format_to(std::back_inserter(out), "<h3>Steady state</h3><p class=\"sub\">{} (the timeline opens on it)</p>",
                   jumps.link(steady.start, steady.end, "show on the timeline"));
    for (const DeviceReport& device : steady.devices) {
      html::appendCards(out, device.metrics, "steady state · " + html::deviceLabel(device.metrics, ranks));
    }
    out += "<h4>Steady-state findings</h4>";
    if (steady.findings.empty()) out += "<p>No findings.</p>";
    for (const Finding* finding : render::findingsWorstFirst(steady.findings)) {
      appendFinding(out, trace, *finding, jumps);
    }
    out += "<h3>Whole run</h3>";
  }
  // GPU metrics (docs/metrics.md): the text report's lines; the timeline draws the samples.
  const std::vector<std::string> metrics = render::gpuMetricsLines(trace);
  if (!metrics.empty()) {
    out += "<h3>GPU metrics</h3><ul>";
    for (const std::string& line : metrics) {
      fmt::format_to(std::back_inserter(out), "<li>{}</li>", escapeHtml(line.substr(line.find_first_not_of(' '))));
    }
    out += "</ul>";
  }
  const std::vector<std::string> lines = render::rangeSummaryLines(trace);
  if (lines.empty()) return;
  fmt::format_to(std::back_inserter(out), "<h3>{}</h3><ul>", escapeHtml(lines.front()));
  for (std::size_t i = 1; i < lines.size(); ++i) {
    fmt::format_to(std::back_inserter(out), "<li>{}</li>", escapeHtml(lines[i]));
  }
  out += "</ul>";
}

// The timeline comes first, on the axis it shares with the traces recorded on the same clock; its
// labels, like every time in the tables, count from the trace's stated origin (its first GPU op).
void appendTrace(std::string& out, const TraceReport& trace, const html::TimelineAxis& axis,
                 const HtmlOptions& options, std::size_t index, std::size_t kernel_rows) {
  fmt::format_to(std::back_inserter(out), "<section><h2>{}</h2><p class=\"sub\">{} trace</p>",
                 escapeHtml(trace.path), sourceName(trace.source));
  const Jumps jumps{fmt::format("timeline-{}", index), axis.start, axis.end,
                    trace.trace != nullptr && axis.end > axis.start};
  const html::DeviceRanks ranks = html::deviceRanks(trace.trace);
  appendWarnings(out, trace);
  appendSession(out, trace.trace);
  appendScopeSummary(out, trace, ranks, jumps);
  if (trace.devices.empty()) out += "<p>No GPU activity in this trace (within the chosen scope).</p>";
  html::appendTimeline(out, trace, axis, options, jumps.timeline_id);
  for (const DeviceReport& device : trace.devices) {
    const std::string label = html::deviceLabel(device.metrics, ranks);
    fmt::format_to(std::back_inserter(out), "<h3>{}</h3>", escapeHtml(label));
    html::appendCards(out, device.metrics, label);
    html::appendEngines(out, device.metrics);
    html::appendKernelTable(out, device.kernels, kernel_rows);
    if (const std::string note = render::waitingThreadsNote(device.explained); !note.empty()) {
      fmt::format_to(std::back_inserter(out), "<p class=\"note\">{}.</p>", escapeHtml(note));
    }
    appendGapTables(out, trace, device, jumps);
  }
  appendRangeInstances(out, trace);
  out += "<h3>Findings</h3>";
  if (trace.findings.empty()) out += "<p>No findings.</p>";
  for (const Finding* finding : render::findingsWorstFirst(trace.findings)) {
    appendFinding(out, trace, *finding, jumps);
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
    appendTrace(section, report.traces[i], axes[i], options, i, report.kernel_rows.value_or(kKernelRowsShown));
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
