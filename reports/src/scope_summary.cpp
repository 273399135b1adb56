#include "scope_summary.h"

#include <fmt/format.h>

#include "cuoverlap/units.h"

namespace cuoverlap::render {
namespace {

using units::formatDuration;
using units::formatPercent;

std::string relative(const TraceReport& trace, Ns time) {
  const Ns offset = time - trace.first_op_start;
  return (offset >= 0 ? "+" : "-") + formatDuration(offset >= 0 ? offset : -offset);
}

std::string durationSpreadText(const DurationSpread& d) {
  return fmt::format("median {}, p10 {}, p90 {}, max {}", formatDuration(d.median),
                     formatDuration(d.p10), formatDuration(d.p90), formatDuration(d.max));
}

std::string ratioText(const char* name, const RatioSpread& r, bool percent) {
  if (percent) {
    return fmt::format("{} median {} (p90 {})", name, formatPercent(r.median), formatPercent(r.p90));
  }
  return fmt::format("{} median {:.3f} (p90 {:.3f})", name, r.median, r.p90);
}

}  // namespace

std::string timeBaseLine(const TraceReport& trace) {
  return fmt::format("times are relative to the first GPU op, at {} ns (trace clock)",
                     trace.first_op_start);
}

std::vector<std::string> rangeSummaryLines(const TraceReport& trace) {
  std::vector<std::string> lines;
  if (!trace.range_summary) return lines;
  const RangeSummary& s = *trace.range_summary;
  std::vector<std::string> names;
  for (const auto& [name, count] : s.names) names.push_back(fmt::format("'{}' x{}", name, count));
  lines.push_back(fmt::format("range '{}': {} instances ({}), {} in total", s.pattern, s.count,
                              fmt::join(names, ", "), formatDuration(s.total_ns)));
  if (s.count == 0) return lines;
  lines.push_back("duration: " + durationSpreadText(s.duration_ns));
  for (const RangeDeviceSpread& d : s.devices) {
    lines.push_back(fmt::format("device {} per instance ({} with GPU work): {}; {}; {}; {}",
                                d.device_id, d.instances,
                                ratioText("overlap ratio", d.overlap_ratio, false),
                                ratioText("copy hidden", d.copy_hidden_fraction, true),
                                ratioText("pipeline efficiency", d.pipeline_efficiency, true),
                                ratioText("idle", d.idle_fraction, true)));
  }
  std::vector<std::string> slow;
  for (const RangeInstanceRef& r : s.slowest) {
    slow.push_back(fmt::format("{} at {} ({})", r.name, relative(trace, r.start),
                               formatDuration(r.end - r.start)));
  }
  lines.push_back("slowest: " + fmt::format("{}", fmt::join(slow, "; ")));
  lines.push_back(fmt::format(
      "device metrics below: the {} instances summed; findings: merged over them{}", s.count,
      trace.range_instances.empty() ? " (--instances N shows the N slowest in full)" : ""));
  return lines;
}

}  // namespace cuoverlap::render
