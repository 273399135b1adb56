// The timeline's markup: a label column (one row per lane, escaped text) beside a canvas that the
// page's script fills, the lanes' packed items in data attributes, the names table as a hidden
// list (escaped text, read by the script with textContent), a legend and a note of what was drawn.
#include "html_timeline.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <iterator>
#include <numeric>
#include <optional>

#include "cuoverlap/names.h"
#include "html_timeline_data.h"
#include "render_common.h"

namespace cuoverlap::html {
namespace {

// The data-k attribute of a lane: the script's switch.
char laneCode(LaneKind kind) {
  switch (kind) {
    case LaneKind::kHeader: return 'h';
    case LaneKind::kNvtx: return 'n';
    case LaneKind::kApi: return 'a';
    case LaneKind::kEngine: return 'e';
    case LaneKind::kStream: return 's';
    case LaneKind::kCounter: return 'c';
  }
  return 'h';
}

void appendLane(std::string& out, const TimelineLane& lane) {
  const std::string label = escapeHtml(lane.label);
  const std::string title = lane.title.empty() ? label : escapeHtml(lane.title);
  fmt::format_to(std::back_inserter(out), "<div class=\"k{}\" data-k=\"{}\" data-p=\"{}\"",
                 laneCode(lane.kind), laneCode(lane.kind), lane.pid);
  if (lane.engine >= 0) fmt::format_to(std::back_inserter(out), " data-e=\"{}\"", lane.engine);
  if (!lane.gaps.empty()) fmt::format_to(std::back_inserter(out), " data-g=\"{}\"", lane.gaps.text());
  if (!lane.data.empty()) fmt::format_to(std::back_inserter(out), " data-d=\"{}\"", lane.data.text());
  if (lane.kind == LaneKind::kCounter) {
    fmt::format_to(std::back_inserter(out), " data-m=\"{:.6g}\" data-u=\"{}\"", lane.counter_max,
                   escapeHtml(lane.counter_unit));
  }
  fmt::format_to(std::back_inserter(out), " title=\"{}\">{}</div>", title, label);
}

// Engines, then the gap causes that this trace's devices have (any cause the analysis knows,
// with a fallback colour for one the style sheet does not name).
void appendLegend(std::string& out, const TraceReport& trace) {
  out += "<div class=\"legend\">";
  for (std::string_view engine : engineNames()) {
    fmt::format_to(std::back_inserter(out), "<span><i class=\"sw e-{0}\"></i>{0}</span>", engine);
  }
  out += "<span><i class=\"sw nvtx\"></i>NVTX</span><span><i class=\"sw api\"></i>CUDA API</span>";
  std::vector<std::string_view> causes;
  for (const DeviceReport& device : trace.devices) {
    for (const IdleGap& gap : device.gaps.largest) {
      const std::string_view cause = gapCauseName(gap.cause);
      if (std::find(causes.begin(), causes.end(), cause) != causes.end()) continue;
      causes.push_back(cause);
      fmt::format_to(std::back_inserter(out), "<span><i class=\"sw gap {}\"></i>gap: {}</span>",
                     gapClass(gap.cause), escapeHtml(cause));
    }
  }
  out += "</div>";
}

void appendNote(std::string& out, const TimelineData& data) {
  fmt::format_to(
      std::back_inserter(out),
      "<p class=\"note\">{} ops, {} CUDA API calls and {} NVTX ranges, every one drawn when "
      "zoomed in far enough. Ops narrower than a pixel add up into columns whose height shows how "
      "busy that pixel was; names show inside bars wide enough. The largest idle gaps are shaded "
      "by cause over their device's lanes. Hover an op or a call for its details and the "
      "launch&#8594;op link (correlation id). Click the timeline (or Tab to it), then scroll to "
      "zoom at the pointer (elsewhere the wheel scrolls the page); drag or &#8592;/&#8594; (A/D) "
      "to pan, +/&#8722; (W/S) to zoom, 0 for the whole run, Esc to leave; double-click for the "
      "whole run. A gap's or a finding's time in the tables below shows it here.</p>",
      data.ops, data.calls, data.ranges);
}

struct TraceWindow {
  Ns start = 0;
  Ns end = 0;
};

TraceWindow windowOf(const TraceReport& trace) {
  std::optional<TraceWindow> window;
  for (const DeviceReport& device : trace.devices) {
    const render::TimeWindow w = render::deviceWindow(trace, device.metrics.device_id);
    if (w.end <= w.start) continue;
    if (!window) window = TraceWindow{w.start, w.end};
    window->start = std::min(window->start, w.start);
    window->end = std::max(window->end, w.end);
  }
  return window.value_or(TraceWindow{});
}

std::string hostOf(const TraceReport& trace) {
  if (trace.trace == nullptr) return "";
  for (const auto& [key, value] : trace.trace->session) {
    if (key == schema::session_key::kHost) return value;
  }
  for (const ProcessInfo& process : trace.trace->processes) {
    if (!process.host.empty()) return process.host;
  }
  return "";
}

// Whether two traces' timestamps come from one clock: see TimelineAxis.
bool shareClock(const TraceReport& a, const TraceReport& b) {
  if (a.source == TraceSource::kNsys || b.source == TraceSource::kNsys) return false;
  const std::string host_a = hostOf(a), host_b = hostOf(b);
  return host_a.empty() || host_b.empty() || host_a == host_b;
}

}  // namespace

std::string engineClass(Engine engine) { return "e-" + std::string(engineName(engine)); }
std::string gapClass(GapCause cause) { return "g-" + std::string(gapCauseName(cause)); }

std::vector<TimelineAxis> timelineAxes(const Report& report) {
  const std::size_t n = report.traces.size();
  std::vector<TimelineAxis> axes(n);
  for (std::size_t i = 0; i < n; ++i) {
    const TraceWindow window = windowOf(report.traces[i]);
    axes[i] = {window.start, window.end, static_cast<int>(i)};
  }
  // Union-find by repeated merging: n is the number of files on the command line.
  for (bool merged = true; merged;) {
    merged = false;
    for (std::size_t i = 0; i < n; ++i) {
      for (std::size_t j = 0; j < n; ++j) {
        TimelineAxis& a = axes[i];
        TimelineAxis& b = axes[j];
        if (a.group == b.group || a.end <= a.start || b.end <= b.start) continue;
        if (a.start > b.end || b.start > a.end) continue;
        if (!shareClock(report.traces[i], report.traces[j])) continue;
        const int from = b.group, to = a.group;
        const Ns start = std::min(a.start, b.start), end = std::max(a.end, b.end);
        for (TimelineAxis& axis : axes) {
          if (axis.group == from || axis.group == to) axis = {start, end, to};
        }
        merged = true;
      }
    }
  }
  return axes;
}

void appendTimeline(std::string& out, const TraceReport& trace, const TimelineAxis& axis,
                    const HtmlOptions& options, const std::string& id) {
  if (trace.trace == nullptr || axis.end <= axis.start) return;
  const TimelineData data = collectTimeline(trace, axis.start, axis.end, options);
  // The steady state, where the timeline opens (relative to the axis start, like the lanes).
  std::string steady;
  if (trace.steady_state && trace.steady_state->found && trace.steady_state->end > trace.steady_state->start) {
    steady = fmt::format(" data-steady=\"{}:{}\"", std::max<Ns>(0, trace.steady_state->start - axis.start),
                         std::min(axis.end, trace.steady_state->end) - axis.start);
  }
  // The axis labels count from the trace's stated origin, as the tables' times do (a trace that
  // shares its axis with others recorded on the same clock keeps its own origin).
  const Ns origin = trace.first_op_start > 0 ? trace.first_op_start - axis.start : 0;
  fmt::format_to(std::back_inserter(out),
                 "<div class=\"tl\" id=\"{}\" tabindex=\"0\" aria-label=\"timeline: click or tab to it, then scroll "
                 "or use the keys to zoom and pan\" data-axis=\"{}\" data-span=\"{}\" data-origin=\"{}\"{} "
                 "data-engines=\"{}\" data-labels=\"{}\">\n",
                 id, axis.group, axis.end - axis.start, origin, steady, fmt::join(engineNames(), " "),
                 data.labels.text());
  out += "<div class=\"tl-controls\"><button type=\"button\" data-zoom=\"in\">zoom in</button>"
         "<button type=\"button\" data-zoom=\"out\">zoom out</button>";
  if (!steady.empty()) out += "<button type=\"button\" data-zoom=\"steady\">steady state</button>";
  out += "<button type=\"button\" data-zoom=\"reset\">whole run</button><span class=\"tl-view\"></span></div>\n"
         "<div class=\"tl-body\"><div class=\"tl-labels\"><div class=\"tl-corner\"></div>\n";
  for (const TimelineLane& lane : data.lanes) {
    appendLane(out, lane);
    out += '\n';
  }
  out += "</div><div class=\"tl-main\"><canvas class=\"tl-plot\" role=\"img\" aria-label=\"timeline\">"
         "</canvas><div class=\"tl-tip\" hidden></div></div></div>\n<ol class=\"tl-names\" hidden>";
  for (std::string_view name : data.names.names()) {
    out += "<li>";
    out += escapeHtml(name);
    out += "</li>";
  }
  out += "</ol>\n";
  appendLegend(out, trace);
  appendNote(out, data);
  out += "</div>\n";
}

}  // namespace cuoverlap::html
