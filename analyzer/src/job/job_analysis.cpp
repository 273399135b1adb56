// The job analysis: ranks numbered (the launcher's RANK where every rank has a distinct one, else
// by file order then pid), put on one time axis, their collectives matched, skews summarized and
// rank-straggler evaluated. Definitions: docs/metrics.md, "Several ranks as one job".
#include <algorithm>
#include <numeric>
#include <set>

#include "job_internal.h"

namespace cuoverlap {
namespace {

constexpr std::size_t kLargestSkews = 10;

bool distinctLauncherRanks(const std::vector<RankTimeline>& ranks) {
  std::set<std::int32_t> seen;
  for (const RankTimeline& rank : ranks) {
    if (!rank.rank || !seen.insert(*rank.rank).second) return false;
  }
  return true;
}

RankRow rowOf(const RankTimeline& rank, std::int32_t number, bool from_launcher) {
  RankRow row;
  row.rank = number;
  row.rank_from_launcher = from_launcher;
  row.path = rank.path;
  row.pid = rank.pid;
  row.host = rank.host;
  row.device_id = rank.device_id;
  const DeviceMetrics& m = rank.metrics;
  row.span_ns = m.span_ns;
  row.compute_ns = m.engines.at(static_cast<std::size_t>(Engine::kCompute)).busy_ns;
  row.comm_busy_ns = m.communication.busy_ns;
  row.comm_exposed_ns = m.communication.exposed_ns;
  row.idle_ns = m.idle_ns;
  for (const RankStream& stream : rank.streams) row.collectives += stream.collectives.size();
  return row;
}

void summarizeSkews(const std::vector<job::Match>& matches, JobAnalysis& job) {
  Ns total = 0;
  for (const job::Match& m : matches) {
    job.max_skew_ns = std::max(job.max_skew_ns, m.skew);
    job.skews.emplace_back(m.first_start, m.skew);
    total += m.skew;
    job.type_mismatches += m.type_mismatch ? 1 : 0;
    if (m.skew >= job::kLateSkewNs) ++job.ranks[m.last_row].arrived_last;
  }
  std::sort(job.skews.begin(), job.skews.end());
  job.matched = matches.size();
  job.mean_skew_ns = matches.empty() ? 0 : total / static_cast<Ns>(matches.size());
  std::vector<const job::Match*> largest;
  for (const job::Match& m : matches) largest.push_back(&m);
  std::stable_sort(largest.begin(), largest.end(), [](auto* a, auto* b) { return a->skew > b->skew; });
  if (largest.size() > kLargestSkews) largest.resize(kLargestSkews);
  std::stable_sort(largest.begin(), largest.end(),
                   [](auto* a, auto* b) { return a->first_start < b->first_start; });
  for (const job::Match* m : largest) {
    job.largest_skews.push_back({m->stream, m->sequence, m->by_rank.front().second->type,
                                 m->by_rank.size(), m->first_start, m->skew,
                                 job.ranks[m->first_row].rank, job.ranks[m->last_row].rank});
  }
}

// Each rank's collectives on the job's axis, merged at 1/1500 of the job's length.
void drawableBlocks(const std::vector<RankTimeline>& ranks, JobAnalysis& job) {
  constexpr Ns kBlocks = 1500;
  Ns begin = 0, end = 0;
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    RankRow& row = job.ranks[i];
    row.first_start = ranks[i].metrics.first_start - job.clock_offsets[i];
    row.last_end = ranks[i].metrics.last_end - job.clock_offsets[i];
    begin = i == 0 ? row.first_start : std::min(begin, row.first_start);
    end = i == 0 ? row.last_end : std::max(end, row.last_end);
  }
  const Ns resolution = std::max<Ns>(1, (end - begin) / kBlocks);
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    std::vector<std::pair<Ns, Ns>> intervals;
    for (const RankStream& stream : ranks[i].streams) {
      for (const RankCollective& c : stream.collectives) {
        intervals.emplace_back(c.start - job.clock_offsets[i], c.end - job.clock_offsets[i]);
      }
    }
    std::sort(intervals.begin(), intervals.end());
    auto& blocks = job.ranks[i].communication_blocks;
    for (const auto& iv : intervals) {
      if (!blocks.empty() && iv.first <= blocks.back().second + resolution) {
        blocks.back().second = std::max(blocks.back().second, iv.second);
      } else {
        blocks.push_back(iv);
      }
    }
  }
}

}  // namespace

std::optional<JobAnalysis> analyzeJob(std::vector<RankTimeline> ranks) {
  const auto communicating = std::count_if(ranks.begin(), ranks.end(),
                                           [](const RankTimeline& r) { return !r.streams.empty(); });
  if (communicating < 2) return std::nullopt;
  const bool from_launcher = distinctLauncherRanks(ranks);
  std::stable_sort(ranks.begin(), ranks.end(), [&](const RankTimeline& a, const RankTimeline& b) {
    if (from_launcher) return *a.rank < *b.rank;
    return a.file_index != b.file_index ? a.file_index < b.file_index : a.pid < b.pid;
  });
  JobAnalysis job;
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    job.ranks.push_back(rowOf(ranks[i], from_launcher ? *ranks[i].rank : static_cast<std::int32_t>(i),
                              from_launcher));
  }
  std::tie(job.clock_offsets, job.clock) = job::alignClocks(ranks);
  const std::vector<job::Match> matches = job::matchCollectives(ranks, job.clock_offsets);
  summarizeSkews(matches, job);
  drawableBlocks(ranks, job);
  if (auto finding = job::findRankStraggler(ranks, job.ranks, matches)) {
    job.findings.push_back(std::move(*finding));
  }
  return job;
}

}  // namespace cuoverlap
