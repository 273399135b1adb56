// Shared by the kernel-only scenarios (null-stream trap, non-blocking, per-thread): rounds of
// three probe kernels, s1 -> other stream -> s1, results written to mapped host memory so that no
// copy enters the trace.
#pragma once

#include <cstdint>
#include <functional>

#include <cuda_runtime_api.h>

#include "scenario.h"

namespace cuoverlap {

// Launches one probe kernel on the scenario's "other" stream.
using ProbeLauncher = std::function<void(std::uint32_t* out, unsigned blocks, std::uint32_t seed, int steps)>;

// s1 is created by the caller (blocking or not); `other` is where `launch_other` puts its kernels,
// used here only to record the end event.
ScenarioResult runProbeTriplets(const ScenarioOptions& options, cudaStream_t s1,
                                cudaStream_t other, const ProbeLauncher& launch_other);

// Blocks of a probe kernel that leave room for others: a quarter of the SMs.
unsigned smallProbeBlocks();

// Seed of probe kernel `index`, and the check of its results in out[index * threads ...], where
// `threads` is each kernel's total thread count.
std::uint32_t probeSeed(std::size_t index);
bool verifyProbes(const std::uint32_t* out, std::size_t kernels, std::size_t threads, int steps);

}  // namespace cuoverlap
