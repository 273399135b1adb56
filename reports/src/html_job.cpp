#include "html_job.h"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>

#include "cuoverlap/html_report.h"
#include "cuoverlap/names.h"
#include "cuoverlap/units.h"

namespace cuoverlap::html {
namespace {

using units::formatDuration;

constexpr double kWidth = 1000.0;
constexpr int kLane = 18;
constexpr int kLabel = 70;

void appendRankTable(std::string& out, const JobAnalysis& job) {
  out += "<table><tr><th>rank</th><th>file</th><th>pid</th><th>device</th><th>span</th>"
         "<th>compute</th><th>communication</th><th>exposed communication</th><th>idle</th>"
         "<th>collectives</th><th>arrived last</th></tr>";
  for (const RankRow& r : job.ranks) {
    fmt::format_to(std::back_inserter(out),
                   "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
                   "<td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                   r.rank, escapeHtml(r.path), r.pid, r.device_id, formatDuration(r.span_ns),
                   formatDuration(r.compute_ns), formatDuration(r.comm_busy_ns),
                   formatDuration(r.comm_exposed_ns), formatDuration(r.idle_ns), r.collectives,
                   r.arrived_last);
  }
  out += "</table>";
}

// One lane per rank on the job's time axis: its span in grey, its communication in the comm
// engine's colour.
void appendRankLanes(std::string& out, const JobAnalysis& job) {
  if (job.ranks.empty()) return;
  Ns begin = job.ranks.front().first_start, end = job.ranks.front().last_end;
  for (const RankRow& r : job.ranks) {
    begin = std::min(begin, r.first_start);
    end = std::max(end, r.last_end);
  }
  const double scale = (kWidth - kLabel) / static_cast<double>(std::max<Ns>(1, end - begin));
  const auto x = [&](Ns t) { return kLabel + static_cast<double>(t - begin) * scale; };
  const int height = kLane * static_cast<int>(job.ranks.size()) + 4;
  fmt::format_to(std::back_inserter(out),
                 "<svg class=\"ranks\" viewBox=\"0 0 {} {}\" width=\"100%\" role=\"img\" "
                 "aria-label=\"ranks on one time axis\">", kWidth, height);
  for (std::size_t i = 0; i < job.ranks.size(); ++i) {
    const RankRow& r = job.ranks[i];
    const int y = kLane * static_cast<int>(i) + 2;
    fmt::format_to(std::back_inserter(out),
                   "<text x=\"2\" y=\"{}\" font-size=\"11\">rank {}</text>"
                   "<rect x=\"{:.2f}\" y=\"{}\" width=\"{:.2f}\" height=\"{}\" fill=\"#ddd\">"
                   "<title>rank {}: {}</title></rect>",
                   y + 12, r.rank, x(r.first_start), y, std::max(0.5, x(r.last_end) - x(r.first_start)),
                   kLane - 4, r.rank, formatDuration(r.span_ns));
    for (const auto& [s, e] : r.communication_blocks) {
      fmt::format_to(std::back_inserter(out),
                     "<rect class=\"e-comm\" x=\"{:.2f}\" y=\"{}\" width=\"{:.2f}\" height=\"{}\">"
                     "<title>communication {}</title></rect>",
                     x(s), y, std::max(0.5, x(e) - x(s)), kLane - 4, formatDuration(e - s));
    }
  }
  fmt::format_to(std::back_inserter(out),
                 "</svg><p class=\"note\">{} on one axis of {}; communication kernels shaded.</p>",
                 escapeHtml(job.clock), formatDuration(end - begin));
}

}  // namespace

void appendJob(std::string& out, const JobAnalysis& job) {
  fmt::format_to(std::back_inserter(out), "<section><h2>Job: {} ranks</h2>", job.ranks.size());
  appendRankTable(out, job);
  appendRankLanes(out, job);
  fmt::format_to(std::back_inserter(out),
                 "<p>Collectives matched across ranks: {}; skew max {}, mean {}; type mismatches {}.</p>",
                 job.matched, formatDuration(job.max_skew_ns), formatDuration(job.mean_skew_ns),
                 job.type_mismatches);
  if (!job.largest_skews.empty()) {
    out += "<table><tr><th>collective</th><th>stream</th><th>skew</th><th>first rank</th><th>last rank</th></tr>";
    for (const MatchedCollective& m : job.largest_skews) {
      fmt::format_to(std::back_inserter(out), "<tr><td>{} #{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                     escapeHtml(m.type), m.sequence + 1, m.stream + 1, formatDuration(m.skew_ns),
                     m.first_rank, m.last_rank);
    }
    out += "</table>";
  }
  for (const Finding& f : job.findings) {
    fmt::format_to(std::back_inserter(out),
                   "<div class=\"finding {}\"><h4>{} <code>{}</code></h4><p>{}</p><p>{} occurrence(s), "
                   "about {} lost.</p><p><b>Fix:</b> {}</p></div>",
                   severityName(f.severity), severityName(f.severity), f.id, escapeHtml(f.summary),
                   f.count, formatDuration(f.time_ns), escapeHtml(f.advice));
  }
  out += "</section>";
}

}  // namespace cuoverlap::html
