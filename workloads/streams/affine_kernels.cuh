// Kernel definitions, in a header so that a translation unit built with a different
// --default-stream launches them itself (a launch binds the default stream of the TU it is in).
#pragma once

#include <cstddef>
#include <cstdint>

#include "affine_work.h"

namespace cuoverlap {

__device__ __forceinline__ std::uint32_t affineSteps(std::uint32_t x, int steps) {
#pragma unroll 4
  for (int s = 0; s < steps; ++s) x = x * kAffineMultiplier + kAffineIncrement;
  return x;
}

__global__ void affineTileKernel(const std::uint32_t* in, std::uint32_t* out, std::size_t n,
                                 int steps);
__global__ void affineJoinKernel(const std::uint32_t* a, const std::uint32_t* b,
                                 std::uint32_t* out, std::size_t n, int steps);

// Inline so each TU that launches it has its own copy, whatever its default stream.
static __global__ void affineProbeKernelLocal(std::uint32_t* out, std::uint32_t seed, int steps) {
  const unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
  out[t] = affineSteps(seed ^ t, steps);
}

}  // namespace cuoverlap
