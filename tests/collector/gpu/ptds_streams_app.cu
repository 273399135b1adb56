// A created blocking stream and the per-thread default stream (cudaStreamPerThread), both flagged
// 1 (blocking) in CUPTI's STREAM records: test_collector_gpu_ptds records it and checks that the
// analyzer tells them apart (docs/collector.md, "Per-thread default streams"). Kernels: 2 on the
// created stream, 3 on the main thread's per-thread stream. `probe`: exits 0 when a GPU is usable.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>

__global__ void touch(int* p) {
  if (p != nullptr) p[threadIdx.x] += 1;
}

int main(int argc, char** argv) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) return 1;
  if (argc > 1 && std::strcmp(argv[1], "probe") == 0) return 0;
  int* data = nullptr;
  if (cudaMalloc(&data, 4096) != cudaSuccess) return 1;
  cudaStream_t created = nullptr;
  if (cudaStreamCreate(&created) != cudaSuccess) return 1;
  for (int i = 0; i < 2; ++i) touch<<<1, 32, 0, created>>>(data);
  for (int i = 0; i < 3; ++i) touch<<<1, 32, 0, cudaStreamPerThread>>>(data);
  cudaStreamSynchronize(cudaStreamPerThread);
  cudaStreamSynchronize(created);
  cudaStreamDestroy(created);
  cudaFree(data);
  const cudaError_t error = cudaDeviceSynchronize();
  std::printf("ptds_streams_app: %s\n", cudaGetErrorString(error));
  return error == cudaSuccess ? 0 : 1;
}
