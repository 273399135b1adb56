// managed_memory_app MODE: one 64 MiB managed buffer written by the host, then a kernel run three
// times on a created stream, then the host reads one element back.
//   fault:    the first run faults the buffer in on demand (GPU page faults, HtoD migrations);
//   prefetch: cudaMemPrefetchAsync to the device on the kernel's stream first: no run faults.
//   probe:    exits 0 when a GPU with concurrent managed access is usable (GPU page faults exist
//             from Pascal on, on Linux), else 1.
// Exits 0 on success, 2 on bad usage, 3 on a CUDA error.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>

#define CHECK_CUDA(call)                                                                   \
  do {                                                                                     \
    cudaError_t status_ = (call);                                                          \
    if (status_ != cudaSuccess) {                                                          \
      std::fprintf(stderr, "%s failed: %s\n", #call, cudaGetErrorString(status_));        \
      return 3;                                                                            \
    }                                                                                      \
  } while (0)

namespace {

constexpr std::size_t kElements = (64u << 20) / sizeof(float);

__global__ void scaleManaged(float* data, std::size_t n) {
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    data[i] = data[i] * 2.0f + 1.0f;
  }
}

int prefetchToDevice(float* data, int device, cudaStream_t stream) {
#if CUDART_VERSION >= 13000
  cudaMemLocation location{};
  location.type = cudaMemLocationTypeDevice;
  location.id = device;
  CHECK_CUDA(cudaMemPrefetchAsync(data, kElements * sizeof(float), location, 0, stream));
#else
  CHECK_CUDA(cudaMemPrefetchAsync(data, kElements * sizeof(float), device, stream));
#endif
  return 0;
}

int probe() {
  int count = 0, device = 0, concurrent = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) return 1;
  if (cudaDeviceGetAttribute(&concurrent, cudaDevAttrConcurrentManagedAccess, device) != cudaSuccess) {
    return 1;
  }
  return concurrent != 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) return std::fprintf(stderr, "usage: managed_memory_app fault|prefetch|probe\n"), 2;
  if (std::strcmp(argv[1], "probe") == 0) return probe();
  const bool prefetch = std::strcmp(argv[1], "prefetch") == 0;
  if (!prefetch && std::strcmp(argv[1], "fault") != 0) return std::fprintf(stderr, "bad mode\n"), 2;
  int device = 0;
  CHECK_CUDA(cudaSetDevice(device));
  float* data = nullptr;
  CHECK_CUDA(cudaMallocManaged(&data, kElements * sizeof(float)));
  for (std::size_t i = 0; i < kElements; ++i) data[i] = 1.0f;  // the host owns every page now
  cudaStream_t stream = nullptr;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  if (prefetch && prefetchToDevice(data, device, stream) != 0) return 3;
  for (int run = 0; run < 3; ++run) {
    scaleManaged<<<264, 256, 0, stream>>>(data, kElements);
    CHECK_CUDA(cudaGetLastError());
  }
  CHECK_CUDA(cudaStreamSynchronize(stream));
  const float expected = ((1.0f * 2 + 1) * 2 + 1) * 2 + 1;  // 15
  if (data[kElements - 1] != expected) {
    std::fprintf(stderr, "wrong result %f, expected %f\n", data[kElements - 1], expected);
    return 3;
  }
  CHECK_CUDA(cudaStreamDestroy(stream));
  CHECK_CUDA(cudaFree(data));
  std::printf("managed_memory_app %s: ok\n", argv[1]);
  return 0;
}
