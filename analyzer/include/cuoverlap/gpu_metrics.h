// GPU metrics of a trace inside a scope: per device and per kernel (docs/metrics.md, "GPU
// metrics").
#pragma once

#include <optional>

#include "cuoverlap/report.h"

namespace cuoverlap {

// Empty when the trace holds no GPU metrics. A sample counts for the part of its span (its start to
// the next sample, at most one and a half intervals) inside the window or the kernel. A kernel's
// values come from its launches in scope that ran alone on their device: the counters are
// device-wide.
std::optional<GpuMetricsReport> summarizeGpuMetrics(const Trace& trace, const Scope& scope);

// True for a metric counted in bytes per sample ("DRAM Read [bytes]"): reported per second.
bool isByteMetric(std::string_view name);

}  // namespace cuoverlap
