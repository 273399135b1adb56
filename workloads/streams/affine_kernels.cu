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

__global__ void affineFoldKernel(const std::uint32_t* in, std::uint32_t* acc, std::size_t n,
                                 int steps) {
  const std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) acc[i] = affineSteps(acc[i] ^ in[i], steps);
}

__global__ void affineProbeMaskedKernel(std::uint32_t* out, std::uint32_t seed, int steps,
                                        const std::uint32_t* mask) {
  const unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
  out[t] = affineSteps(seed ^ t ^ mask[t], steps);
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

void launchAffineFold(const std::uint32_t* in, std::uint32_t* acc, std::size_t n, int steps,
                      cudaStream_t stream) {
  affineFoldKernel<<<blocksFor(n), 256, 0, stream>>>(in, acc, n, steps);
  CUOVERLAP_CHECK_LAUNCH();
}

void launchAffineProbeMasked(std::uint32_t* out, unsigned blocks, std::uint32_t seed, int steps,
                             const std::uint32_t* mask, cudaStream_t stream) {
  affineProbeMaskedKernel<<<blocks, kProbeThreads, 0, stream>>>(out, seed, steps, mask);
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

unsigned launchSaturatingProbe(std::uint32_t* out, std::uint32_t seed, int steps, cudaStream_t stream,
                               bool reserve_shared) {
  int device = 0, sms = 0, shared_optin = 0;
  CUOVERLAP_CUDA_CHECK(cudaGetDevice(&device));
  CUOVERLAP_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  CUOVERLAP_CUDA_CHECK(cudaDeviceGetAttribute(&shared_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  if (reserve_shared) {
    CUOVERLAP_CUDA_CHECK(cudaFuncSetAttribute(affineProbeKernelLocal,
                                              cudaFuncAttributeMaxDynamicSharedMemorySize, shared_optin));
  }
  // One block per SM whose blocks all start and end together: a block only leaves when its
  // last warp does, so a waiting kernel gets in at the end, not as early blocks retire.
  // Without the reservation a block holds half an SM's threads and no shared memory, so a small
  // kernel's block fits beside it.
  const unsigned blocks = static_cast<unsigned>(sms);
  const std::size_t shared = reserve_shared ? static_cast<std::size_t>(shared_optin) : 0;
  affineProbeKernelLocal<<<blocks, kSaturatingThreads, shared, stream>>>(
      out, seed, steps);
  CUOVERLAP_CHECK_LAUNCH();
  return blocks;
}

}  // namespace cuoverlap
