// analyzeWindows: one analysis (metrics, gaps, findings per device) per time window, the way
// analyzeTrace would give it for that window, from one device index built once.
//
// Cost: per device in scope, one whole-scope DeviceView and its WindowIndex (O(n)); then per
// window O(log n + k) to cut the sub-view plus the rules' cost over its k ops and calls. Views are
// built one device at a time, so at most one whole view and one sub-view are alive. A single
// window (the steady state) is one view of that window instead.
#include <algorithm>

#include "cuoverlap/diagnosis.h"
#include "cuoverlap/metrics.h"
#include "diagnosis/device_view.h"
#include "diagnosis/device_window.h"
#include "diagnosis/idle_gaps.h"
#include "diagnosis/rules/rules.h"
#include "diagnosis/window_analysis.h"

namespace cuoverlap {

namespace {

// analyzeWindows, and without `metrics` each device's metrics left to the caller (but its id).
void analyzeWindowsOf(const Trace& trace, const AnalysisOptions& options,
                      const std::vector<Interval>& windows, const WindowVisitor& visit, bool metrics) {
  std::vector<Finding> findings;
  const auto analyze = [&](std::size_t w, std::uint16_t device_id, const diagnosis::DeviceView& view) {
    // Without --device, a window lists the devices with work in it (devicesInScope's rule).
    if (view.empty() && !options.scope.device) return;
    Scope scope = options.scope;
    scope.window_start = view.windowStart();
    scope.window_end = view.windowEnd();
    DeviceReport device;
    if (metrics) device.metrics = computeDeviceMetrics(trace, scope, device_id, view.opIndices());
    else device.metrics.device_id = device_id;
    findings.clear();
    if (!view.empty()) device.explained = diagnosis::runRules(view, findings);
    device.gaps = diagnosis::analyzeGapsOfView(view, options.gap_threshold_ns);
    visit(w, std::move(device), std::move(findings));
  };
  for (std::uint16_t device_id : devicesInScope(trace, options.scope)) {
    if (windows.size() == 1) {
      // One window (the steady state): its view directly, equal to the one cut from an index
      // (device_window.h) without building the whole scope's view and index first.
      Scope scope = options.scope;
      scope.window_start = std::max(windows[0].start, scope.window_start);
      scope.window_end = std::min(windows[0].end, scope.window_end);
      analyze(0, device_id, diagnosis::DeviceView(trace, scope, device_id));
      continue;
    }
    const diagnosis::DeviceView whole(trace, options.scope, device_id);
    const diagnosis::WindowIndex index(whole);
    for (std::size_t w = 0; w < windows.size(); ++w) {
      analyze(w, device_id, index.window(windows[w].start, windows[w].end));
    }
  }
}

std::vector<WindowReport> collectWindows(const Trace& trace, const AnalysisOptions& options,
                                         const std::vector<Interval>& windows, bool metrics) {
  std::vector<WindowReport> reports(windows.size());
  analyzeWindowsOf(trace, options, windows,
                   [&](std::size_t w, DeviceReport&& device, std::vector<Finding>&& findings) {
                     reports[w].devices.push_back(std::move(device));
                     for (Finding& f : findings) reports[w].findings.push_back(std::move(f));
                   },
                   metrics);
  for (WindowReport& report : reports) sortFindingsByCost(report.findings);
  return reports;
}

}  // namespace

void analyzeWindows(const Trace& trace, const AnalysisOptions& options,
                    const std::vector<Interval>& windows, const WindowVisitor& visit) {
  analyzeWindowsOf(trace, options, windows, visit, true);
}

std::vector<WindowReport> analyzeWindows(const Trace& trace, const AnalysisOptions& options,
                                         const std::vector<Interval>& windows) {
  return collectWindows(trace, options, windows, true);
}

WindowReport analyzeWindowWithoutMetrics(const Trace& trace, const AnalysisOptions& options,
                                         Interval window) {
  return std::move(collectWindows(trace, options, {window}, false)[0]);
}

std::vector<DeviceMetrics> windowMetrics(const Trace& trace, const Scope& given, Interval window) {
  // analyzeWindows' single window: its scope, and the devices with an op in it (a view with no
  // op is left out unless Scope::device names it: devicesInScope's rule, the same).
  Scope scope = given;
  scope.window_start = std::max(window.start, scope.window_start);
  scope.window_end = std::min(window.end, scope.window_end);
  std::vector<DeviceMetrics> metrics;
  for (std::uint16_t device_id : devicesInScope(trace, scope)) {
    metrics.push_back(computeDeviceMetrics(trace, scope, device_id));
  }
  return metrics;
}

}  // namespace cuoverlap
