#include "scope_summary.h"

#include <fmt/format.h>

#include "cuoverlap/gpu_metrics.h"
#include "cuoverlap/units.h"
#include "render_common.h"

namespace cuoverlap::render {
namespace {

using units::formatDuration;
using units::formatPercent;

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

std::string captureWindowLine(const TraceReport& trace) {
  if (!trace.capture) return "";
  const CaptureWindowInfo& c = *trace.capture;
  if (!c.opened) {
    const std::string instances =
        c.instances ? fmt::format(" (the program ran {} instance(s) of the range)", *c.instances) : "";
    return fmt::format("trace is a capture window that never opened: {}{}; it holds no GPU activity",
                       c.spec, instances);
  }
  std::string when;
  if (c.close_ns > c.open_ns && c.open_ns > 0) {
    when = fmt::format(" (open {}", formatDuration(c.close_ns - c.open_ns));
    if (trace.first_op_start > 0) when += ", from " + relativeTime(trace, c.open_ns);
    when += ")";
  }
  return fmt::format("trace is a capture window: {}{}; nothing outside it was recorded", c.spec, when);
}

std::vector<std::string> rangeSummaryLines(const TraceReport& trace) {
  std::vector<std::string> lines;
  if (!trace.range_summary) return lines;
  const RangeSummary& s = *trace.range_summary;
  std::vector<std::string> names;
  for (const auto& [name, count] : s.names) {
    if (names.size() == 3) {
      names.push_back("...");
      break;
    }
    names.push_back(fmt::format("'{}' x{}", name, count));
  }
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
    slow.push_back(fmt::format("{} at {} ({})", r.name, relativeTime(trace, r.start),
                               formatDuration(r.end - r.start)));
  }
  lines.push_back("slowest: " + fmt::format("{}", fmt::join(slow, "; ")));
  const std::string summed =
      s.analyzed < s.count
          ? fmt::format("{} of the {} instances (evenly spaced) summed: they overlap, and analyzing "
                        "each would visit {} ops and calls", s.analyzed, s.count, s.visits)
          : fmt::format("the {} instances summed", s.count);
  lines.push_back(fmt::format(
      "device metrics below: {}; findings: merged over them{}", summed,
      trace.range_instances.empty() ? " (--instances N shows the N slowest in full)" : ""));
  return lines;
}

bool hasSeparateSteadyState(const TraceReport& trace) {
  if (!trace.steady_state || !trace.steady_state->found) return false;
  const SteadyState& s = *trace.steady_state;
  for (const DeviceReport& d : trace.devices) {
    if (d.metrics.first_start < s.start || d.metrics.last_end > s.end) return true;
  }
  return false;
}

std::vector<std::string> steadyStateLines(const TraceReport& trace) {
  std::vector<std::string> lines;
  if (trace.phases) {
    for (const std::string& note : trace.phases->notes) lines.push_back("note: " + note);
  }
  if (!trace.steady_state) return lines;
  const SteadyState& s = *trace.steady_state;
  if (!s.found) {
    lines.push_back("steady state: none found (" + s.reason + "); the report covers the whole run");
    return lines;
  }
  lines.push_back(fmt::format(
      "steady state: {} iterations from {}{}, {} to {} ({})", s.iterations, s.source,
      s.warmup_dropped ? fmt::format(" after {} warm-up iteration(s) dropped", s.warmup_dropped)
                       : std::string(" (no warm-up iteration dropped)"),
      relativeTime(trace, s.start), relativeTime(trace, s.end), formatDuration(s.end - s.start)));
  lines.push_back(fmt::format("  covers {} of the run's GPU busy time", formatPercent(s.busy_share)));
  lines.push_back("  iteration period (GPU start to the next's): " + durationSpreadText(s.iteration_ns));
  if (s.host_range_ns) {
    lines.push_back("  host range length (not the period): " + durationSpreadText(*s.host_range_ns));
  }
  if (!hasSeparateSteadyState(trace)) {
    lines.push_back("  it holds every GPU op of the run: the whole run below is the steady state");
    return lines;
  }
  for (const DeviceReport& d : s.devices) {
    const DeviceMetrics& m = d.metrics;
    const DeviceMetrics* whole = nullptr;
    for (const DeviceReport& w : trace.devices) {
      if (w.metrics.device_id == m.device_id) whole = &w.metrics;
    }
    const auto idle = [](const DeviceMetrics& x) {
      return x.span_ns > 0 ? static_cast<double>(x.idle_ns) / x.span_ns : 0.0;
    };
    lines.push_back(fmt::format(
        "  device {}: idle {}, overlap ratio {:.3f}, copy hidden {}, pipeline efficiency {}{}",
        m.device_id, formatPercent(idle(m)), m.overlap_ratio, formatPercent(m.copy_hidden_fraction),
        formatPercent(m.pipeline_efficiency),
        whole ? fmt::format(" (whole run: idle {}, pipeline efficiency {})", formatPercent(idle(*whole)),
                            formatPercent(whole->pipeline_efficiency))
              : std::string()));
  }
  return lines;
}

std::vector<std::string> unifiedMemoryLines(const TraceReport& trace) {
  std::vector<std::string> lines;
  if (!trace.unified_memory) return lines;
  const UnifiedMemoryReport& um = *trace.unified_memory;
  for (const UnifiedMemoryDevice& d : um.devices) {
    std::string line = fmt::format("unified memory, device {}: {} GPU page faults in {} groups "
                                   "serviced over {}; {} migrations moved {} HtoD, {} DtoH",
                                   d.device_id, d.page_faults, d.fault_groups,
                                   formatDuration(d.fault_ns), d.migrations,
                                   units::formatBytes(d.htod_bytes), units::formatBytes(d.dtoh_bytes));
    if (d.dtod_bytes > 0) line += fmt::format(", {} DtoD", units::formatBytes(d.dtod_bytes));
    lines.push_back(line + fmt::format(" over {}", formatDuration(d.migration_ns)));
  }
  if (um.cpu_page_faults > 0 || um.thrashing > 0) {
    lines.push_back(fmt::format("unified memory: {} CPU page faults, {} thrashing or remote-map "
                                "records", um.cpu_page_faults, um.thrashing));
  }
  return lines;
}

namespace {

// "DRAM Read [bytes]" -> "DRAM Read"; a value as its unit says: bytes as a rate, a percentage.
std::string metricLabel(const std::string& name) {
  const std::size_t open = name.rfind(" [");
  return open == std::string::npos ? name : name.substr(0, open);
}

std::string metricValue(const std::string& name, double value) {
  if (isByteMetric(name)) {
    if (value >= 1e12) return fmt::format("{:.2f} TB/s", value / 1e12);
    if (value >= 1e9) return fmt::format("{:.1f} GB/s", value / 1e9);
    return fmt::format("{:.1f} MB/s", value / 1e6);
  }
  if (name.find("[%") != std::string::npos) return fmt::format("{:.1f}%", value);
  const std::size_t open = name.rfind(" [");
  const std::string unit = open == std::string::npos ? "" : " " + name.substr(open + 2, name.size() - open - 3);
  return fmt::format("{:.4g}{}", value, unit);
}

std::string metricValues(const GpuMetricsReport& gm, const std::vector<std::optional<double>>& values) {
  std::string out;
  for (std::size_t m = 0; m < gm.metrics.size() && m < values.size(); ++m) {
    if (!values[m]) continue;
    out += fmt::format("{}{} {}", out.empty() ? "" : ", ", metricLabel(gm.metrics[m]),
                       metricValue(gm.metrics[m], *values[m]));
  }
  return out.empty() ? "no samples" : out;
}

}  // namespace

std::vector<std::string> gpuMetricsLines(const TraceReport& trace) {
  std::vector<std::string> lines;
  if (!trace.gpu_metrics) return lines;
  const GpuMetricsReport& gm = *trace.gpu_metrics;
  for (const GpuMetricDevice& d : gm.devices) {
    lines.push_back(fmt::format("GPU metrics, device {} (every {}, {} samples): {}", d.device_id,
                                formatDuration(gm.interval_ns), d.samples, metricValues(gm, d.values)));
  }
  constexpr std::size_t kKernelLines = 5;
  for (std::size_t i = 0; i < gm.kernels.size() && i < kKernelLines; ++i) {
    const GpuMetricKernel& k = gm.kernels[i];
    lines.push_back(fmt::format("  kernel {} on device {} ({} launch{}, {} alone, {}): {}", inert(k.name),
                                k.device_id, k.launches, k.launches == 1 ? "" : "es", k.alone_launches, formatDuration(k.time_ns),
                                k.alone_launches > 0 ? metricValues(gm, k.values) : "never alone on its device"));
  }
  if (gm.lost > 0) lines.push_back(fmt::format("GPU metrics: {} samples lost while recording", gm.lost));
  if (!gm.error.empty()) lines.push_back("GPU metrics: " + inert(gm.error));
  return lines;
}

}  // namespace cuoverlap::render
