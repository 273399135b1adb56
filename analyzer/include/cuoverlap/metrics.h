// Overlap metrics per device (definitions: docs/metrics.md and the top of metrics.cpp).
#pragma once

#include <cstdint>
#include <vector>

#include "cuoverlap/report.h"
#include "cuoverlap/trace_index.h"

namespace cuoverlap {

// Whether an op counts for the metrics: a kernel/memcpy/memset with start > 0 and end >= start,
// on the scope's device and process, intersecting the scope's window. Inline: every pass over the
// ops asks it once per op.
inline bool opInScope(const GpuOp& op, const Scope& scope) {
  if (op.start <= 0 || op.end < op.start) return false;
  if (scope.device && op.device_id != *scope.device) return false;
  if (scope.pid && op.pid != *scope.pid) return false;
  // Half-open window; a zero-length op counts when its instant lies inside.
  return op.start < scope.window_end && (op.end > scope.window_start || op.start >= scope.window_start);
}

// The op's interval clipped to the scope's window.
inline Ns clippedStart(const GpuOp& op, const Scope& scope) {
  return op.start < scope.window_start ? scope.window_start : op.start;
}
inline Ns clippedEnd(const GpuOp& op, const Scope& scope) {
  return op.end > scope.window_end ? scope.window_end : op.end;
}

// Devices that have at least one op in scope, ascending; with Scope::device set, that device
// alone (UserError when the trace has no such device).
std::vector<std::uint16_t> devicesInScope(const Trace& trace, const Scope& scope);

// All metrics of one device in one pass over its ops (trace.ops must be sorted by start).
DeviceMetrics computeDeviceMetrics(const Trace& trace, const Scope& scope, std::uint16_t device_id);
// The same over ops already selected (indices into trace.ops of ops in scope on the device, in
// order of clipped start): what a windowed query over a device index hands in (O(selected ops)).
DeviceMetrics computeDeviceMetrics(const Trace& trace, const Scope& scope, std::uint16_t device_id,
                                   const std::vector<std::uint32_t>& op_indices);

}  // namespace cuoverlap
