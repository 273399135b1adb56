#include "lab_kernels.cuh"

namespace cuoverlap::lab {
namespace {

// %globaltimer: nanoseconds, independent of the SM clock (which boosts and throttles).
__device__ __forceinline__ unsigned long long globalTimerNs() {
  unsigned long long ns;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns));
  return ns;
}

__global__ void touchSpinKernel(unsigned* words, unsigned long long count, unsigned long long spin_ns) {
  unsigned long long stride = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
  for (unsigned long long i = static_cast<unsigned long long>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < count; i += stride)
    words[i] = words[i] * 3u + 1u;
  // The spin starts once the whole block has touched its share, so that touching (and faulting
  // managed pages in) adds to `us` rather than hiding inside it.
  __shared__ unsigned long long spin_start;
  __syncthreads();
  if (threadIdx.x == 0) spin_start = globalTimerNs();
  __syncthreads();
  while (globalTimerNs() - spin_start < spin_ns) {
  }
}

}  // namespace

cudaError_t launchTouchSpin(cudaStream_t stream, std::int64_t grid, std::int64_t block, double us,
                            void* buffer, std::uint64_t touch_bytes) {
  unsigned long long words = buffer ? touch_bytes / sizeof(unsigned) : 0;
  auto spin_ns = static_cast<unsigned long long>(us * 1000.0);
  touchSpinKernel<<<dim3(static_cast<unsigned>(grid)), dim3(static_cast<unsigned>(block)), 0, stream>>>(
      static_cast<unsigned*>(buffer), words, spin_ns);
  return cudaGetLastError();
}

}  // namespace cuoverlap::lab
