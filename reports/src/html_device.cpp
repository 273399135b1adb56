#include "html_device.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <iterator>

#include "cuoverlap/html_report.h"
#include "cuoverlap/names.h"
#include "cuoverlap/units.h"
#include "html_timeline.h"
#include "render_common.h"

namespace cuoverlap::html {
namespace {

using units::formatDuration;
using units::formatPercent;

// A metric card; `quality` is "ok", "bad" or "" (no colour).
void appendCard(std::string& out, std::string_view key, const std::string& value,
                const std::string& detail, std::string_view quality) {
  fmt::format_to(std::back_inserter(out),
                 "<div class=\"card {}\"><div class=\"k\">{}</div><div class=\"v\">{}</div>"
                 "<div class=\"d\">{}</div></div>",
                 quality, key, escapeHtml(value), escapeHtml(detail));
}

std::string_view qualityOf(double value, double good, double bad, bool higher_is_better) {
  if (!higher_is_better) {
    value = -value;
    good = -good;
    bad = -bad;
  }
  if (value >= good) return "ok";
  if (value <= bad) return "bad";
  return "";
}

// NCCL kernels are their own engine (docs/metrics.md): how much of their time hid under compute
// and how long the device waited on communication alone.
void appendCommunicationCards(std::string& out, const DeviceMetrics& m) {
  const CommunicationMetrics& c = m.communication;
  if (c.kernels == 0) return;
  appendCard(out, "communication hidden", formatPercent(c.hidden_fraction),
             fmt::format("{} of {} under compute", formatDuration(c.hidden_ns), formatDuration(c.busy_ns)),
             qualityOf(c.hidden_fraction, 0.7, 0.3, true));
  const double exposed_share = m.span_ns > 0 ? static_cast<double>(c.exposed_ns) / static_cast<double>(m.span_ns) : 0.0;
  appendCard(out, "exposed communication", formatDuration(c.exposed_ns),
             fmt::format("{} of span, {} NCCL kernels", formatPercent(exposed_share), c.kernels),
             qualityOf(exposed_share, 0.05, 0.2, false));
}

}  // namespace

DeviceRanks deviceRanks(const Trace* trace) {
  DeviceRanks ranks;
  if (trace == nullptr) return ranks;
  std::map<std::uint32_t, std::int32_t> rank_of_pid;
  for (const ProcessInfo& process : trace->processes) {
    if (process.rank) rank_of_pid[process.pid] = *process.rank;
  }
  if (rank_of_pid.empty()) return ranks;
  std::set<std::pair<std::uint16_t, std::uint32_t>> seen;  // (device, pid): ops repeat them
  for (const GpuOp& op : trace->ops) {
    if (!seen.insert({op.device_id, op.pid}).second) continue;
    const auto rank = rank_of_pid.find(op.pid);
    if (rank != rank_of_pid.end()) ranks[op.device_id].insert(rank->second);
  }
  return ranks;
}

std::string deviceLabel(const DeviceMetrics& metrics, const DeviceRanks& ranks) {
  std::string label = fmt::format("device {}", metrics.device_id);
  const auto found = ranks.find(metrics.device_id);
  if (found != ranks.end() && !found->second.empty()) {
    label += fmt::format(" · {} {}", found->second.size() == 1 ? "rank" : "ranks", fmt::join(found->second, ", "));
  }
  if (!metrics.name.empty()) label += " · " + metrics.name;
  return label;
}

void appendCards(std::string& out, const DeviceMetrics& m, const std::string& label) {
  out += "<div class=\"cards\">";
  fmt::format_to(std::back_inserter(out), "<div class=\"card who\"><div class=\"k\">these cards are</div>"
                 "<div class=\"v\">{}</div></div>", escapeHtml(label));
  appendCard(out, "overlap ratio", fmt::format("{:.3f}", m.overlap_ratio),
             "1 − busy / sum of op time", qualityOf(m.overlap_ratio, 0.3, 0.05, true));
  appendCard(out, "copy hidden", formatPercent(m.copy_hidden_fraction),
             m.memcpys == 0 ? "no copies" : "copy time under compute",
             m.memcpys == 0 ? "" : qualityOf(m.copy_hidden_fraction, 0.7, 0.3, true));
  const double idle = units::idleShare(m);
  appendCard(out, "idle share", formatPercent(idle), formatDuration(m.idle_ns) + " idle",
             qualityOf(idle, 0.1, 0.3, false));
  appendCard(out, "pipeline efficiency", formatPercent(m.pipeline_efficiency),
             "busiest engine / span", qualityOf(m.pipeline_efficiency, 0.8, 0.5, true));
  const auto speedup = units::potentialSpeedup(m);
  appendCard(out, "potential speedup", units::formatSpeedup(speedup),
             "span / engine bound " + formatDuration(m.ideal_ns),
             speedup ? qualityOf(*speedup, 1.1, 1.5, false) : "");
  appendCommunicationCards(out, m);
  out += "</div>";
  fmt::format_to(std::back_inserter(out),
                 "<p class=\"facts\">span {} · busy {} · sum of op time {} · {} kernels, {} "
                 "memcpys, {} memsets</p>",
                 formatDuration(m.span_ns), formatDuration(m.busy_ns), formatDuration(m.sum_ns),
                 m.kernels, m.memcpys, m.memsets);
}

void appendEngines(std::string& out, const DeviceMetrics& m) {
  out += "<div class=\"engines\">";
  for (const EngineUsage& usage : m.engines) {
    if (usage.busy_ns == 0) continue;
    fmt::format_to(std::back_inserter(out),
                   "<span>{}</span><div class=\"bar\"><i class=\"{}\" style=\"width:{:.1f}%\"></i>"
                   "</div><span>{} · {}</span>",
                   engineName(usage.engine), engineClass(usage.engine),
                   std::min(100.0, usage.share * 100.0), formatPercent(usage.share),
                   formatDuration(usage.busy_ns));
  }
  out += "</div>";
}

// The full name on hover (title, first 2,000 bytes).
void appendKernelTable(std::string& out, const std::vector<KernelSummary>& kernels, std::size_t rows) {
  if (kernels.empty() || rows == 0) return;
  out += "<h4>Top kernels by GPU time</h4><table class=\"kernels\"><colgroup><col><col style=\"width:10%\">"
         "<col style=\"width:12%\"><col style=\"width:12%\"><col style=\"width:12%\"></colgroup>"
         "<tr><th>kernel</th><th>launches</th><th>total</th><th>mean</th><th>share of kernel time</th></tr>";
  for (const render::KernelRow& row : render::kernelTable(kernels, rows)) {
    const KernelSummary& k = *row.kernel;
    fmt::format_to(std::back_inserter(out),
                   "<tr><td title=\"{}\"><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                   escapeHtml(std::string_view(k.name).substr(0, 2000)), escapeHtml(row.name), k.count,
                   formatDuration(k.total_ns), formatDuration(k.mean_ns), formatPercent(k.share));
  }
  out += "</table>";
  if (kernels.size() > rows) {
    fmt::format_to(std::back_inserter(out),
                   "<p class=\"sub\">{} more kernel names (<code>--kernels N</code> shows more; the "
                   "JSON report has all).</p>", kernels.size() - rows);
  }
}

}  // namespace cuoverlap::html
