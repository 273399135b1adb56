// Where and when each block of concurrent kernels ran: the ground truth behind the schedule
// model's sharing of SMs (analyzer/src/diagnosis/schedule_estimate.h, besideStartNs).
//
// Usage: block_placement_probe [--clock] [--graph] STREAM:GRID:US[:DELAY_US] ...
//   Each argument is one kernel of 256-thread blocks, each block spinning US µs (on the global
//   timer, as the lab's touchSpinKernel does; --clock: on the SM's cycle counter instead), issued
//   in argument order on stream STREAM (0-3, non-blocking), DELAY_US of host spinning before its
//   launch. The whole sequence runs 4 times (a device synchronize before each); the last run's
//   blocks are printed, one line each:
//     KERNEL STREAM GRID US BLOCK START_US END_US SM
//   START_US and END_US relative to the first block's start (global timer: a block's start is when
//   its thread 0 first ran, its end after its last thread's spin).
//   --graph: the kernels (all on one stream, no delays) are captured once into a CUDA graph, and
//   each run launches the graph instead (the kernels as graph nodes, one cudaGraphLaunch).
// Exit status: 0, or 1 with one line on stderr (a bad argument, a CUDA error).
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>

namespace {

__device__ __forceinline__ unsigned long long globalTimer() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__device__ __forceinline__ void recordBlock(unsigned long long start, unsigned long long* rows) {
  if (threadIdx.x != 0) return;
  unsigned sm;
  asm("mov.u32 %0, %%smid;" : "=r"(sm));
  rows[blockIdx.x * 3] = start;
  rows[blockIdx.x * 3 + 1] = globalTimer();
  rows[blockIdx.x * 3 + 2] = sm;
}

__global__ void spinTimer(unsigned long long ns, unsigned long long* rows) {
  __shared__ unsigned long long start;
  if (threadIdx.x == 0) start = globalTimer();
  __syncthreads();
  while (globalTimer() - start < ns) {
  }
  __syncthreads();
  recordBlock(start, rows);
}

__global__ void spinClock(long long cycles, unsigned long long* rows) {
  __shared__ unsigned long long start;
  if (threadIdx.x == 0) start = globalTimer();
  __syncthreads();
  const long long begin = clock64();
  while (clock64() - begin < cycles) {
  }
  __syncthreads();
  recordBlock(start, rows);
}

struct Kernel {
  int stream = 0;
  int grid = 0;
  int us = 0;
  int delay_us = 0;
};

bool fail(const char* what) {
  std::fprintf(stderr, "block_placement_probe: %s\n", what);
  return false;
}

bool check(cudaError_t status) {
  return status == cudaSuccess || fail(cudaGetErrorString(status));
}

void spinHost(int us) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(us);
  while (std::chrono::steady_clock::now() < until) {
  }
}

bool run(const std::vector<Kernel>& kernels, bool clock, bool graph) {
  int khz = 0;
  if (!check(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, 0))) return false;
  cudaStream_t streams[4];
  for (cudaStream_t& s : streams) {
    if (!check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking))) return false;
  }
  std::vector<unsigned long long*> rows(kernels.size());
  for (std::size_t k = 0; k < kernels.size(); ++k) {
    if (!check(cudaMalloc(&rows[k], static_cast<std::size_t>(kernels[k].grid) * 3 * 8))) return false;
  }
  const auto launch = [&](std::size_t k) {
    const Kernel& kernel = kernels[k];
    if (clock) {
      spinClock<<<kernel.grid, 256, 0, streams[kernel.stream]>>>(static_cast<long long>(kernel.us) * khz / 1000,
                                                                  rows[k]);
    } else {
      spinTimer<<<kernel.grid, 256, 0, streams[kernel.stream]>>>(kernel.us * 1000ull, rows[k]);
    }
  };
  cudaGraphExec_t graph_exec = nullptr;
  if (graph) {  // every kernel on stream 0 (main checks)
    cudaGraph_t captured = nullptr;
    if (!check(cudaStreamBeginCapture(streams[0], cudaStreamCaptureModeThreadLocal))) return false;
    for (std::size_t k = 0; k < kernels.size(); ++k) launch(k);
    if (!check(cudaStreamEndCapture(streams[0], &captured)) ||
        !check(cudaGraphInstantiate(&graph_exec, captured, 0)) || !check(cudaGraphUpload(graph_exec, streams[0]))) {
      return false;
    }
  }
  for (int rep = 0; rep < 4; ++rep) {
    if (!check(cudaDeviceSynchronize())) return false;
    if (graph) {
      if (!check(cudaGraphLaunch(graph_exec, streams[0])) || !check(cudaDeviceSynchronize())) return false;
      continue;
    }
    for (std::size_t k = 0; k < kernels.size(); ++k) {
      if (kernels[k].delay_us > 0) spinHost(kernels[k].delay_us);
      launch(k);
    }
    if (!check(cudaGetLastError()) || !check(cudaDeviceSynchronize())) return false;
  }
  std::vector<std::vector<unsigned long long>> host(kernels.size());
  unsigned long long first = ~0ull;
  for (std::size_t k = 0; k < kernels.size(); ++k) {
    host[k].resize(static_cast<std::size_t>(kernels[k].grid) * 3);
    if (!check(cudaMemcpy(host[k].data(), rows[k], host[k].size() * 8, cudaMemcpyDeviceToHost))) return false;
    for (int b = 0; b < kernels[k].grid; ++b) first = std::min(first, host[k][b * 3]);
  }
  for (std::size_t k = 0; k < kernels.size(); ++k) {
    for (int b = 0; b < kernels[k].grid; ++b) {
      const unsigned long long* row = &host[k][b * 3];
      std::printf("%zu %d %d %d %d %.2f %.2f %llu\n", k, kernels[k].stream, kernels[k].grid, kernels[k].us, b,
                  static_cast<double>(row[0] - first) / 1e3, static_cast<double>(row[1] - first) / 1e3, row[2]);
    }
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  bool clock = false;
  bool graph = false;
  std::vector<Kernel> kernels;
  for (int a = 1; a < argc; ++a) {
    if (std::strcmp(argv[a], "--clock") == 0) {
      clock = true;
      continue;
    }
    if (std::strcmp(argv[a], "--graph") == 0) {
      graph = true;
      continue;
    }
    Kernel k;
    const int fields = std::sscanf(argv[a], "%d:%d:%d:%d", &k.stream, &k.grid, &k.us, &k.delay_us);
    if (fields < 3 || k.stream < 0 || k.stream > 3 || k.grid < 1 || k.grid > 65535 || k.us < 0 || k.delay_us < 0) {
      fail("a kernel is STREAM:GRID:US[:DELAY_US] with STREAM 0-3, GRID 1-65535");
      return 1;
    }
    kernels.push_back(k);
  }
  if (kernels.empty()) {
    fail("usage: block_placement_probe [--clock] [--graph] STREAM:GRID:US[:DELAY_US] ...");
    return 1;
  }
  for (const Kernel& k : kernels) {
    if (graph && (k.stream != 0 || k.delay_us != 0)) {
      fail("--graph: every kernel on stream 0, without a delay");
      return 1;
    }
  }
  return run(kernels, clock, graph) ? 0 : 1;
}
