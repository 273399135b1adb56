// Device memory in use over time, from a trace's allocations and frees (Trace::memory_events:
// CUDA_GPU_MEMORY_USAGE_EVENTS), as the timelines draw it.
#pragma once

#include <cstdint>
#include <vector>

#include "cuoverlap/model.h"

namespace cuoverlap {

// After each event at `time`, the device memory allocated on the device.
struct MemoryInUse {
  Ns time = 0;
  std::uint64_t bytes = 0;
};

// The steps of `device_id`'s device memory allocated (cudaMalloc and kin, every process), one per
// time with an allocation or free of it, in time order; empty without memory events. A free of
// more than the total (its allocation not recorded) leaves 0.
std::vector<MemoryInUse> deviceMemoryInUse(const Trace& trace, std::uint16_t device_id);

}  // namespace cuoverlap
