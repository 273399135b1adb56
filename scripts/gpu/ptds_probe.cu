// Run on a GPU host (scripts/gpu): nvcc -arch=sm_90 -I$CUDA/extras/CUPTI/include ptds_probe.cu -lcupti -lcuda
// (add --default-stream per-thread and an argument for the implicit form). docs/collector.md,
// "Per-thread default streams in CUPTI's records", holds what it printed.
// What marks a per-thread default stream in CUPTI's records? Prints every STREAM record
// (streamId, flag, correlationId), the runtime API records (name, correlationId) and the kernels
// (streamId, correlationId) of a program that uses a created blocking stream, the legacy stream
// and the per-thread default stream of two threads.
#include <cuda_runtime.h>
#include <cupti.h>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

__global__ void spin(int* p) { if (p) p[threadIdx.x] += 1; }

static void CUPTIAPI request(uint8_t** buffer, size_t* size, size_t* max) {
  *size = 8 << 20; *buffer = static_cast<uint8_t*>(aligned_alloc(8, *size)); *max = 0;
}
static void CUPTIAPI complete(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  CUpti_Activity* r = nullptr;
  while (cuptiActivityGetNextRecord(buffer, valid, &r) == CUPTI_SUCCESS) {
    if (r->kind == CUPTI_ACTIVITY_KIND_STREAM) {
      auto* s = reinterpret_cast<CUpti_ActivityStream*>(r);
      std::printf("STREAM id %u ctx %u flag %d prio %u corr %u\n", s->streamId, s->contextId, (int)s->flag, s->priority, s->correlationId);
    } else if (r->kind == CUPTI_ACTIVITY_KIND_RUNTIME) {
      auto* a = reinterpret_cast<CUpti_ActivityAPI*>(r);
      const char* name = nullptr;
      cuptiGetCallbackName(CUPTI_CB_DOMAIN_RUNTIME_API, a->cbid, &name);
      std::printf("API %s corr %u tid %u\n", name ? name : "?", a->correlationId, a->threadId);
    } else if (r->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
      auto* k = reinterpret_cast<CUpti_ActivityKernel9*>(r);
      std::printf("KERNEL stream %u corr %u\n", k->streamId, k->correlationId);
    } else if (r->kind == CUPTI_ACTIVITY_KIND_CONTEXT) {
      auto* c = reinterpret_cast<CUpti_ActivityContext3*>(r);
      std::printf("CONTEXT %u nullStream %u\n", c->contextId, c->nullStreamId);
    }
  }
  free(buffer);
}

static void work(int* d, bool ptds_explicit) {
  cudaStream_t s = ptds_explicit ? cudaStreamPerThread : 0;
  spin<<<1, 32, 0, s>>>(d);
  spin<<<1, 32, 0, s>>>(d);
  cudaStreamSynchronize(s);
}

int main(int argc, char**) {
  const bool explicit_ptds = argc < 2;  // with an argument: stream 0 (per-thread when built so)
  cuptiActivityRegisterCallbacks(request, complete);
  for (auto k : {CUPTI_ACTIVITY_KIND_STREAM, CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_CONTEXT})
    cuptiActivityEnable(k);
  int* d = nullptr;
  cudaMalloc(&d, 4096);
  cudaStream_t created;
  cudaStreamCreate(&created);
  spin<<<1, 32, 0, created>>>(d);
  spin<<<1, 32, 0, cudaStreamLegacy>>>(d);
  cudaDeviceSynchronize();
  std::printf("-- main thread\n");
  work(d, explicit_ptds);
  std::thread t([&] { work(d, explicit_ptds); });
  t.join();
  cudaDeviceSynchronize();
  uint32_t id = 0;
  CUcontext ctx; cuCtxGetCurrent(&ctx);
  cuptiGetStreamIdEx(ctx, (CUstream)cudaStreamPerThread, 1, &id);
  std::printf("cuptiGetStreamIdEx(main per-thread) = %u\n", id);
  cuptiGetStreamIdEx(ctx, (CUstream)created, 0, &id);
  std::printf("cuptiGetStreamIdEx(created) = %u\n", id);
  cudaStreamDestroy(created);
  cuptiActivityFlushAll(1);
  return 0;
}
