// A CUDA program whose steps can be told apart in a trace, for the capture-window GPU test
// (capture_gpu_test.cpp). Step k (from 1) is an NVTX push/pop range "step" holding one addOne
// kernel launched with k blocks, synchronized inside the range: a kernel's gridX says its step.
// Usage: capture_app steps N               N steps
//        capture_app profiler N FIRST LAST  N steps; cudaProfilerStart before step FIRST,
//                                           cudaProfilerStop after step LAST
// Exits 77 when no GPU is usable, 1 on a CUDA error.
#include <cuda_profiler_api.h>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

__global__ void addOne(int* data, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] += 1;
}

bool ok(cudaError_t result, const char* call) {
  if (result == cudaSuccess) return true;
  std::fprintf(stderr, "%s failed: %s\n", call, cudaGetErrorString(result));
  return false;
}

int runSteps(int steps, int profile_first, int profile_last) {
  constexpr int kThreads = 32;
  int* data = nullptr;
  if (!ok(cudaMalloc(&data, sizeof(int) * kThreads * steps), "cudaMalloc")) return 1;
  for (int step = 1; step <= steps; ++step) {
    if (step == profile_first && !ok(cudaProfilerStart(), "cudaProfilerStart")) return 1;
    nvtxRangePushA("step");
    addOne<<<step, kThreads>>>(data, kThreads * steps);
    const bool done = ok(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    nvtxRangePop();
    if (!done) return 1;
    if (step == profile_last && !ok(cudaProfilerStop(), "cudaProfilerStop")) return 1;
  }
  return ok(cudaFree(data), "cudaFree") ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) return 77;
  if (argc == 3 && !std::strcmp(argv[1], "steps")) return runSteps(std::atoi(argv[2]), 0, 0);
  if (argc == 5 && !std::strcmp(argv[1], "profiler")) {
    return runSteps(std::atoi(argv[2]), std::atoi(argv[3]), std::atoi(argv[4]));
  }
  std::fprintf(stderr, "usage: capture_app steps N | profiler N FIRST LAST\n");
  return 2;
}
