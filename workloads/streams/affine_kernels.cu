#include "affine_kernels.cuh"

#include "../common/cuda_check.h"

namespace cuoverlap {

__global__ void affineTileKernel(const std::uint32_t* in, std::uint32_t* out, std::size_t n,
                                 int steps) {
  const std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) out[i] = affineSteps(in[i], steps);
}

__global__ void affineJoinKernel(const std::uint32_t* a, const std::uint32_t* b,
                                 std::uint32_t* out, std::size_t n, int steps) {
  const std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) out[i] = affineSteps(a[i] ^ b[i], steps);
}

__global__ void tinyStepKernel(std::uint32_t* state) {
  state[threadIdx.x] = affineSteps(state[threadIdx.x], 1);
}

namespace {
unsigned blocksFor(std::size_t n) { return static_cast<unsigned>((n + 255) / 256); }
}  // namespace

void launchAffineTile(const std::uint32_t* in, std::uint32_t* out, std::size_t n, int steps,
                      cudaStream_t stream) {
  affineTileKernel<<<blocksFor(n), 256, 0, stream>>>(in, out, n, steps);
  CUOVERLAP_CHECK_LAUNCH();
}

void launchAffineJoin(const std::uint32_t* a, const std::uint32_t* b, std::uint32_t* out,
                      std::size_t n, int steps, cudaStream_t stream) {
  affineJoinKernel<<<blocksFor(n), 256, 0, stream>>>(a, b, out, n, steps);
  CUOVERLAP_CHECK_LAUNCH();
}

void launchAffineProbe(std::uint32_t* out, unsigned blocks, std::uint32_t seed, int steps,
                       cudaStream_t stream) {
  affineProbeKernelLocal<<<blocks, kProbeThreads, 0, stream>>>(out, seed, steps);
  CUOVERLAP_CHECK_LAUNCH();
}

void launchTinyStep(std::uint32_t* state, cudaStream_t stream) {
  tinyStepKernel<<<1, kTinyThreads, 0, stream>>>(state);
  CUOVERLAP_CHECK_LAUNCH();
}

int probeBlocksPerSm() {
  int blocks = 0;
  CUOVERLAP_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, affineProbeKernelLocal,
                                                                     kProbeThreads, 0));
  return blocks;
}

AffineMap composeAffine(int steps) {
  AffineMap map;
  for (int s = 0; s < steps; ++s) {
    map.multiplier *= kAffineMultiplier;
    map.increment = map.increment * kAffineMultiplier + kAffineIncrement;
  }
  return map;
}

}  // namespace cuoverlap
