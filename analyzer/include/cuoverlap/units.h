// Human-readable numbers shared by the diagnosis evidence and every renderer, and the two
// figures derived from DeviceMetrics that every report shows (idle share, potential speedup).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "cuoverlap/report.h"

namespace cuoverlap::units {

// "850 ns", "12.3 µs", "1.234 ms", "2.345 s"; negative values keep their sign.
std::string formatDuration(Ns ns);
// A fraction as a percentage with one decimal: 0.7341 -> "73.4%".
std::string formatPercent(double fraction);
// "512 B", "1.5 KiB", "3.0 MiB", "2.0 GiB".
std::string formatBytes(std::uint64_t bytes);

// idle_ns / span_ns (0 when the span is empty).
double idleShare(const DeviceMetrics& metrics);
// span / ideal: how much faster the same work would finish with perfect overlap. Empty when
// ideal_ns is 0 (nothing ran).
std::optional<double> potentialSpeedup(const DeviceMetrics& metrics);
// "1.42×", or "n/a" when there is no speedup figure.
std::string formatSpeedup(std::optional<double> speedup);

}  // namespace cuoverlap::units
