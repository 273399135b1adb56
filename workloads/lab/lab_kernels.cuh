// The lab's one kernel (docs/lab.md, `kernel` step): each block reads and writes its share of a
// buffer, then spins for `us`. Host code calls the launcher only.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

namespace cuoverlap::lab {

// Launches grid x block threads on `stream`; they touch the first `touch_bytes` of `buffer`
// (4-byte words, grid-stride: a managed buffer faults in page by page), then each block spins on
// %globaltimer for `us` microseconds. A block lasts touch time + us; a kernel, that times the
// waves its grid needs. Returns the launch error.
cudaError_t launchTouchSpin(cudaStream_t stream, std::int64_t grid, std::int64_t block, double us,
                            void* buffer, std::uint64_t touch_bytes);

}  // namespace cuoverlap::lab
