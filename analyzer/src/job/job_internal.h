// Pieces of the job analysis shared between its files (not part of the public API).
#pragma once

#include <optional>
#include <vector>

#include "cuoverlap/job.h"

namespace cuoverlap::job {

// Matched collectives with their skew shorter than this do not make a rank "late": launch jitter
// and clock resolution (the same 10 µs as the findings' minimum cost).
inline constexpr Ns kLateSkewNs = 10'000;

// One matched collective with every rank's start on the reference clock.
struct Match {
  std::size_t stream = 0;
  std::size_t sequence = 0;
  std::vector<std::pair<std::size_t, const RankCollective*>> by_rank;  // (rank row, collective)
  Ns first_start = 0;
  Ns skew = 0;
  std::size_t first_row = 0;
  std::size_t last_row = 0;
  bool type_mismatch = false;
};

// Collectives matched by order: the k-th collective of the s-th communication stream (streams
// ordered by their first collective) of every rank that has it; at least two ranks per match.
// `offsets` are subtracted from each rank's times.
std::vector<Match> matchCollectives(const std::vector<RankTimeline>& ranks,
                                    const std::vector<Ns>& offsets);

// Per rank, the offset that puts it on the first rank's clock, and the sentence that says how.
std::pair<std::vector<Ns>, std::string> alignClocks(const std::vector<RankTimeline>& ranks);

// rank-straggler over the matches (rows and ranks in the same order).
std::optional<Finding> findRankStraggler(const std::vector<RankTimeline>& ranks,
                                         const std::vector<RankRow>& rows,
                                         const std::vector<Match>& matches);

}  // namespace cuoverlap::job
