// Scope by NVTX range and by time window.
//
// An instance of range NAME is an NVTX push/pop or start/end range with that text (of the scoped
// process). NVTX ranges are host time; the GPU work they issue runs later. An instance's window is
// therefore projected onto the GPU: [range start, max(range end, end of the last op launched by a
// call of the same thread that began inside the range)). Metrics, gaps and findings are computed
// per instance in that window, then summed (sumRangeInstances, mergeRangeFindings).
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <string>

#include <fmt/format.h>

#include "cuoverlap/diagnosis.h"
#include "cuoverlap/error.h"
#include "cuoverlap/metrics.h"

namespace cuoverlap {
namespace {

constexpr double kMaxDurationNs = 4611686018427387904.0;  // 2^62

bool isRange(const NvtxRange& range) {
  const auto type = static_cast<schema::NvtxEventType>(range.event_type);
  return (type == schema::NvtxEventType::kPushPopRange ||
          type == schema::NvtxEventType::kStartEndRange) &&
         range.end > range.start;
}

// The end of the GPU work launched from inside `range` by its thread (or the range end).
Ns projectedEnd(const Trace& trace, const NvtxRange& range) {
  std::vector<std::uint32_t> correlations;
  for (const RuntimeCall& call : trace.runtime_calls) {
    if (call.pid == range.pid && call.tid == range.tid && call.start >= range.start &&
        call.start < range.end && call.correlation_id != 0) {
      correlations.push_back(call.correlation_id);
    }
  }
  std::sort(correlations.begin(), correlations.end());
  Ns end = range.end;
  for (const GpuOp& op : trace.ops) {
    if (std::binary_search(correlations.begin(), correlations.end(), op.correlation_id)) {
      end = std::max(end, op.end);
    }
  }
  return end;
}

RangeInstance analyzeInstance(const Trace& trace, const AnalysisOptions& options,
                              const NvtxRange& range) {
  RangeInstance instance;
  instance.name = std::string(trace.str(range.text));
  instance.start = range.start;
  instance.end = projectedEnd(trace, range);
  Scope scope = options.scope;
  scope.range.reset();
  scope.window_start = std::max(scope.window_start, instance.start);
  scope.window_end = std::min(scope.window_end, instance.end);
  for (std::uint16_t device_id : devicesInScope(trace, scope)) {
    DeviceReport device;
    device.metrics = computeDeviceMetrics(trace, scope, device_id);
    device.gaps = diagnoseDevice(trace, scope, device_id, options.gap_threshold_ns,
                                 instance.findings, &device.explained);
    instance.devices.push_back(std::move(device));
  }
  sortFindingsByCost(instance.findings);
  return instance;
}

}  // namespace

Ns parseDuration(std::string_view text) {
  std::size_t digits = 0;
  while (digits < text.size() &&
         (std::isdigit(static_cast<unsigned char>(text[digits])) || text[digits] == '.')) {
    ++digits;
  }
  const std::string number(text.substr(0, digits));
  const std::string_view unit = text.substr(digits);
  double scale = 0;
  if (unit.empty() || unit == "ns") scale = 1;
  if (unit == "us") scale = 1e3;
  if (unit == "ms") scale = 1e6;
  if (unit == "s") scale = 1e9;
  const bool has_digit = std::any_of(number.begin(), number.end(), [](char c) {
    return std::isdigit(static_cast<unsigned char>(c)) != 0;
  });
  if (!has_digit || scale == 0 || std::count(number.begin(), number.end(), '.') > 1) {
    throw UserError(fmt::format("bad duration '{}': expected a number with ns, us, ms or s", text));
  }
  // strtod, not stod: a long digit string is out of range, not an exception; 2^62 ns (146 years)
  // bounds every valid duration and keeps END - START of a window representable.
  const double ns = std::strtod(number.c_str(), nullptr) * scale;
  if (!(ns <= kMaxDurationNs)) {
    throw UserError(fmt::format("bad duration '{}': larger than 2^62 ns", text));
  }
  return static_cast<Ns>(std::llround(ns));
}

std::pair<Ns, Ns> parseWindow(std::string_view text) {
  const auto colon = text.find(':');
  if (colon == std::string_view::npos) {
    throw UserError(fmt::format("bad window '{}': expected START:END", text));
  }
  const Ns start = parseDuration(text.substr(0, colon));
  const Ns end = parseDuration(text.substr(colon + 1));
  if (end <= start) throw UserError(fmt::format("bad window '{}': END must be after START", text));
  return {start, end};
}

std::vector<RangeInstance> analyzeRangeInstances(const Trace& trace, const AnalysisOptions& options) {
  std::vector<RangeInstance> instances;
  if (!options.scope.range) return instances;
  for (const NvtxRange& range : trace.nvtx) {
    if (!isRange(range) || trace.str(range.text) != *options.scope.range) continue;
    if (options.scope.pid && range.pid != *options.scope.pid) continue;
    if (range.end <= options.scope.window_start || range.start >= options.scope.window_end) continue;
    instances.push_back(analyzeInstance(trace, options, range));
  }
  return instances;
}

}  // namespace cuoverlap
