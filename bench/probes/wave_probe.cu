// Wave probe (docs/findings.md, "How many blocks a wave really holds"): how long one, half and two
// nominal waves (the device limits' resident blocks x SMs) of a 100 us spin kernel take, with each
// thread's own start in a register, and with thread 0's start shared after __syncthreads.
//   nvcc -O2 -arch=sm_90 -o wave_probe bench/probes/wave_probe.cu && ./wave_probe
#include <cstdio>
#include <cuda_runtime.h>
__device__ __forceinline__ unsigned long long gt() { unsigned long long t; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); return t; }
__global__ void noShared(unsigned long long ns) { unsigned long long s = gt(); while (gt() - s < ns) {} }
__global__ void withShared(unsigned long long ns) {
  __shared__ unsigned long long s0; __syncthreads(); if (threadIdx.x == 0) s0 = gt(); __syncthreads();
  while (gt() - s0 < ns) {} }
__global__ void withSharedCarve(unsigned long long ns) {
  __shared__ unsigned long long s0; __syncthreads(); if (threadIdx.x == 0) s0 = gt(); __syncthreads();
  while (gt() - s0 < ns) {} }
template <typename K> float run(K k, int grid, int block) {
  cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
  k<<<grid, block>>>(100000); cudaDeviceSynchronize();
  float best = 1e9;
  for (int r = 0; r < 3; ++r) { cudaEventRecord(a); k<<<grid, block>>>(100000); cudaEventRecord(b); cudaEventSynchronize(b);
    float ms; cudaEventElapsedTime(&ms, a, b); if (ms < best) best = ms; }
  return best * 1000;
}
int main() {
  cudaFuncSetAttribute(withSharedCarve, cudaFuncAttributePreferredSharedMemoryCarveout, 100);
  int res; cudaDeviceGetAttribute(&res, cudaDevAttrReservedSharedMemoryPerBlock, 0);
  printf("reserved smem per block %d\n", res);
  int blocks[] = {128, 256, 512, 1024};
  for (int b : blocks) {
    int sms = 0; cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
    int per_sm = 2048 / b, g1 = sms * per_sm, occ[3];
    cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ[0], noShared, b, 0);
    cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ[1], withShared, b, 0);
    cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ[2], withSharedCarve, b, 0);
    for (int g : {g1 / 2, g1, 2 * g1})
      printf("block %4d grid %5d (model waves %.1f): noShared %6.1f us  withShared %6.1f  carve100 %6.1f   occ %d %d %d\n", b, g,
             (double)g / g1, run(noShared, g, b), run(withShared, g, b), run(withSharedCarve, g, b), occ[0], occ[1], occ[2]);
  }
}
