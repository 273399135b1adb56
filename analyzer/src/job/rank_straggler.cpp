// rank-straggler: one rank started matched collectives last, repeatedly. A matched collective is
// late when its skew (last rank's start − first rank's start, collective_matching.cpp) is at least
// 10 µs; the rank that started it last is its late rank. Fires for the rank that was late in at
// least two thirds of the late collectives (with two ranks one of them is always last: half is
// chance), in at least three, and whose cost reaches 1% of its span.
// Cost: the sum of the skews of the collectives it was late for: the time the first rank waited
// for it in each (the other ranks' GPUs held their collective kernels that long).
// Reason, from the late rank's own timeline in the windows before those collectives
// (CollectiveWindow, rank_timeline.cpp), against the median of the other ranks in the same
// windows: more idle GPU time -> its host was busy (CPU work, launch overhead; data loading when
// it also copied more HtoD, by at least 10 µs and a tenth of the extra idle time); else more
// compute time -> longer kernels; else nothing in its own timeline explains it (a slower link, or
// a rank upstream).
#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "cuoverlap/units.h"
#include "job_internal.h"

namespace cuoverlap::job {
namespace {

constexpr std::size_t kMinLate = 3;
constexpr double kMinLateShare = 2.0 / 3.0;
constexpr double kMinCostShareOfSpan = 0.01;

Ns median(std::vector<Ns> values) {
  if (values.empty()) return 0;
  std::nth_element(values.begin(), values.begin() + values.size() / 2, values.end());
  return values[values.size() / 2];
}

// Mean over the late collectives of (late rank's window value − median of the others' values).
struct Excess {
  Ns idle = 0;
  Ns compute = 0;
  Ns h2d = 0;
};

Excess excessOf(const std::vector<const Match*>& late, std::size_t row) {
  Excess sum;
  for (const Match* m : late) {
    std::vector<Ns> idle, compute, h2d;
    CollectiveWindow mine;
    for (const auto& [r, c] : m->by_rank) {
      if (r == row) { mine = c->before; continue; }
      idle.push_back(c->before.idle_ns);
      compute.push_back(c->before.compute_ns);
      h2d.push_back(c->before.h2d_ns);
    }
    sum.idle += mine.idle_ns - median(idle);
    sum.compute += mine.compute_ns - median(compute);
    sum.h2d += mine.h2d_ns - median(h2d);
  }
  const Ns n = static_cast<Ns>(late.size());
  return {sum.idle / n, sum.compute / n, sum.h2d / n};
}

std::string reasonOf(const Excess& e) {
  using units::formatDuration;
  if (e.idle > 0 && e.idle >= e.compute) {
    std::string reason = fmt::format(
        "before each late collective its GPU sat idle {} longer than the median rank's: its host "
        "was busy (CPU work between launches, Python, data loading, launch overhead)",
        formatDuration(e.idle));
    if (e.h2d >= kLateSkewNs && 10 * e.h2d >= e.idle) {
      reason += fmt::format("; it also copied host-to-device {} longer (data loading)",
                            formatDuration(e.h2d));
    }
    return reason;
  }
  if (e.compute > 0) {
    return fmt::format("its kernels before each late collective ran {} longer than the median "
                       "rank's (more work on this rank, a slower or throttled GPU)",
                       formatDuration(e.compute));
  }
  return "nothing in its own timeline explains it (no more idle or compute time than the other "
         "ranks): look at its link, or at the rank it waits on";
}

// The five largest skews the late rank caused, in time order, as evidence.
std::vector<Evidence> evidenceOf(const std::vector<RankTimeline>& ranks,
                                 const std::vector<RankRow>& rows, std::vector<const Match*> mine,
                                 std::size_t row) {
  std::stable_sort(mine.begin(), mine.end(),
                   [](const Match* a, const Match* b) { return a->skew > b->skew; });
  if (mine.size() > 5) mine.resize(5);
  std::stable_sort(mine.begin(), mine.end(),
                   [](const Match* a, const Match* b) { return a->first_start < b->first_start; });
  std::vector<Evidence> evidence;
  for (const Match* m : mine) {
    const auto it = std::find_if(m->by_rank.begin(), m->by_rank.end(),
                                 [&](const auto& p) { return p.first == row; });
    Evidence e;
    e.api = it->second->type;
    e.stream_id = ranks[row].streams[m->stream].stream_id;
    e.time = it->second->start;
    e.detail = fmt::format("collective {} of communication stream {}: started {} after rank {}",
                           m->sequence + 1, m->stream + 1, units::formatDuration(m->skew),
                           rows[m->first_row].rank);
    evidence.push_back(std::move(e));
  }
  return evidence;
}

}  // namespace

std::optional<Finding> findRankStraggler(const std::vector<RankTimeline>& ranks,
                                         const std::vector<RankRow>& rows,
                                         const std::vector<Match>& matches) {
  std::vector<const Match*> late;
  std::map<std::size_t, std::vector<const Match*>> late_by_row;
  for (const Match& m : matches) {
    if (m.skew < kLateSkewNs) continue;
    late.push_back(&m);
    late_by_row[m.last_row].push_back(&m);
  }
  if (late.empty()) return std::nullopt;
  const auto worst = std::max_element(
      late_by_row.begin(), late_by_row.end(),
      [](const auto& a, const auto& b) { return a.second.size() < b.second.size(); });
  const std::size_t row = worst->first;
  const std::vector<const Match*>& mine = worst->second;
  Ns cost = 0;
  for (const Match* m : mine) cost += m->skew;
  if (mine.size() < kMinLate ||
      static_cast<double>(mine.size()) < kMinLateShare * static_cast<double>(late.size()) ||
      static_cast<double>(cost) < kMinCostShareOfSpan * static_cast<double>(rows[row].span_ns)) {
    return std::nullopt;
  }
  Finding finding;
  finding.id = "rank-straggler";
  finding.device_id = ranks[row].device_id;
  finding.count = mine.size();
  finding.time_ns = cost;
  finding.severity = cost >= rows[row].span_ns / 4 ? Severity::kError : Severity::kWarning;
  finding.summary = fmt::format(
      "rank {} ({}) started {} of {} late collectives last, {} behind the first rank on average; "
      "reason: {}",
      rows[row].rank, ranks[row].path, mine.size(), late.size(),
      units::formatDuration(cost / static_cast<Ns>(mine.size())), reasonOf(excessOf(mine, row)));
  finding.evidence = evidenceOf(ranks, rows, mine, row);
  finding.advice =
      "Make the late rank's step as short as the others': move its extra host work (logging, "
      "checkpointing, metrics, .item() calls) off the step or onto every rank equally, give its "
      "DataLoader more workers and pin_memory=True when it waits for data, and balance uneven "
      "inputs (padding, sequence-length bucketing); check its GPU clocks and link when its own "
      "timeline shows nothing";
  return finding;
}

}  // namespace cuoverlap::job
