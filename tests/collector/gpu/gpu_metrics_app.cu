// gpu_metrics_app [probe]: kernels whose memory traffic differs by orders of magnitude, each
// phase between NVTX-free device synchronizations, for `record --gpu-metrics`:
//   sweep: 8 passes of a streaming kernel over 2 x 256 MiB (reads and writes from DRAM);
//   spin:  a kernel of 1056 blocks that only waits 3 ms on the global timer (no memory traffic);
//   pair:  the sweep on two streams at once, over separate buffers.
// `reset` then destroys the context (cudaDeviceReset) and sweeps once more in a new one
// ("PHASE again"): sampling stops before a context goes and starts again with the next.
// `gpus` sweeps once on each of the first two GPUs instead ("PHASE gpu0", "PHASE gpu1"); `probe2`
// exits 0 when there are two.
// Prints each phase's kernel time (ms) on stdout as "PHASE NAME MS". `probe` exits 0 when a GPU
// is usable, else 1. Exits 0 on success, 3 on a CUDA error.
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

constexpr std::size_t kElements = (256u << 20) / sizeof(float);

__global__ void sweep(const float* in, float* out, std::size_t n, int passes) {
  for (int p = 0; p < passes; ++p) {
    for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
         i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
      out[i] = in[i] * 1.0001f + static_cast<float>(p);
    }
  }
}

__device__ unsigned long long globalTimer() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void spin(unsigned long long ns) {
  __shared__ unsigned long long start;
  if (threadIdx.x == 0) start = globalTimer();
  __syncthreads();
  while (globalTimer() - start < ns) {
  }
}

}  // namespace

int main(int argc, char** argv) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) return argc > 1 ? 1 : 3;
  if (argc > 1 && std::strcmp(argv[1], "probe") == 0) return 0;
  if (argc > 1 && std::strcmp(argv[1], "probe2") == 0) return devices >= 2 ? 0 : 1;
  if (argc > 1 && std::strcmp(argv[1], "gpus") == 0) {
    if (devices < 2) return 3;
    for (int device = 0; device < 2; ++device) {
      float *in, *out;
      cudaEvent_t begin, end;
      CHECK_CUDA(cudaSetDevice(device));
      CHECK_CUDA(cudaMalloc(&in, kElements * sizeof(float)));
      CHECK_CUDA(cudaMalloc(&out, kElements * sizeof(float)));
      CHECK_CUDA(cudaMemset(in, 0, kElements * sizeof(float)));
      CHECK_CUDA(cudaEventCreate(&begin));
      CHECK_CUDA(cudaEventCreate(&end));
      CHECK_CUDA(cudaDeviceSynchronize());
      CHECK_CUDA(cudaEventRecord(begin));
      sweep<<<1056, 256>>>(in, out, kElements, 8);
      CHECK_CUDA(cudaEventRecord(end));
      CHECK_CUDA(cudaEventSynchronize(end));
      CHECK_CUDA(cudaGetLastError());
      float ms = 0;
      CHECK_CUDA(cudaEventElapsedTime(&ms, begin, end));
      std::printf("PHASE gpu%d %.3f\n", device, ms);
    }
    return 0;
  }
  float *a, *b, *c, *d;
  CHECK_CUDA(cudaMalloc(&a, kElements * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&b, kElements * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&c, kElements * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&d, kElements * sizeof(float)));
  CHECK_CUDA(cudaMemset(a, 0, kElements * sizeof(float)));
  CHECK_CUDA(cudaMemset(c, 0, kElements * sizeof(float)));
  cudaStream_t s1, s2;
  CHECK_CUDA(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  CHECK_CUDA(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  cudaEvent_t e0, e1;
  CHECK_CUDA(cudaEventCreate(&e0));
  CHECK_CUDA(cudaEventCreate(&e1));
  auto phase = [&](const char* name, auto launch) -> int {
    CHECK_CUDA(cudaDeviceSynchronize());
    CHECK_CUDA(cudaEventRecord(e0, s1));
    launch();
    CHECK_CUDA(cudaStreamSynchronize(s2));
    CHECK_CUDA(cudaEventRecord(e1, s1));
    CHECK_CUDA(cudaEventSynchronize(e1));
    CHECK_CUDA(cudaGetLastError());
    float ms = 0;
    CHECK_CUDA(cudaEventElapsedTime(&ms, e0, e1));
    std::printf("PHASE %s %.3f\n", name, ms);
    return 0;
  };
  int rc = phase("sweep", [&] { sweep<<<1056, 256, 0, s1>>>(a, b, kElements, 8); });
  if (rc == 0) rc = phase("spin", [&] { spin<<<1056, 256, 0, s1>>>(3000000ull); });
  if (rc == 0) {
    rc = phase("pair", [&] {
      sweep<<<1056, 256, 0, s1>>>(a, b, kElements, 8);
      sweep<<<1056, 256, 0, s2>>>(c, d, kElements, 8);
    });
  }
  CHECK_CUDA(cudaDeviceSynchronize());
  if (rc != 0 || argc < 2 || std::strcmp(argv[1], "reset") != 0) return rc;
  CHECK_CUDA(cudaDeviceReset());
  CHECK_CUDA(cudaMalloc(&a, kElements * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&b, kElements * sizeof(float)));
  CHECK_CUDA(cudaMemset(a, 0, kElements * sizeof(float)));
  CHECK_CUDA(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  CHECK_CUDA(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  CHECK_CUDA(cudaEventCreate(&e0));
  CHECK_CUDA(cudaEventCreate(&e1));
  rc = phase("again", [&] { sweep<<<1056, 256, 0, s1>>>(a, b, kElements, 8); });
  CHECK_CUDA(cudaDeviceSynchronize());
  return rc;
}
