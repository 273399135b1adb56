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

unsigned launchSaturatingProbe(std::uint32_t* out, std::uint32_t seed, int steps, cudaStream_t stream) {
  int device = 0, sms = 0, shared_optin = 0;
  CUOVERLAP_CUDA_CHECK(cudaGetDevice(&device));
  CUOVERLAP_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  CUOVERLAP_CUDA_CHECK(cudaDeviceGetAttribute(&shared_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  CUOVERLAP_CUDA_CHECK(cudaFuncSetAttribute(affineProbeKernelLocal,
                                            cudaFuncAttributeMaxDynamicSharedMemorySize, shared_optin));
  // One block per SM whose blocks all start and end together: a block only leaves when its
  // last warp does, so a waiting kernel gets in at the end, not as early blocks retire.
  const unsigned blocks = static_cast<unsigned>(sms);
  affineProbeKernelLocal<<<blocks, kSaturatingThreads, static_cast<std::size_t>(shared_optin), stream>>>(
      out, seed, steps);
  CUOVERLAP_CHECK_LAUNCH();
  return blocks;
}

}  // namespace cuoverlap
