// single-stream in programs whose host threads each issue their own loop (single_stream.cpp;
// docs/findings.md, single-stream, "Threads' own streams"):
//   - threadsOwnWork: the legacy default stream's work cut per thread where several threads
//     share it, so that each thread's loop there is a stream of work of its own (the fix splits
//     one thread's loop; the other threads' work stays on the legacy stream);
//   - splitBarriers: the legacy stream's implicit barriers in the split's what-if, both schedules.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "diagnosis/device_view.h"
#include "diagnosis/schedule_estimate.h"

namespace cuoverlap::diagnosis {

// `keys` (workStreams') with each op of a legacy default stream that several threads issued to
// keyed by its stream and its thread: one thread's loop on the shared stream is what its split
// moves to created streams. Keys of other streams are unchanged.
std::vector<std::uint64_t> threadsOwnWork(const DeviceView& view, std::vector<std::uint64_t> keys);

// Per key of `keys` (threadsOwnWork's), the key of `stream_keys` (workStreams') its ops have: the
// stream a thread's work ran on.
std::unordered_map<std::uint64_t, std::uint64_t> streamOfWork(const std::vector<std::uint64_t>& keys,
                                                              const std::vector<std::uint64_t>& stream_keys);

// The legacy stream's barriers in the schedule before the split (`lanes` empty: each op on its
// stream) or after it (op p on lane `lanes[p]`): an op on the legacy stream waits for the earlier
// work of every blocking stream of its context, and their later work waits for it. The split's
// lanes of a blocking or legacy stream's work are created blocking streams (the lab's multi-stream
// keeps the barriers: cudaStreamCreate), those of a non-blocking or per-thread stream's work are
// not. `split_blocking`: the split stream is legacy or blocking.
std::vector<OrderEdge> splitBarriers(const DeviceView& view, const std::vector<std::uint64_t>& lanes,
                                     bool split_blocking);

// Whether the ops of `stream` (by `keys`) ran on the legacy stream or a blocking created one.
bool blockingWork(const DeviceView& view, const std::vector<std::uint64_t>& keys, std::uint64_t stream);

}  // namespace cuoverlap::diagnosis
