// Waiting for a late peer is skew, not communication. A collective starts on each rank when that
// rank launches it, and completes on all of them together, so a rank that starts it early spends
// its first part waiting for the last rank to arrive: on its own timeline that wait looks like an
// exposed collective, but no overlap on that rank would hide it, and the time is the late rank's
// (rank-straggler's cost is the sum of those skews). So for each matched collective with a skew of
// at least 10 µs, every rank but the last has waited W = the last rank's start − its own start
// (on the job's time axis), and the exposed part of its collective's first W ns (its exposed
// pieces, RankCollective::exposed) is its **peer wait**. The job analysis tallies it per rank,
// over the whole run and over the rank's steady-state window, and leaves it out of that rank's
// exposed-communication finding: the finding counts E − peer wait (and fires only if that still
// reaches its 5% of the span), scaled by the same overlap efficiency, its ledger share scaled
// alike, the device's explained time lowered by what it gives up. Definitions: docs/findings.md
// (exposed-communication) and docs/metrics.md ("Several ranks as one job").
#pragma once

#include <vector>

#include "cuoverlap/job.h"
#include "job_internal.h"

namespace cuoverlap::job {

// |exposed pieces of `collective` ∩ [its start, its start + wait)|.
Ns exposedWithin(const RankCollective& collective, Ns wait);

// Per rank row, its peer wait (whole run and steady state), a late match at a time.
class PeerWaitTally {
 public:
  PeerWaitTally(const std::vector<RankTimeline>& ranks, const std::vector<Ns>& offsets,
                std::vector<RankRow>& rows)
      : ranks_(ranks), offsets_(offsets), rows_(rows) {}
  void add(const Match& match);  // a match with skew >= kLateSkewNs (by_rank filled)

 private:
  const std::vector<RankTimeline>& ranks_;
  const std::vector<Ns>& offsets_;
  std::vector<RankRow>& rows_;
};

// Leaves each rank's peer wait out of the exposed-communication finding of its device in the
// report of its file (whole run and steady state), as above. Needs report.job.
void discountPeerWaits(Report& report);

}  // namespace cuoverlap::job
