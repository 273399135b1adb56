#include "cuoverlap/units.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>

namespace cuoverlap::units {

std::string formatDuration(Ns ns) {
  const double value = static_cast<double>(ns);
  const double magnitude = std::fabs(value);
  if (magnitude < 1e3) return fmt::format("{} ns", ns);
  if (magnitude < 1e6) return fmt::format("{:.1f} µs", value / 1e3);
  if (magnitude < 1e9) return fmt::format("{:.3f} ms", value / 1e6);
  return fmt::format("{:.3f} s", value / 1e9);
}

std::string formatPercent(double fraction) { return fmt::format("{:.1f}%", fraction * 100.0); }

std::string formatBytes(std::uint64_t bytes) {
  if (bytes < 1024) return fmt::format("{} B", bytes);
  const char* const kUnits[] = {"KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes) / 1024.0;
  int unit = 0;
  while (value >= 1024.0 && unit < 3) {
    value /= 1024.0;
    ++unit;
  }
  return fmt::format("{:.1f} {}", value, kUnits[unit]);
}

double idleShare(const DeviceMetrics& metrics) {
  if (metrics.span_ns <= 0) return 0.0;
  return static_cast<double>(metrics.idle_ns) / static_cast<double>(metrics.span_ns);
}

std::optional<double> potentialSpeedup(const DeviceMetrics& metrics) {
  if (metrics.ideal_ns <= 0) return std::nullopt;
  return static_cast<double>(metrics.span_ns) / static_cast<double>(metrics.ideal_ns);
}

std::string formatSpeedup(std::optional<double> speedup) {
  if (!speedup) return "n/a";
  return fmt::format("{:.2f}×", *speedup);
}

}  // namespace cuoverlap::units
