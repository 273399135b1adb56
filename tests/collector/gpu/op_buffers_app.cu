// Ops on known buffers, for the collector's CUOVERLAP_OP_BUFFERS (op_buffers_test.cpp): kernels
// launched through the runtime (an interior pointer, a struct of two pointers, no pointer at all)
// and through the driver, an HtoD copy from pinned memory, a DtoH copy into pageable memory and a
// memset of part of a buffer, and a stream wait. Prints the buffers' addresses. `probe`: exit 0
// when a GPU is usable.
// `reload`: modules loaded and unloaded in turn, one with a kernel of four pointers, one with a
// kernel of one int launched with an argument array that has the four pointers after its one
// entry: a function handle the driver hands out again must not be read by the wider layout.
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

struct Pair {
  float* x;
  int n;
  float* y;
};

__global__ void scale(float* a, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) a[i] *= 2.0f;
}

__global__ void pairKernel(Pair p) {
  const int i = threadIdx.x;
  if (i < p.n) p.y[i] = p.x[i];
}

__global__ void scalarOnly(int n) {
  if (n < 0 && threadIdx.x == 0) printf("never\n");
}

namespace {

bool ok(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return true;
  std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
  return false;
}

constexpr char kWidePtx[] =
    ".version 7.0\n.target sm_70\n.address_size 64\n"
    ".visible .entry wide(.param .u64 w0, .param .u64 w1, .param .u64 w2, .param .u64 w3)\n{\n ret;\n}\n";
constexpr char kNarrowPtx[] =
    ".version 7.0\n.target sm_70\n.address_size 64\n.visible .entry narrow(.param .u32 n0)\n{\n ret;\n}\n";

// Loads `ptx`, launches its kernel `name` with `params` on `stream`, unloads it; the handle or null.
CUfunction launchOnce(const char* ptx, const char* name, void** params, CUstream stream) {
  CUmodule module = nullptr;
  CUfunction function = nullptr;
  if (cuModuleLoadData(&module, ptx) != CUDA_SUCCESS) return nullptr;
  const bool launched = cuModuleGetFunction(&function, module, name) == CUDA_SUCCESS &&
                        cuLaunchKernel(function, 1, 1, 1, 32, 1, 1, 0, stream, params, nullptr) == CUDA_SUCCESS &&
                        cuStreamSynchronize(stream) == CUDA_SUCCESS;
  cuModuleUnload(module);
  return launched ? function : nullptr;
}

int reload() {
  constexpr int kRounds = 100;
  void* buffers[4] = {};
  for (void*& buffer : buffers) {
    if (!ok(cudaMalloc(&buffer, 4096), "cudaMalloc")) return 1;
  }
  int n = 7;
  void* wide_params[] = {&buffers[0], &buffers[1], &buffers[2], &buffers[3]};
  void* narrow_params[] = {&n, &buffers[0], &buffers[1], &buffers[2], &buffers[3]};
  int reused = 0;
  for (int round = 0; round < kRounds; ++round) {
    const CUfunction wide = launchOnce(kWidePtx, "wide", wide_params, nullptr);
    const CUfunction narrow = launchOnce(kNarrowPtx, "narrow", narrow_params, nullptr);
    if (wide == nullptr || narrow == nullptr) {
      std::fprintf(stderr, "loading or launching a PTX module failed\n");
      return 1;
    }
    reused += wide == narrow;
  }
  std::printf("rounds=%d reused=%d\n", kRounds, reused);
  for (void* buffer : buffers) cudaFree(buffer);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "probe") == 0) {
    int count = 0;
    return cudaGetDeviceCount(&count) == cudaSuccess && count > 0 ? 0 : 1;
  }
  if (argc > 1 && std::strcmp(argv[1], "reload") == 0) {
    return ok(cudaFree(nullptr), "cudaFree") ? reload() : 1;
  }
  float *a = nullptr, *b = nullptr, *pinned = nullptr;
  if (!ok(cudaMalloc(&a, 1 << 20), "cudaMalloc") || !ok(cudaMalloc(&b, 2 << 20), "cudaMalloc") ||
      !ok(cudaMallocHost(&pinned, 1 << 20), "cudaMallocHost")) {
    return 1;
  }
  std::vector<float> pageable(1024);
  cudaStream_t s;
  if (!ok(cudaStreamCreate(&s), "cudaStreamCreate")) return 1;
  scale<<<4, 128, 0, s>>>(a + 100, 1000);  // an interior pointer: from it to the end of a
  pairKernel<<<1, 32, 0, s>>>(Pair{a, 7, b});
  scalarOnly<<<1, 32, 0, s>>>(5);
  ok(cudaMemcpyAsync(b, pinned, 4096, cudaMemcpyHostToDevice, s), "cudaMemcpyAsync");
  ok(cudaMemsetAsync(reinterpret_cast<char*>(b) + 1024, 0, 2048, s), "cudaMemsetAsync");
  // A stream wait: the analyzer reads op buffers only for a trace that has one.
  cudaEvent_t done;
  if (!ok(cudaEventCreateWithFlags(&done, cudaEventDisableTiming), "cudaEventCreate")) return 1;
  ok(cudaEventRecord(done, s), "cudaEventRecord");
  ok(cudaStreamWaitEvent(s, done, 0), "cudaStreamWaitEvent");
  if (!ok(cudaStreamSynchronize(s), "cudaStreamSynchronize")) return 1;
  if (!ok(cudaMemcpy(pageable.data(), a, 512, cudaMemcpyDeviceToHost), "cudaMemcpy")) return 1;
  // The driver's own launch, of a CUfunction.
  cudaFunction_t function = nullptr;
  if (!ok(cudaGetFuncBySymbol(&function, reinterpret_cast<const void*>(scale)), "cudaGetFuncBySymbol")) return 1;
  float* arg0 = b;
  int arg1 = 3;
  void* params[] = {&arg0, &arg1};
  if (cuLaunchKernel(reinterpret_cast<CUfunction>(function), 1, 1, 1, 32, 1, 1, 0, s, params, nullptr) !=
      CUDA_SUCCESS) {
    std::fprintf(stderr, "cuLaunchKernel failed\n");
    return 1;
  }
  if (!ok(cudaStreamSynchronize(s), "cudaStreamSynchronize")) return 1;
  std::printf("a=%llu b=%llu pinned=%llu pageable=%llu\n", static_cast<unsigned long long>(reinterpret_cast<std::uintptr_t>(a)),
              static_cast<unsigned long long>(reinterpret_cast<std::uintptr_t>(b)),
              static_cast<unsigned long long>(reinterpret_cast<std::uintptr_t>(pinned)),
              static_cast<unsigned long long>(reinterpret_cast<std::uintptr_t>(pageable.data())));
  cudaEventDestroy(done);
  cudaStreamDestroy(s);
  cudaFree(a);
  cudaFree(b);
  cudaFreeHost(pinned);
  return 0;
}
