// Pieces of the job analysis shared between its files (not part of the public API).
#pragma once

#include <functional>
#include <optional>
#include <vector>

#include "cuoverlap/job.h"

namespace cuoverlap::job {

// Matched collectives with their skew shorter than this do not make a rank "late": launch jitter
// and clock resolution (the same 10 µs as the findings' minimum cost).
inline constexpr Ns kLateSkewNs = 10'000;

// One matched collective with every rank's start on the reference clock. `type` and `by_rank`
// point into the slice being read: valid only during the visit.
struct Match {
  std::size_t index = 0;  // in match order: streams, then sequence numbers
  std::size_t stream = 0;
  std::size_t sequence = 0;
  std::size_t ranks = 0;                  // ranks that ran it
  const std::string* type = nullptr;      // the type on the first of them (lowest row)
  // (rank row, collective), filled for late matches only (skew >= kLateSkewNs: rank-straggler's)
  std::vector<std::pair<std::size_t, const RankCollective*>> by_rank;
  Ns first_start = 0;
  Ns skew = 0;
  std::size_t first_row = 0;
  std::size_t last_row = 0;
  bool type_mismatch = false;
};

// What the job analysis does with each collective as the ranks' collectives stream past.
struct CollectiveVisitor {
  std::function<void(const Match&)> match;  // every match, in order
  // Every collective, a rank's slice of sequence numbers at a time: not in time order.
  std::function<void(std::size_t row, const RankCollective* collectives, std::size_t count)> slice;
};

// Collectives matched by order: the k-th collective of the s-th communication stream (streams
// ordered by their first collective) of every rank that has it; at least two ranks per match.
// `offsets` are subtracted from each rank's times. Reads every rank's collectives in slices of
// sequence numbers (from memory, or through RankTimeline::reader), so that memory holds one
// slice of every rank.
void visitCollectives(const std::vector<RankTimeline>& ranks, const std::vector<Ns>& offsets,
                      const CollectiveVisitor& visitor);

// Per rank, the offset that puts it on the first rank's clock, and the sentence that says how.
std::pair<std::vector<Ns>, std::string> alignClocks(const std::vector<RankTimeline>& ranks);

// The ranks of summaries (any input a summary) must be one job, each rank once: two summaries of
// one rank (the same launcher rank, or the same host, pid and first op), ranks of different world
// sizes, or ranks of one host that ran collectives but never at the same time are a UserError
// naming the files.
void checkOneJob(const std::vector<RankTimeline>& ranks, const std::vector<std::string>& files);

// rank-straggler, tallied one late match at a time (rows and ranks in the same order): per rank,
// its late matches, their cost, its excess over the others' windows and its five largest skews.
class StragglerTally {
 public:
  explicit StragglerTally(std::size_t rows);
  void add(const Match& match);  // a match with skew >= kLateSkewNs
  std::optional<Finding> finding(const std::vector<RankTimeline>& ranks,
                                 const std::vector<RankRow>& rows) const;

 private:
  struct Example {  // one late match, as evidence
    Ns skew = 0;
    std::size_t index = 0;
    Ns first_start = 0;
    std::size_t stream = 0;
    std::size_t sequence = 0;
    std::size_t first_row = 0;
    std::string type;
  };
  struct Row {
    std::uint64_t late = 0;
    Ns cost = 0;
    Ns excess_idle = 0;     // sum over its late matches of (its window - median of the others')
    Ns excess_compute = 0;
    Ns excess_h2d = 0;
    std::vector<Example> largest;  // up to 5, largest skew first (match order on ties)
  };
  std::vector<Row> rows_;
  std::uint64_t late_ = 0;
  std::vector<Ns> scratch_;
};

}  // namespace cuoverlap::job
