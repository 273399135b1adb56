// Runtime/driver API names as diagnosis sees them. CUPTI and nsys name calls like
// "cudaMemcpyAsync_v3020"; some exports drop the version. We compare the part before "_v".
#pragma once

#include <cstdint>
#include <string_view>

namespace cuoverlap::diagnosis {

// What a call does to the host/device relationship; decides gap causes and findings.
enum class ApiKind : std::uint8_t {
  kOther,
  kLaunch,           // kernel or graph launch
  kMemcpyAsync,
  kMemcpySync,       // cudaMemcpy, cudaMemcpy2D, cuMemcpyHtoD, ... (host waits)
  kMemsetAsync,
  kMemsetSync,       // cudaMemset, cudaMemset2D, cuMemsetD8, ...
  kDeviceSync,       // cudaDeviceSynchronize, cudaThreadSynchronize, cuCtxSynchronize
  kStreamSync,       // cudaStreamSynchronize, cuStreamSynchronize
  kEventSync,        // cudaEventSynchronize, cuEventSynchronize
  kStreamWaitEvent,  // cudaStreamWaitEvent, cuStreamWaitEvent
  kAllocation,       // allocation/free/host allocation/registration (implicit device sync)
  kModuleLoad,       // cuModuleLoad*, cuLibraryLoad*, cudaLibraryLoad*, cuLink*: load, JIT, link
};

// "cudaMemcpyAsync_v3020" -> "cudaMemcpyAsync"; names without a version suffix are unchanged.
std::string_view apiBaseName(std::string_view name);

ApiKind classifyApi(std::string_view name);

// A pinned host allocation (cudaMallocHost, cudaHostAlloc, cuMemAllocHost, cuMemHostAlloc; `base`
// as apiBaseName gives it): an allocation call that pins pages on the host and waits for no GPU
// work, unlike a free (cudaFree, cudaFreeHost), which synchronizes the device.
bool isPinnedHostAllocation(std::string_view base);

// A call that pins or unpins host pages (a pinned host allocation, cudaFreeHost, cuMemFreeHost,
// cudaHostRegister/Unregister, cuMemHostRegister/Unregister; `base` as apiBaseName gives it): the
// driver maps (unmaps) them for the device while holding the context.
bool locksHostPages(std::string_view base);

// A device allocation (cudaMalloc, cuMemAlloc; `base` as apiBaseName gives it): it holds its
// thread for its own time and waits for no GPU work (host_timeline.h).
bool isDeviceAllocation(std::string_view base);

// A free of device memory (cudaFree, cudaFreeArray, cuMemFree; `base` as apiBaseName gives it): it
// returns once the device is idle, so it also waits for work other threads issue while it waits.
bool isDeviceFree(std::string_view base);

// Explicit synchronizations: device, stream and event synchronize.
inline bool isExplicitSync(ApiKind kind) {
  return kind == ApiKind::kDeviceSync || kind == ApiKind::kStreamSync ||
         kind == ApiKind::kEventSync;
}

// Calls that block the host until GPU work finished: explicit syncs and synchronous copies/memsets.
inline bool isHostBlocking(ApiKind kind) {
  return isExplicitSync(kind) || kind == ApiKind::kMemcpySync || kind == ApiKind::kMemsetSync;
}

}  // namespace cuoverlap::diagnosis
