// Which CUPTI callbacks fire for a runtime <<<>>> launch and a cudaMemcpyAsync, with which correlation ids,
// and which parameter-layout query answers for the driver launch's CUfunction (docs/collector.md, "Which
// memory an op touches"). Run on a GPU host:
//   nvcc -arch=sm_90 -o driver_callbacks_probe scripts/gpu/driver_callbacks_probe.cu -lcupti -lcuda && ./driver_callbacks_probe
// On an H200 (driver 580.159.04, CUDA 13.0): cudaLaunchKernel -> cuLaunchKernel and cudaMemcpyAsync ->
// cuMemcpyDtoHAsync_v2 under the same correlation id; cuFuncGetParamInfo on the launch's f: 400 (a library
// kernel); cuMemGetAddressRange answers for device and page-locked host memory.
#include <cuda.h>
#include <cuda_runtime.h>
#include <cupti.h>
#include <cstdio>
#include <cstdint>
struct S { float* a; int n; float* b; };
__global__ void k(float* x, int n, S s, double d) { if (threadIdx.x == 0 && n < 0) x[0] = s.a[0] + (float)d; }
void CUPTIAPI cb(void*, CUpti_CallbackDomain dom, CUpti_CallbackId id, const void* data) {
  auto* d = static_cast<const CUpti_CallbackData*>(data);
  const char* site = d->callbackSite == CUPTI_API_ENTER ? "enter" : "exit";
  std::printf("%s %s %s corr=%u sym=%s\n", dom == CUPTI_CB_DOMAIN_DRIVER_API ? "DRV" : "RT", site,
              d->functionName, d->correlationId, d->symbolName ? d->symbolName : "-");
  if (dom == CUPTI_CB_DOMAIN_DRIVER_API && d->callbackSite == CUPTI_API_ENTER &&
      (id == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel || id == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz)) {
    auto* p = static_cast<const cuLaunchKernel_params*>(d->functionParams);
    for (size_t i = 0; i < 8; ++i) {
      size_t off = 0, sz = 0;
      CUresult r = cuFuncGetParamInfo(p->f, i, &off, &sz);
      if (r != CUDA_SUCCESS) { std::printf("  param %zu: r=%d\n", i, (int)r); break; }
      std::printf("  param %zu off %zu size %zu first8=%llx\n", i, off, sz,
                  (unsigned long long)*static_cast<std::uint64_t*>(p->kernelParams[i]));
    }
  }
  if (dom == CUPTI_CB_DOMAIN_DRIVER_API && d->callbackSite == CUPTI_API_ENTER &&
      (id == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx || id == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz)) {
    auto* p = static_cast<const cuLaunchKernelEx_params*>(d->functionParams);
    size_t off = 0, sz = 0;
    CUresult r = cuFuncGetParamInfo(p->f, 0, &off, &sz);
    std::printf("  Ex param0 r=%d off %zu size %zu\n", (int)r, off, sz);
  }
  if (dom == CUPTI_CB_DOMAIN_RUNTIME_API && d->callbackSite == CUPTI_API_ENTER && id == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000) {
    auto* p = static_cast<const cudaLaunchKernel_v7000_params*>(d->functionParams);
    size_t o1=0,s1=0; cudaError_t e = cudaFuncGetParamInfo(p->func, 2, &o1, &s1);
    std::printf("  rt cudaFuncGetParamInfo(2) e=%d off %zu size %zu\n", (int)e, o1, s1);
    cudaFunction_t f; e = cudaGetFuncBySymbol(&f, p->func);
    std::printf("  rt cudaGetFuncBySymbol e=%d\n", (int)e);
    if (e == cudaSuccess) { size_t off=0, sz=0; CUresult r = cuFuncGetParamInfo((CUfunction)f, 1, &off, &sz); std::printf("  via getFuncBySymbol param1 r=%d off %zu sz %zu\n", (int)r, off, sz); }
  }
}
int main() {
  CUpti_SubscriberHandle h;
  cuptiSubscribe(&h, cb, nullptr);
  float* x; cudaMalloc(&x, 1024);
  S s{x, 3, x};
  cudaStream_t st; cudaStreamCreate(&st);
  cudaDeviceSynchronize();
  cuptiEnableDomain(1, h, CUPTI_CB_DOMAIN_DRIVER_API);
  cuptiEnableCallback(1, h, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000);
  cuptiEnableCallback(1, h, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020);
  std::printf("=== launch x=%p\n", (void*)x);
  k<<<1, 32, 0, st>>>(x, 5, s, 1.0);
  std::printf("=== memcpyAsync\n");
  float h4[4]; cudaMemcpyAsync(h4, x, 16, cudaMemcpyDeviceToHost, st);
  std::printf("=== sync\n");
  cudaStreamSynchronize(st);
  cuptiEnableDomain(0, h, CUPTI_CB_DOMAIN_DRIVER_API);
  CUdeviceptr base; size_t size; CUresult r = cuMemGetAddressRange(&base, &size, (CUdeviceptr)(x + 7));
  std::printf("addressRange r=%d base %llx size %zu\n", (int)r, (unsigned long long)base, size);
  float* hp; cudaMallocHost(&hp, 4096);
  r = cuMemGetAddressRange(&base, &size, (CUdeviceptr)(hp + 7));
  std::printf("pinned addressRange r=%d base %llx (hp %p) size %zu\n", (int)r, (unsigned long long)base, (void*)hp, size);
  return 0;
}
