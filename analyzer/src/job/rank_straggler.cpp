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

#include <fmt/format.h>

#include "cuoverlap/units.h"
#include "job_internal.h"

namespace cuoverlap::job {
namespace {

constexpr std::size_t kMinLate = 3;
constexpr double kMinLateShare = 2.0 / 3.0;
constexpr double kMinCostShareOfSpan = 0.01;

// Median of `values` (the upper one of an even count), reordering them.
Ns median(std::vector<Ns>& values) {
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

}  // namespace

StragglerTally::StragglerTally(std::size_t rows) : rows_(rows) {}

void StragglerTally::add(const Match& match) {
  ++late_;
  Row& row = rows_[match.last_row];
  ++row.late;
  row.cost += match.skew;
  const RankCollective* mine = nullptr;
  const auto excess = [&](Ns CollectiveWindow::*field) {
    scratch_.clear();
    for (const auto& entry : match.by_rank) {
      if (entry.first == match.last_row) mine = entry.second;
      else scratch_.push_back(entry.second->before.*field);
    }
    const Ns others = median(scratch_);
    return mine->before.*field - others;
  };
  row.excess_idle += excess(&CollectiveWindow::idle_ns);
  row.excess_compute += excess(&CollectiveWindow::compute_ns);
  row.excess_h2d += excess(&CollectiveWindow::h2d_ns);
  constexpr std::size_t kExamples = 5;
  if (row.largest.size() == kExamples && row.largest.back().skew >= match.skew) return;
  Example example{match.skew, match.index, match.first_start, match.stream, match.sequence,
                  match.first_row, mine->type};
  const auto at = std::upper_bound(row.largest.begin(), row.largest.end(), match.skew,
                                   [](Ns skew, const Example& e) { return skew > e.skew; });
  row.largest.insert(at, std::move(example));
  if (row.largest.size() > kExamples) row.largest.pop_back();
}

std::optional<Finding> StragglerTally::finding(const std::vector<RankTimeline>& ranks,
                                               const std::vector<RankRow>& rows) const {
  if (late_ == 0) return std::nullopt;
  std::size_t worst = 0;  // the most late matches; the first row on ties
  for (std::size_t r = 1; r < rows_.size(); ++r) {
    if (rows_[r].late > rows_[worst].late) worst = r;
  }
  const Row& mine = rows_[worst];
  if (mine.late < kMinLate ||
      static_cast<double>(mine.late) < kMinLateShare * static_cast<double>(late_) ||
      static_cast<double>(mine.cost) < kMinCostShareOfSpan * static_cast<double>(rows[worst].span_ns)) {
    return std::nullopt;
  }
  const Ns n = static_cast<Ns>(mine.late);
  const Excess excess{mine.excess_idle / n, mine.excess_compute / n, mine.excess_h2d / n};
  Finding finding;
  finding.id = "rank-straggler";
  finding.device_id = ranks[worst].device_id;
  finding.count = mine.late;
  finding.time_ns = mine.cost;
  finding.severity = mine.cost >= rows[worst].span_ns / 4 ? Severity::kError : Severity::kWarning;
  finding.summary = fmt::format(
      "rank {} ({}) started {} of {} late collectives last, {} behind the first rank on average; "
      "reason: {}",
      rows[worst].rank, ranks[worst].path, mine.late, late_, units::formatDuration(mine.cost / n),
      reasonOf(excess));
  // The five largest skews it caused, in time order, as evidence.
  std::vector<Example> examples = mine.largest;
  std::stable_sort(examples.begin(), examples.end(),
                   [](const Example& a, const Example& b) { return a.first_start < b.first_start; });
  for (const Example& x : examples) {
    Evidence e;
    e.api = x.type;
    e.stream_id = ranks[worst].streams[x.stream].stream_id;
    e.time = x.first_start + x.skew;  // its start on the job's axis (the first rank's clock)
    e.detail = fmt::format("collective {} of communication stream {}: started {} after rank {}",
                           x.sequence + 1, x.stream + 1, units::formatDuration(x.skew),
                           rows[x.first_row].rank);
    finding.evidence.push_back(std::move(e));
  }
  finding.advice =
      "Make the late rank's step as short as the others': move its extra host work (logging, "
      "checkpointing, metrics, .item() calls) off the step or onto every rank equally, give its "
      "DataLoader more workers and pin_memory=True when it waits for data, and balance uneven "
      "inputs (padding, sequence-length bucketing); check its GPU clocks and link when its own "
      "timeline shows nothing";
  return finding;
}

}  // namespace cuoverlap::job
