// The analysis pipeline: per device in scope, the overlap metrics (metrics.cpp) and the idle gaps
// (diagnosis/); then the findings over all devices (diagnosis/).
#include "cuoverlap/analysis.h"

#include <fmt/format.h>

#include <atomic>
#include <cstdlib>
#include <future>
#include <system_error>
#include <tuple>

#include "cuoverlap/diagnosis.h"
#include "cuoverlap/kernel_summary.h"
#include "cuoverlap/metrics.h"
#include "cuoverlap/progress.h"
#include "cuoverlap/trace_index.h"
#include "cuoverlap/gpu_metrics.h"
#include "cuoverlap/unified_memory.h"
#include "diagnosis/call_index.h"
#include "phases/steady_state.h"
#include "trace_schema.h"

namespace cuoverlap {

namespace {

// Gaps and findings of a device share one view of its ops (diagnoseDevice), built one device at a
// time so that at most one view is alive.
// Progress (cuoverlap/progress.h): two units per device (metrics; gaps and findings), and
// `later_units` that the caller reports after (the steady state).
std::vector<DeviceReport> analyzeDevices(const Trace& trace, const AnalysisOptions& options,
                                         std::vector<Finding>& findings, std::uint64_t later_units = 0) {
  std::vector<DeviceReport> devices;
  const std::vector<std::uint16_t> in_scope = devicesInScope(trace, options.scope);
  progress::phase(fmt::format("analyzing {}", trace.path), 2 * in_scope.size() + later_units);
  auto kernels = summarizeKernels(trace, options.scope);
  for (std::uint16_t device_id : in_scope) {
    DeviceReport device;
    device.kernels = std::move(kernels[device_id]);
    device.metrics = computeDeviceMetrics(trace, options.scope, device_id);
    progress::done(2 * devices.size() + 1);
    device.gaps = diagnoseDevice(trace, options.scope, device_id, options.gap_threshold_ns, findings,
                                 &device.explained);
    devices.push_back(std::move(device));
    progress::done(2 * devices.size());
  }
  sortFindingsByCost(findings);
  return devices;
}

// From the session table (the job's, in a merged file); nothing when the trace has no capture key.
std::optional<CaptureWindowInfo> captureWindowOf(const Trace& trace) {
  namespace key = schema::session_key;
  std::optional<CaptureWindowInfo> info;
  for (const auto& entry : trace.session) {
    if (entry.first == key::kCapture) info.emplace().spec = entry.second;
  }
  if (!info) return info;
  auto number = [](const std::string& text) {
    return static_cast<Ns>(std::strtoll(text.c_str(), nullptr, 10));
  };
  for (const auto& entry : trace.session) {
    if (entry.first == key::kCaptureOpened) info->opened = entry.second == "1";
    if (entry.first == key::kCaptureOpenNs) info->open_ns = number(entry.second);
    if (entry.first == key::kCaptureCloseNs) info->close_ns = number(entry.second);
    if (entry.first == key::kCaptureInstances) info->instances = static_cast<std::uint64_t>(number(entry.second));
  }
  return info;
}

}  // namespace

void buildTraceIndices(const Trace& trace) {
  if (!trace.ops.empty()) opsOnDevice(trace, trace.ops.front().device_id);
  isContextNullStream(trace, 0, 0, 0);
  legacyDefaultStreams(trace);
  communicationKernelNames(trace);
  diagnosis::callIndex(trace);
}

Ns firstOpStart(const Trace& trace) { return earliestOpStart(trace); }

TraceReport analyzeTrace(const Trace& trace, const AnalysisOptions& options) {
  return analyzeTrace(trace, options, {});
}

TraceReport analyzeTrace(const Trace& trace, const AnalysisOptions& given,
                         const std::function<void(const TraceReport&)>& beside) {
  progress::phase(fmt::format("analyzing {}: indices", trace.path));
  AnalysisOptions options = given;
  const Ns first_op_start = firstOpStart(trace);
  if (!options.window.empty()) {
    std::tie(options.scope.window_start, options.scope.window_end) =
        parseWindow(options.window, first_op_start);
  }
  TraceReport report;
  report.path = trace.path;
  report.source = trace.source;
  report.trace = &trace;
  report.warnings = trace.warnings;
  report.capture = captureWindowOf(trace);
  report.first_op_start = first_op_start;
  report.scope = options.scope;
  report.unified_memory = summarizeUnifiedMemory(trace, options.scope);
  report.gpu_metrics = summarizeGpuMetrics(trace, options.scope);
  // Scope::range (NVTX --range): one summary over every instance, each analyzed in its own window
  // (diagnosis/range_scope.cpp).
  if (options.scope.range) {
    progress::phase(fmt::format("analyzing {}: NVTX range instances", trace.path));
    analyzeRanges(trace, options, report);
    if (beside) beside(report);
    return report;
  }
  // Phases need the whole run: not computed when --window cuts it.
  const Scope whole;
  const bool windowed = options.scope.window_start != whole.window_start ||
                        options.scope.window_end != whole.window_end;
  if (!options.steady_state || windowed) {
    report.devices = analyzeDevices(trace, options, report.findings);
    if (beside) beside(report);
    return report;
  }
  // The steady state is a second analysis of most of the run, independent of the first: on a
  // thread of its own, once the trace's lazily built indices exist (they are then only read). Its
  // search for iterations would make it the longer of the two: `beside` and the steady window's
  // metrics are this thread's, made once the other has chosen the window. The phases (a pass over
  // the ops) go to whichever thread is free first: which one is depends on the trace and the
  // machine.
  buildTraceIndices(trace);
  SteadyState steady_state;
  std::promise<void> window_chosen;
  std::future<void> window_known = window_chosen.get_future();
  std::atomic<bool> phases_taken{false};
  const auto findPhasesOnce = [&] {
    if (!phases_taken.exchange(true)) report.phases = phases::findPhases(trace, options.scope);
  };
  const auto steady = [&] {
    try {
      steady_state = phases::chooseSteadyState(trace, options);
    } catch (...) {
      window_chosen.set_exception(std::current_exception());
      throw;
    }
    window_chosen.set_value();  // steady_state's window is not written again
    phases::analyzeSteadyWindow(trace, options, steady_state);
    findPhasesOnce();
  };
  std::future<void> steady_done;
  try {
    steady_done = std::async(std::launch::async, steady);
  } catch (const std::system_error&) {
    steady();  // no thread to be had
  }
  report.devices = analyzeDevices(trace, options, report.findings, 1);
  if (beside) beside(report);
  std::vector<DeviceMetrics> steady_metrics;
  try {
    window_known.get();  // rethrows the choice's error
    steady_metrics = phases::steadyWindowMetrics(trace, options, steady_state);
    findPhasesOnce();
  } catch (...) {
    if (steady_done.valid()) steady_done.wait();  // the steady state's thread ends first
    throw;
  }
  if (steady_done.valid()) steady_done.get();  // rethrows the steady state's error
  phases::addSteadyWindowMetrics(steady_state, std::move(steady_metrics));
  report.steady_state = std::move(steady_state);
  progress::done(2 * report.devices.size() + 1);
  if (report.steady_state && report.steady_state->found) {
    Ns run_busy = 0, window_busy = 0;
    for (const DeviceReport& d : report.devices) run_busy += d.metrics.busy_ns;
    for (const DeviceReport& d : report.steady_state->devices) window_busy += d.metrics.busy_ns;
    report.steady_state->busy_share = run_busy > 0 ? static_cast<double>(window_busy) / run_busy : 0.0;
  }
  return report;
}

}  // namespace cuoverlap
