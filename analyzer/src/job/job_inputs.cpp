// Whether the ranks given to one job analysis are one job. Summaries travel between machines and
// get gathered by hand, so that a rank summarized twice, or a summary left from another run, is
// easy to mix in; analyzed anyway, they would match the wrong collectives and report skews that
// never happened.
#include <fmt/format.h>

#include <map>
#include <tuple>

#include "cuoverlap/error.h"
#include "job_internal.h"

namespace cuoverlap::job {
namespace {

const std::string& fileOf(const RankTimeline& rank, const std::vector<std::string>& files) {
  return rank.file_index < files.size() ? files[rank.file_index] : rank.path;
}

void checkDistinct(const std::vector<RankTimeline>& ranks, const std::vector<std::string>& files) {
  std::map<std::int32_t, const RankTimeline*> by_rank;
  std::map<std::tuple<std::string, std::uint32_t, Ns>, const RankTimeline*> by_process;
  for (const RankTimeline& rank : ranks) {
    const RankTimeline* seen = nullptr;
    if (rank.rank) {
      const auto [it, inserted] = by_rank.emplace(*rank.rank, &rank);
      if (!inserted) seen = it->second;
    }
    const auto [it, inserted] =
        by_process.emplace(std::make_tuple(rank.host, rank.pid, rank.metrics.first_start), &rank);
    if (!inserted && seen == nullptr) seen = it->second;
    if (seen != nullptr) {
      throw UserError(fmt::format("{} and {} hold the same rank ({}pid {} on host '{}'): give each "
                                  "rank once",
                                  fileOf(*seen, files), fileOf(rank, files),
                                  rank.rank ? fmt::format("rank {}, ", *rank.rank) : "", rank.pid,
                                  rank.host));
    }
  }
}

void checkWorldSizes(const std::vector<RankTimeline>& ranks, const std::vector<std::string>& files) {
  const RankTimeline* first = nullptr;
  for (const RankTimeline& rank : ranks) {
    if (!rank.world_size) continue;
    if (first == nullptr) { first = &rank; continue; }
    if (*rank.world_size != *first->world_size) {
      throw UserError(fmt::format("ranks of two jobs: {} ran in a job of {} ranks, {} in one of {}",
                                  fileOf(*first, files), *first->world_size, fileOf(rank, files),
                                  *rank.world_size));
    }
  }
}

// Ranks of one host share its clock, and ranks that ran collectives together ran at the same
// time (a collective ends on every rank at once). Only those: a process without collectives (the
// launcher, a helper that touched CUDA, ranks that never communicate) may run at any time.
bool communicates(const RankTimeline& rank) { return !rank.host.empty() && !rank.streams.empty(); }

void checkOverlapInTime(const std::vector<RankTimeline>& ranks, const std::vector<std::string>& files) {
  std::map<std::string, const RankTimeline*> earliest_end;
  for (const RankTimeline& rank : ranks) {
    if (!communicates(rank)) continue;
    const RankTimeline*& other = earliest_end[rank.host];
    if (other == nullptr || rank.metrics.last_end < other->metrics.last_end) other = &rank;
  }
  for (const RankTimeline& rank : ranks) {
    if (!communicates(rank)) continue;
    const auto it = earliest_end.find(rank.host);
    if (it == earliest_end.end() || rank.metrics.first_start <= it->second->metrics.last_end) continue;
    throw UserError(fmt::format("ranks of two jobs: {} and {} ran on host '{}' at different times "
                                "(one ended before the other began)",
                                fileOf(*it->second, files), fileOf(rank, files), rank.host));
  }
}

}  // namespace

void checkOneJob(const std::vector<RankTimeline>& ranks, const std::vector<std::string>& files) {
  checkDistinct(ranks, files);
  checkWorldSizes(ranks, files);
  checkOverlapInTime(ranks, files);
}

}  // namespace cuoverlap::job
