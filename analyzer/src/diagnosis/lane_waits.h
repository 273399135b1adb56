// The stream waits of a fix that moves ops to other streams (a "lane": per position in
// view.ops(), the stream key an op runs on in the fix). A cudaEventRecord stands for the work its
// stream held when it was submitted, and a cudaStreamWaitEvent holds back the work launched onto
// its stream after it: with ops moved, a wait's event stands for the last op of the record
// stream's lane submitted before it (as streamWaits resolves a record), and the wait holds the
// first op launched after the wait call on the waiting stream's lane. The lab's g000315 (sync-memcpy): `cudaMemcpy` between a
// kernel of s0 and an event recorded on s0, then a wait of s1 and a `cudaMemcpy` before s1's
// kernel; the recorded edge is s0's kernel -> s1's kernel, and the fix (`cudaMemcpyAsync` on s0
// and s1) orders s1's upload after s0's download (measured: 0.89 -> 0.90 ms), which the recorded
// edge does not.
#pragma once

#include <cstdint>
#include <vector>

#include "diagnosis/stream_waits.h"

namespace cuoverlap::diagnosis {

// Y' -> X' for every wait resolved from CUDA event records (StreamWait::exact), re-resolved on
// `lane`; a wait resolved from timestamps keeps its edges. A re-resolved edge keeps the wait's
// release lag where its engines are those of the recorded edge, else takes the view's median for
// its engine pair (as streamWaits does). Cost: O(w log n) after an O(n log n) index.
std::vector<OrderEdge> waitEdgesOnLanes(const DeviceView& view, const std::vector<StreamWait>& waits,
                                        const std::vector<std::uint64_t>& lane);

}  // namespace cuoverlap::diagnosis
