// One part of a multi-process trace as a trace of its own: the rows of some processes, with
// everything shared (strings, devices, the session) kept. Used to export one file per rank.
#pragma once

#include <cstdint>
#include <map>
#include <set>

#include "cuoverlap/model.h"

namespace cuoverlap {

// The processes of each rank (Trace::processes with a rank; a DataLoader worker inherits its
// rank's RANK and goes with it). Processes without a rank (torchrun's launcher) are in none.
std::map<std::int32_t, std::set<std::uint32_t>> processesByRank(const Trace& trace);

// The trace restricted to `pids`: ops, API calls, syncs, event records, NVTX ranges, streams,
// contexts and process rows of those processes, in the same order.
Trace sliceProcesses(const Trace& trace, const std::set<std::uint32_t>& pids);

// The trace restricted to [from, to): GPU ops, API calls, syncs and NVTX ranges that start in it
// (as a profiler whose schedule recorded only that stretch would hold them).
Trace sliceTime(const Trace& trace, Ns from, Ns to);

}  // namespace cuoverlap
