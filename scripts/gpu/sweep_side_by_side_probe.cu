// Few-block memory sweeps side by side: where their blocks land and how much longer they run.
//
//   sweep_side_by_side_probe [MiB ...]
//
// Each kernel is the lab's touch loop (workloads/lab/lab_kernels.cu, without the spin): GRID blocks
// of 256 threads read-modify-write every word of their own buffer once, a latency-bound sweep when
// the blocks are few. For each buffer size (MiB; default 3.41 10 20 30 48), grid (1, 2, 8) and
// count of kernels launched at once on their own non-blocking streams (1, 2, 4), each over a buffer
// of its own, the table gives the median over 5 repetitions (after one warm-up) of each kernel's
// time from its first block's start to its last block's end (%globaltimer), their mean, that mean
// against the same kernel alone, and the SMs each kernel's blocks ran on in the last repetition
// (%smid; kernels separated by '/'). It asks what
// the split's what-if (docs/findings.md, single-stream) has to assume of lanes whose few-block
// kernels sweep buffers of their own at once: do they share SMs, and when does their memory stop
// fitting the L2 (docs/findings.md, "Forty-sixth session"). Exit 0; 1 on a CUDA error.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <cuda_runtime.h>

namespace {

__device__ __forceinline__ unsigned long long globalTimerNs() {
  unsigned long long ns;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns));
  return ns;
}

__device__ __forceinline__ unsigned smId() {
  unsigned id;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
  return id;
}

// Per block: its SM, its start and its end.
__global__ void sweepKernel(unsigned* words, unsigned long long count, unsigned* sm, unsigned long long* times) {
  const unsigned long long start = globalTimerNs();
  const unsigned long long stride = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
  for (unsigned long long i = static_cast<unsigned long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride)
    words[i] = words[i] * 3u + 1u;
  __syncthreads();
  if (threadIdx.x == 0) {
    sm[blockIdx.x] = smId();
    times[2 * blockIdx.x] = start;
    times[2 * blockIdx.x + 1] = globalTimerNs();
  }
}

bool check(cudaError_t error, const char* what) {
  if (error == cudaSuccess) return true;
  std::fprintf(stderr, "sweep_side_by_side_probe: %s: %s\n", what, cudaGetErrorString(error));
  return false;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<double> sizes_mib;
  for (int i = 1; i < argc; ++i) sizes_mib.push_back(std::atof(argv[i]));
  if (sizes_mib.empty()) sizes_mib = {3.41, 10, 20, 30, 48};
  constexpr int kMaxKernels = 4;
  constexpr int kMaxGrid = 8;
  constexpr int kReps = 5;
  const double largest = *std::max_element(sizes_mib.begin(), sizes_mib.end());
  const std::size_t buffer_bytes = static_cast<std::size_t>(largest * 1048576.0) + 4096;
  unsigned* buffers[kMaxKernels];
  unsigned* sms[kMaxKernels];
  unsigned long long* times[kMaxKernels];
  cudaStream_t streams[kMaxKernels];
  for (int k = 0; k < kMaxKernels; ++k) {
    if (!check(cudaMalloc(&buffers[k], buffer_bytes), "cudaMalloc") ||
        !check(cudaMemset(buffers[k], 1, buffer_bytes), "cudaMemset") ||
        !check(cudaMallocManaged(&sms[k], kMaxGrid * sizeof(unsigned)), "cudaMallocManaged") ||
        !check(cudaMallocManaged(&times[k], 2 * kMaxGrid * sizeof(unsigned long long)), "cudaMallocManaged") ||
        !check(cudaStreamCreateWithFlags(&streams[k], cudaStreamNonBlocking), "cudaStreamCreate"))
      return 1;
  }
  cudaDeviceProp properties{};
  if (!check(cudaGetDeviceProperties(&properties, 0), "cudaGetDeviceProperties")) return 1;
  std::printf("%s, L2 %.1f MiB, %d SMs\n", properties.name, properties.l2CacheSize / 1048576.0,
              properties.multiProcessorCount);
  std::printf("%8s %5s %7s %12s %8s %10s  %s\n", "MiB", "grid", "kernels", "each (us)", "mean", "vs alone",
              "SMs");
  for (const double mib : sizes_mib) {
    const unsigned long long words = static_cast<unsigned long long>(mib * 1048576.0 / sizeof(unsigned));
    for (const int grid : {1, 2, 8}) {
      double alone = 0;
      for (int kernels = 1; kernels <= kMaxKernels; kernels *= 2) {
        std::vector<std::vector<double>> runs(kernels);
        for (int rep = 0; rep <= kReps; ++rep) {
          for (int k = 0; k < kernels; ++k) {
            sweepKernel<<<grid, 256, 0, streams[k]>>>(buffers[k], words, sms[k], times[k]);
          }
          if (!check(cudaDeviceSynchronize(), "sweepKernel")) return 1;
          if (rep == 0) continue;  // warm-up
          for (int k = 0; k < kernels; ++k) {
            unsigned long long first = ~0ull, last = 0;
            for (int b = 0; b < grid; ++b) {
              first = std::min(first, times[k][2 * b]);
              last = std::max(last, times[k][2 * b + 1]);
            }
            runs[k].push_back(static_cast<double>(last - first) / 1e3);
          }
        }
        double mean = 0;
        std::printf("%8.2f %5d %7d ", mib, grid, kernels);
        for (int k = 0; k < kernels; ++k) {
          const double us = median(runs[k]);
          mean += us / kernels;
          std::printf("%s%.0f", k ? "/" : " ", us);
        }
        if (kernels == 1) alone = mean;
        std::printf(" %8.0f %10.2f  ", mean, mean / alone);
        for (int k = 0; k < kernels; ++k) {
          for (int b = 0; b < grid; ++b) std::printf("%s%u", b ? "," : k ? "/" : "", sms[k][b]);
        }
        std::printf("\n");
      }
    }
  }
  return 0;
}
