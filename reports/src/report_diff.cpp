#include "cuoverlap/report_diff.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>
#include <tuple>

#include "cuoverlap/units.h"

namespace cuoverlap {
namespace {

const DeviceMetrics* findDevice(const TraceReport& trace, std::uint16_t device_id) {
  for (const DeviceReport& device : trace.devices) {
    if (device.metrics.device_id == device_id) return &device.metrics;
  }
  return nullptr;
}

// The compared metrics of one device, in display order.
std::vector<MetricDelta> metricRows(const DeviceMetrics& m) {
  auto ns = [](Ns value) { return static_cast<double>(value); };
  auto count = [](std::uint64_t value) { return static_cast<double>(value); };
  return {
      {"overlap_ratio", MetricUnit::kRatio, m.overlap_ratio, std::nullopt},
      {"copy_hidden_fraction", MetricUnit::kFraction, m.copy_hidden_fraction, std::nullopt},
      {"idle_fraction", MetricUnit::kFraction, units::idleShare(m), std::nullopt},
      {"pipeline_efficiency", MetricUnit::kFraction, m.pipeline_efficiency, std::nullopt},
      {"potential_speedup", MetricUnit::kSpeedup, units::potentialSpeedup(m), std::nullopt},
      {"span_ns", MetricUnit::kNanoseconds, ns(m.span_ns), std::nullopt},
      {"busy_ns", MetricUnit::kNanoseconds, ns(m.busy_ns), std::nullopt},
      {"idle_ns", MetricUnit::kNanoseconds, ns(m.idle_ns), std::nullopt},
      {"sum_ns", MetricUnit::kNanoseconds, ns(m.sum_ns), std::nullopt},
      {"ideal_ns", MetricUnit::kNanoseconds, ns(m.ideal_ns), std::nullopt},
      {"kernels", MetricUnit::kCount, count(m.kernels), std::nullopt},
      {"memcpys", MetricUnit::kCount, count(m.memcpys), std::nullopt},
      {"memsets", MetricUnit::kCount, count(m.memsets), std::nullopt},
  };
}

std::vector<MetricDelta> metricDeltas(const DeviceMetrics* before, const DeviceMetrics* after) {
  std::vector<MetricDelta> deltas = metricRows(before != nullptr ? *before : DeviceMetrics{});
  const std::vector<MetricDelta> after_rows = metricRows(after != nullptr ? *after : DeviceMetrics{});
  for (std::size_t i = 0; i < deltas.size(); ++i) {
    if (before == nullptr) deltas[i].before.reset();
    deltas[i].after = after != nullptr ? after_rows[i].before : std::nullopt;
  }
  return deltas;
}

using FindingKey = std::pair<std::string, std::uint16_t>;

std::map<FindingKey, const Finding*> indexFindings(const TraceReport& trace) {
  std::map<FindingKey, const Finding*> index;
  for (const Finding& finding : trace.findings) index[{finding.id, finding.device_id}] = &finding;
  return index;
}

std::vector<FindingDiff> diffFindings(const TraceReport& before, const TraceReport& after) {
  const auto old_findings = indexFindings(before);
  const auto new_findings = indexFindings(after);
  std::set<FindingKey> keys;
  for (const auto& entry : old_findings) keys.insert(entry.first);
  for (const auto& entry : new_findings) keys.insert(entry.first);
  std::vector<FindingDiff> diffs;
  for (const FindingKey& key : keys) {
    const auto old_it = old_findings.find(key);
    const auto new_it = new_findings.find(key);
    const Finding* old_finding = old_it == old_findings.end() ? nullptr : old_it->second;
    const Finding* new_finding = new_it == new_findings.end() ? nullptr : new_it->second;
    FindingDiff diff;
    diff.id = key.first;
    diff.device_id = key.second;
    diff.change = old_finding == nullptr ? FindingChange::kAdded
                  : new_finding == nullptr ? FindingChange::kRemoved
                                           : FindingChange::kChanged;
    diff.severity = (new_finding != nullptr ? new_finding : old_finding)->severity;
    if (old_finding != nullptr) {
      diff.count_before = old_finding->count;
      diff.time_before_ns = old_finding->time_ns;
    }
    if (new_finding != nullptr) {
      diff.count_after = new_finding->count;
      diff.time_after_ns = new_finding->time_ns;
    }
    const bool same = diff.change == FindingChange::kChanged && diff.count_before == diff.count_after &&
                      diff.time_before_ns == diff.time_after_ns && old_finding->severity == new_finding->severity;
    if (!same) diffs.push_back(std::move(diff));
  }
  return diffs;
}

// Kernel time by name over the devices the report covers (the analysis already chose them).
std::map<std::string, std::pair<std::uint64_t, Ns>> kernelTimes(const TraceReport& report, const DiffScope& scope) {
  std::map<std::string, std::pair<std::uint64_t, Ns>> times;
  if (report.trace == nullptr) return times;
  std::set<std::uint16_t> devices;
  for (const DeviceReport& device : report.devices) devices.insert(device.metrics.device_id);
  for (const GpuOp& op : report.trace->ops) {
    if (op.kind != OpKind::kKernel || devices.count(op.device_id) == 0) continue;
    Ns start = op.start, end = op.end;
    if (scope.window) {  // as the steady state's devices count: ops intersecting it, clipped
      if (op.end <= scope.window->first || op.start >= scope.window->second) continue;
      start = std::max(start, scope.window->first);
      end = std::min(end, scope.window->second);
    }
    auto& entry = times[std::string(report.trace->str(op.name))];
    entry.first += 1;
    entry.second += end - start;
  }
  return times;
}

std::vector<KernelTimeDiff> diffKernels(const TraceReport& before, const TraceReport& after,
                                        const DiffScope& before_scope, const DiffScope& after_scope) {
  const auto old_times = kernelTimes(before, before_scope);
  const auto new_times = kernelTimes(after, after_scope);
  std::map<std::string, KernelTimeDiff> merged;
  for (const auto& [name, value] : old_times) {
    KernelTimeDiff& diff = merged[name];
    diff.name = name;
    diff.count_before = value.first;
    diff.time_before_ns = value.second;
  }
  for (const auto& [name, value] : new_times) {
    KernelTimeDiff& diff = merged[name];
    diff.name = name;
    diff.count_after = value.first;
    diff.time_after_ns = value.second;
  }
  std::vector<KernelTimeDiff> diffs;
  for (auto& entry : merged) diffs.push_back(std::move(entry.second));
  std::stable_sort(diffs.begin(), diffs.end(), [](const KernelTimeDiff& a, const KernelTimeDiff& b) {
    return std::llabs(a.time_after_ns - a.time_before_ns) > std::llabs(b.time_after_ns - b.time_before_ns);
  });
  return diffs;
}

}  // namespace

ReportDiff diffReports(const TraceReport& before, const TraceReport& after,
                       const DiffScope& before_scope, const DiffScope& after_scope) {
  ReportDiff diff;
  diff.before_path = before.path;
  diff.after_path = after.path;
  diff.before_scope = before_scope.description;
  diff.after_scope = after_scope.description;
  std::set<std::uint16_t> device_ids;
  for (const DeviceReport& device : before.devices) device_ids.insert(device.metrics.device_id);
  for (const DeviceReport& device : after.devices) device_ids.insert(device.metrics.device_id);
  for (std::uint16_t id : device_ids) {
    diff.devices.push_back({id, metricDeltas(findDevice(before, id), findDevice(after, id))});
  }
  diff.findings = diffFindings(before, after);
  diff.kernels = diffKernels(before, after, before_scope, after_scope);
  return diff;
}

double largestOverlapDrop(const ReportDiff& diff) {
  double drop = 0.0;
  for (const DeviceDiff& device : diff.devices) {
    for (const MetricDelta& metric : device.metrics) {
      if (metric.name != "overlap_ratio" || !metric.before || !metric.after) continue;
      drop = std::max(drop, *metric.before - *metric.after);
    }
  }
  return drop;
}

}  // namespace cuoverlap
