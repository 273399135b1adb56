// Text, Markdown and JSON renderings of a ReportDiff.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <iterator>

#include "cuoverlap/markdown_report.h"
#include "cuoverlap/names.h"
#include "cuoverlap/report_diff.h"
#include "cuoverlap/units.h"
#include "render_common.h"

namespace cuoverlap {
namespace {

constexpr std::size_t kKernelRows = 20;  // text and Markdown list the largest changes only

std::string formatValue(MetricUnit unit, std::optional<double> value) {
  if (!value) return "-";
  switch (unit) {
    case MetricUnit::kRatio: return fmt::format("{:.4f}", *value);
    case MetricUnit::kFraction: return units::formatPercent(*value);
    case MetricUnit::kNanoseconds: return units::formatDuration(static_cast<Ns>(*value));
    case MetricUnit::kCount: return fmt::format("{}", static_cast<long long>(*value));
    case MetricUnit::kSpeedup: return units::formatSpeedup(value);
  }
  return "-";
}

// A signed number at `decimals` places; a change that rounds to zero prints as "0" with that many
// places, never "-0.0000".
std::string signedFixed(double value, int decimals) {
  const double scale = std::pow(10.0, decimals);
  const double rounded = std::round(value * scale) / scale;
  if (rounded == 0.0) return fmt::format("{:.{}f}", 0.0, decimals);
  return fmt::format("{:+.{}f}", rounded, decimals);
}

std::string formatDelta(const MetricDelta& metric) {
  if (!metric.before || !metric.after) return "-";
  const double delta = *metric.after - *metric.before;
  switch (metric.unit) {
    case MetricUnit::kRatio: return signedFixed(delta, 4);
    case MetricUnit::kFraction: return signedFixed(delta * 100.0, 1) + " pp";
    case MetricUnit::kNanoseconds: {
      const std::string text = units::formatDuration(static_cast<Ns>(delta));
      return delta >= 0 ? "+" + text : text;
    }
    case MetricUnit::kCount: return fmt::format("{:+}", static_cast<long long>(delta));
    case MetricUnit::kSpeedup: return signedFixed(delta, 2) + "×";
  }
  return "-";
}

std::string_view changeName(FindingChange change) {
  switch (change) {
    case FindingChange::kAdded: return "added";
    case FindingChange::kRemoved: return "removed";
    case FindingChange::kChanged: return "changed";
  }
  return "changed";
}

std::string findingSummary(const FindingDiff& f) {
  const auto side = [](std::uint64_t count, Ns time) {
    return fmt::format("{} occurrence(s), {}", count, units::formatDuration(time));
  };
  if (f.change == FindingChange::kAdded) return side(f.count_after, f.time_after_ns);
  if (f.change == FindingChange::kRemoved) return side(f.count_before, f.time_before_ns);
  return side(f.count_before, f.time_before_ns) + " -> " + side(f.count_after, f.time_after_ns);
}

std::string kernelDelta(const KernelTimeDiff& k) {
  const Ns delta = k.time_after_ns - k.time_before_ns;
  return (delta >= 0 ? "+" : "") + units::formatDuration(delta);
}

}  // namespace

std::string renderDiffText(const ReportDiff& diff) {
  std::string out = fmt::format("cuoverlap diff\n  before: {}\n          scope {}\n  after:  {}\n          scope {}\n",
                                render::inert(diff.before_path), render::inert(diff.before_scope),
                                render::inert(diff.after_path), render::inert(diff.after_scope));
  for (const DeviceDiff& device : diff.devices) {
    fmt::format_to(std::back_inserter(out), "\ndevice {:<24}{:>14}{:>14}{:>14}\n", device.device_id,
                   "before", "after", "delta");
    for (const MetricDelta& metric : device.metrics) {
      fmt::format_to(std::back_inserter(out), "  {:<29}{:>14}{:>14}{:>14}\n", metric.name,
                     formatValue(metric.unit, metric.before), formatValue(metric.unit, metric.after),
                     formatDelta(metric));
    }
  }
  out += "\nfindings:\n";
  if (diff.findings.empty()) out += "  no change\n";
  for (const FindingDiff& f : diff.findings) {
    fmt::format_to(std::back_inserter(out), "  {:<8} {} {} (device {}): {}\n", changeName(f.change),
                   severityName(f.severity), f.id, f.device_id, render::inert(findingSummary(f)));
  }
  out += "\nkernel time by name (largest changes first):\n";
  if (diff.kernels.empty()) out += "  no kernels\n";
  for (std::size_t i = 0; i < diff.kernels.size() && i < kKernelRows; ++i) {
    const KernelTimeDiff& k = diff.kernels[i];
    fmt::format_to(std::back_inserter(out), "  {:>12} {:>12} {:>12}  {} ({} -> {} launches)\n",
                   units::formatDuration(k.time_before_ns), units::formatDuration(k.time_after_ns),
                   kernelDelta(k), render::inert(k.name), k.count_before, k.count_after);
  }
  return render::inert(out, render::Newlines::kKeep);
}

std::string renderDiffMarkdown(const ReportDiff& diff) {
  std::string out = fmt::format("# cuoverlap diff\n\nbefore: {} (scope {})  \nafter: {} (scope {})\n\n",
                                escapeMarkdown(diff.before_path), escapeMarkdown(diff.before_scope),
                                escapeMarkdown(diff.after_path), escapeMarkdown(diff.after_scope));
  for (const DeviceDiff& device : diff.devices) {
    fmt::format_to(std::back_inserter(out),
                   "## Device {}\n\n| metric | before | after | delta |\n| --- | --- | --- | --- |\n",
                   device.device_id);
    for (const MetricDelta& metric : device.metrics) {
      fmt::format_to(std::back_inserter(out), "| `{}` | {} | {} | {} |\n", metric.name,
                     formatValue(metric.unit, metric.before), formatValue(metric.unit, metric.after),
                     formatDelta(metric));
    }
    out += "\n";
  }
  out += "## Findings\n\n";
  if (diff.findings.empty()) out += "No change.\n\n";
  for (const FindingDiff& f : diff.findings) {
    fmt::format_to(std::back_inserter(out), "- **{}** {} `{}` (device {}): {}\n", changeName(f.change),
                   severityName(f.severity), f.id, f.device_id, findingSummary(f));
  }
  out += "\n## Kernel time by name\n\n| kernel | before | after | delta | launches |\n"
         "| --- | --- | --- | --- | --- |\n";
  for (std::size_t i = 0; i < diff.kernels.size() && i < kKernelRows; ++i) {
    const KernelTimeDiff& k = diff.kernels[i];
    fmt::format_to(std::back_inserter(out), "| {} | {} | {} | {} | {} → {} |\n",
                   escapeMarkdown(render::shortName(k.name)),
                   units::formatDuration(k.time_before_ns), units::formatDuration(k.time_after_ns),
                   kernelDelta(k), k.count_before, k.count_after);
  }
  return out;
}

std::string renderDiffJson(const ReportDiff& diff) {
  using nlohmann::json;
  json devices = json::array();
  for (const DeviceDiff& device : diff.devices) {
    json metrics = json::object();
    for (const MetricDelta& metric : device.metrics) {
      json entry = {{"before", nullptr}, {"after", nullptr}, {"delta", nullptr}};
      if (metric.before) entry["before"] = *metric.before;
      if (metric.after) entry["after"] = *metric.after;
      if (metric.before && metric.after) entry["delta"] = *metric.after - *metric.before;
      metrics[metric.name] = entry;
    }
    devices.push_back({{"device_id", device.device_id}, {"metrics", metrics}});
  }
  json findings = json::array();
  for (const FindingDiff& f : diff.findings) {
    findings.push_back({{"id", f.id}, {"device_id", f.device_id}, {"change", changeName(f.change)},
                        {"severity", severityName(f.severity)}, {"count_before", f.count_before},
                        {"count_after", f.count_after}, {"time_before_ns", f.time_before_ns},
                        {"time_after_ns", f.time_after_ns}});
  }
  json kernels = json::array();
  for (const KernelTimeDiff& k : diff.kernels) {
    kernels.push_back({{"name", k.name}, {"count_before", k.count_before}, {"count_after", k.count_after},
                       {"time_before_ns", k.time_before_ns}, {"time_after_ns", k.time_after_ns},
                       {"delta_ns", k.time_after_ns - k.time_before_ns}});
  }
  const json doc = {{"schema", "cuoverlap.diff/1"}, {"before", diff.before_path}, {"after", diff.after_path},
                    {"before_scope", diff.before_scope}, {"after_scope", diff.after_scope},
                    {"devices", devices}, {"findings", findings}, {"kernels", kernels},
                    {"largest_overlap_drop", largestOverlapDrop(diff)}};
  return doc.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

}  // namespace cuoverlap
