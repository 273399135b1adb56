#include "perfetto_diagnosis.h"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <tuple>

#include "cuoverlap/diagnosis.h"
#include "cuoverlap/names.h"
#include "render_common.h"
#include "trace_event_common.h"

namespace cuoverlap::perfetto {
namespace {

using trace_event::jsonString;

// Prose from the analysis can quote trace names of any length; events carry at most this much.
constexpr std::size_t kProseBytes = 1024;

std::vector<Interval> mergedWindows(std::vector<Interval> windows) {
  std::sort(windows.begin(), windows.end(), [](const Interval& a, const Interval& b) {
    return a.start < b.start;
  });
  std::vector<Interval> merged;
  for (const Interval& w : windows) {
    if (w.end <= w.start) continue;
    if (!merged.empty() && w.start <= merged.back().end) {
      merged.back().end = std::max(merged.back().end, w.end);
    } else {
      merged.push_back(w);
    }
  }
  return merged;
}

// Adds `"key":"text"` (shortened for display) when `text` is not empty.
void addText(std::string& args, std::string_view key, const std::string& text) {
  if (text.empty()) return;
  fmt::format_to(std::back_inserter(args), ",\"{}\":{}", key,
                 jsonString(trace_event::displayName(text)));
}

std::string gapEvent(const Trace& trace, const IdleGap& gap, std::uint16_t device,
                     const std::function<std::string(Ns)>& micros) {
  std::string args = fmt::format("\"cause\":\"{}\",\"duration_ns\":{}", gapCauseName(gap.cause),
                                 gap.duration());
  addText(args, "op_before", render::describeOp(&trace, gap.prev_op));
  addText(args, "op_after", render::describeOp(&trace, gap.next_op));
  addText(args, "call", render::describeCall(&trace, gap.call));
  return fmt::format("{{\"ph\":\"X\",\"cat\":\"idle_gap\",\"name\":\"{}\",\"pid\":{},\"tid\":{},"
                     "\"ts\":{},\"dur\":{},\"args\":{{{}}}}}",
                     gapCauseName(gap.cause), kDevicePidBase + device, gapsTid(device), micros(gap.start),
                     trace_event::fixedMicros(gap.duration()), args);
}

std::string findingEvent(const Finding& finding, const Evidence* evidence, Ns time,
                         const std::function<std::string(Ns)>& micros) {
  std::string args = fmt::format(
      "\"severity\":\"{}\",\"count\":{},\"time_lost_ns\":{},\"summary\":{}",
      severityName(finding.severity), finding.count, finding.time_ns,
      jsonString(trace_event::capText(finding.summary, kProseBytes)));
  if (evidence != nullptr) {
    addText(args, "api", evidence->api);
    if (evidence->correlation_id != 0) {
      fmt::format_to(std::back_inserter(args), ",\"correlation_id\":{}", evidence->correlation_id);
    }
    fmt::format_to(std::back_inserter(args), ",\"stream\":{}", evidence->stream_id);
    if (!evidence->detail.empty()) {
      fmt::format_to(std::back_inserter(args), ",\"evidence\":{}",
                     jsonString(trace_event::capText(evidence->detail, kProseBytes)));
    }
  }
  return fmt::format("{{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"finding\",\"name\":{},\"pid\":{},\"tid\":{},"
                     "\"ts\":{},\"args\":{{{}}}}}",
                     jsonString(finding.id), kDevicePidBase + finding.device_id, findingsTid(finding.device_id),
                     micros(time), args);
}

}  // namespace

ExportSelection::ExportSelection(const Trace& trace, const Scope& scope, const TraceReport& report)
    : device_(scope.device), pid_(scope.pid) {
  if (scope.range) {
    std::vector<Interval> instances;
    for (const RangeInstance& instance : report.range_instances) {
      instances.push_back({std::max(instance.start, scope.window_start),
                           std::min(instance.end, scope.window_end)});
    }
    windows_ = mergedWindows(std::move(instances));
  } else {
    windows_ = {{scope.window_start, scope.window_end}};
  }
  if (device_) {
    for (const GpuOp& op : trace.ops) {
      if (op.device_id == *device_) host_pids_.insert(op.pid);
    }
  }
}

bool ExportSelection::inTime(Ns start, Ns end) const {
  // The first window that ends after `start`; an instant (start == end) must lie inside it.
  const auto it = std::upper_bound(windows_.begin(), windows_.end(), start,
                                   [](Ns t, const Interval& w) { return t < w.end; });
  if (it == windows_.end()) return false;
  return end > start ? it->start < end : it->start <= start;
}

bool ExportSelection::keepOp(const GpuOp& op) const {
  if (device_ && op.device_id != *device_) return false;
  if (pid_ && op.pid != *pid_) return false;
  return inTime(op.start, op.end);
}

bool ExportSelection::keepHost(std::uint32_t pid, Ns start, Ns end) const {
  if (pid_ && pid != *pid_) return false;
  if (device_ && host_pids_.count(pid) == 0) return false;
  return inTime(start, end);
}

DiagnosisCounts writeDiagnosisTracks(const Trace& trace, const TraceReport& report,
                                     const AnalysisOptions& options, const ExportSelection& selection,
                                     const std::function<std::string(Ns)>& micros,
                                     const std::function<void(const std::string&)>& emit) {
  DiagnosisCounts counts;
  std::set<std::tuple<std::uint16_t, Ns, Ns>> seen;  // overlapping range instances share gaps
  for (const DeviceReport& device : report.devices) {
    const std::uint16_t id = device.metrics.device_id;
    for (const Interval& window : selection.windows()) {
      Scope scope = options.scope;
      scope.range.reset();
      scope.window_start = window.start;
      scope.window_end = window.end;
      for (const IdleGap& gap : listGaps(trace, scope, id, options.gap_threshold_ns)) {
        if (!seen.insert({id, gap.start, gap.end}).second) continue;
        emit(gapEvent(trace, gap, id, micros));
        ++counts.gaps;
      }
    }
  }
  for (const Finding& finding : report.findings) {
    if (finding.evidence.empty()) {
      emit(findingEvent(finding, nullptr, render::deviceWindow(report, finding.device_id).start, micros));
      ++counts.findings;
    }
    for (const Evidence& evidence : finding.evidence) {
      emit(findingEvent(finding, &evidence, evidence.time, micros));
      ++counts.findings;
    }
  }
  return counts;
}

}  // namespace cuoverlap::perfetto
