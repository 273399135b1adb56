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

// How long sample i of `series` covers: to the next sample, at most one and a half intervals (a
// longer gap is samples lost); the last one `interval`. Every user of the samples spans them so.
Ns sampleSpan(const GpuMetricSeries& series, std::size_t i, Ns interval);

// True for a metric counted in bytes per sample ("DRAM Read [bytes]"): reported per second.
bool isByteMetric(std::string_view name);

}  // namespace cuoverlap
