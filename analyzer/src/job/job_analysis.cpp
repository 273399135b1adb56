// The job analysis: ranks numbered (the launcher's RANK where every rank has a distinct one, else
// by file order then pid), put on one time axis, their collectives matched, skews summarized and
// rank-straggler evaluated. Definitions: docs/metrics.md, "Several ranks as one job".
#include <algorithm>
#include <numeric>
#include <set>

#include "job_internal.h"
#include "peer_wait.h"

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
  row.file_index = rank.file_index;
  const DeviceMetrics& m = rank.metrics;
  row.span_ns = m.span_ns;
  row.compute_ns = m.engines.at(static_cast<std::size_t>(Engine::kCompute)).busy_ns;
  row.comm_busy_ns = m.communication.busy_ns;
  row.comm_exposed_ns = m.communication.exposed_ns;
  row.idle_ns = m.idle_ns;
  for (const RankStream& stream : rank.streams) row.collectives += stream.count;
  return row;
}

// The job's skew numbers, a match at a time: the largest kLargestSkews by skew, shown largest
// first (match order on ties), as a reader looking for the worst collective scans them.
class SkewTally {
 public:
  explicit SkewTally(JobAnalysis& job) : job_(job) {}

  void add(const job::Match& m) {
    job_.max_skew_ns = std::max(job_.max_skew_ns, m.skew);
    job_.skews.emplace_back(m.first_start, m.skew);
    total_ += m.skew;
    job_.type_mismatches += m.type_mismatch ? 1 : 0;
    if (m.skew >= job::kLateSkewNs) ++job_.ranks[m.last_row].arrived_last;
    ++job_.matched;
    if (largest_.size() == kLargestSkews && largest_.back().first.skew_ns >= m.skew) return;
    MatchedCollective c{m.stream, m.sequence, *m.type, m.ranks,
                        m.first_start, m.skew, job_.ranks[m.first_row].rank,
                        job_.ranks[m.last_row].rank};
    const auto at = std::upper_bound(largest_.begin(), largest_.end(), m.skew,
                                     [](Ns skew, const auto& e) { return skew > e.first.skew_ns; });
    largest_.insert(at, {std::move(c), m.index});
    if (largest_.size() > kLargestSkews) largest_.pop_back();
  }

  void finish() {
    std::sort(job_.skews.begin(), job_.skews.end());
    job_.mean_skew_ns = job_.matched == 0 ? 0 : total_ / static_cast<Ns>(job_.matched);
    std::sort(largest_.begin(), largest_.end(), [](const auto& a, const auto& b) {
      return a.first.skew_ns != b.first.skew_ns ? a.first.skew_ns > b.first.skew_ns : a.second < b.second;
    });
    for (auto& entry : largest_) job_.largest_skews.push_back(std::move(entry.first));
  }

 private:
  JobAnalysis& job_;
  Ns total_ = 0;
  std::vector<std::pair<MatchedCollective, std::size_t>> largest_;  // (collective, match index)
};

// Each rank's collectives on the job's axis, merged at 1/1500 of the job's length, as they stream
// past in any order: blocks stay sorted and more than `resolution_` apart; a collective joins
// every block within `resolution_` of it (the same blocks as merging them sorted by start).
class BlockTally {
 public:
  BlockTally(const std::vector<RankTimeline>& ranks, JobAnalysis& job) : job_(job) {
    constexpr Ns kBlocks = 1500;
    Ns begin = 0, end = 0;
    for (std::size_t i = 0; i < ranks.size(); ++i) {
      RankRow& row = job.ranks[i];
      row.first_start = ranks[i].metrics.first_start - job.clock_offsets[i];
      row.last_end = ranks[i].metrics.last_end - job.clock_offsets[i];
      begin = i == 0 ? row.first_start : std::min(begin, row.first_start);
      end = i == 0 ? row.last_end : std::max(end, row.last_end);
    }
    resolution_ = std::max<Ns>(1, (end - begin) / kBlocks);
  }

  void add(std::size_t row, const RankCollective* collectives, std::size_t count) {
    auto& blocks = job_.ranks[row].communication_blocks;
    const Ns offset = job_.clock_offsets[row];
    for (std::size_t i = 0; i < count; ++i) {
      add(blocks, {collectives[i].start - offset, collectives[i].end - offset});
    }
  }

 private:
  void add(std::vector<std::pair<Ns, Ns>>& blocks, const std::pair<Ns, Ns>& iv) const {
    if (blocks.empty() || iv.first >= blocks.back().first) {  // in start order: the usual case
      if (!blocks.empty() && iv.first <= blocks.back().second + resolution_) {
        blocks.back().second = std::max(blocks.back().second, iv.second);
      } else {
        blocks.push_back(iv);
      }
      return;
    }
    const auto lo = std::lower_bound(blocks.begin(), blocks.end(), iv.first, [&](const auto& b, Ns t) {
      return b.second + resolution_ < t;
    });
    const auto hi = std::upper_bound(lo, blocks.end(), iv.second, [&](Ns t, const auto& b) {
      return t + resolution_ < b.first;
    });
    if (lo == hi) {
      blocks.insert(lo, iv);
      return;
    }
    const std::pair<Ns, Ns> merged{std::min(lo->first, iv.first),
                                   std::max(std::prev(hi)->second, iv.second)};
    const auto at = blocks.erase(lo, hi);
    blocks.insert(at, merged);
  }

  JobAnalysis& job_;
  Ns resolution_ = 1;
};

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
  SkewTally skews(job);
  BlockTally blocks(ranks, job);
  job::StragglerTally straggler(ranks.size());
  job::PeerWaitTally peer_waits(ranks, job.clock_offsets, job.ranks);
  job::CollectiveVisitor visitor;
  visitor.slice = [&](std::size_t row, const RankCollective* collectives, std::size_t count) {
    blocks.add(row, collectives, count);
  };
  visitor.match = [&](const job::Match& m) {
    skews.add(m);
    if (m.skew >= job::kLateSkewNs) {
      straggler.add(m);
      peer_waits.add(m);
    }
  };
  job::visitCollectives(ranks, job.clock_offsets, visitor);
  skews.finish();
  if (auto finding = straggler.finding(ranks, job.ranks)) job.findings.push_back(std::move(*finding));
  return job;
}

}  // namespace cuoverlap
