// A synthetic job of many ranks, one trace per rank (SyntheticTrace), for the job analysis and
// rank summaries: 8 ranks per host, each host on its own clock, two communicators (an all-reduce
// each step, an all-gather every other step), rank 17 late for every all-reduce with its GPU idle
// before it, and the last rank missing the last step.
#pragma once

#include <string>
#include <vector>

namespace cuoverlap::testing {

inline constexpr int kSyntheticJobLateRank = 17;

// Writes the job's rank files (named PREFIX_rankN.sqlite in the test's temporary folder) and
// returns their paths, rank 0 first. `world_size` overrides the size written into each file's
// session (0: `ranks`); `host_prefix` names the hosts (HOST_PREFIX0, ...); `time_shift_ns` moves
// every op (another run of the job).
std::vector<std::string> writeSyntheticJob(const std::string& prefix, int ranks, int world_size = 0,
                                           const std::string& host_prefix = "node",
                                           long long time_shift_ns = 0);

}  // namespace cuoverlap::testing
