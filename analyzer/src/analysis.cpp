// The analysis pipeline: per device in scope, the overlap metrics (metrics.cpp) and the idle gaps
// (diagnosis/); then the findings over all devices (diagnosis/).
#include "cuoverlap/analysis.h"

#include "cuoverlap/diagnosis.h"
#include "cuoverlap/metrics.h"

namespace cuoverlap {

namespace {

// Gaps and findings of a device share one view of its ops (diagnoseDevice), built one device at a
// time so that at most one view is alive.
std::vector<DeviceReport> analyzeDevices(const Trace& trace, const AnalysisOptions& options,
                                         std::vector<Finding>& findings) {
  std::vector<DeviceReport> devices;
  for (std::uint16_t device_id : devicesInScope(trace, options.scope)) {
    DeviceReport device;
    device.metrics = computeDeviceMetrics(trace, options.scope, device_id);
    device.gaps = diagnoseDevice(trace, options.scope, device_id, options.gap_threshold_ns, findings);
    devices.push_back(std::move(device));
  }
  sortFindingsByCost(findings);
  return devices;
}

}  // namespace

TraceReport analyzeTrace(const Trace& trace, const AnalysisOptions& options) {
  TraceReport report;
  report.path = trace.path;
  report.source = trace.source;
  report.trace = &trace;
  report.scope = options.scope;
  // Scope::range (NVTX --range) is handled by the diagnosis module: when set, it fills
  // report.range_instances with one analysis per range instance and sums them into
  // report.devices. Until then the whole scope is analyzed as one.
  if (options.scope.range) {
    report.range_instances = analyzeRangeInstances(trace, options);
    report.devices = sumRangeInstances(report.range_instances);
    report.findings = mergeRangeFindings(report.range_instances);
    return report;
  }
  report.devices = analyzeDevices(trace, options, report.findings);
  return report;
}

}  // namespace cuoverlap
