#include "cupti/api_selection.h"

namespace cuoverlap::collector::activity {
namespace {

// Keep in step with docs/collector.md ("Lean API tracing").
constexpr std::string_view kRuntimePrefixes[] = {
    "cudaLaunch",  // cudaLaunchKernel, ...ExC, Cooperative, HostFunc
    "cudaMemcpy", "cudaMemset", "cudaMemPrefetch",
    "cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaThreadSynchronize",
    "cudaEventRecord", "cudaEventQuery", "cudaEventSynchronize", "cudaStreamWaitEvent",
    "cudaStreamCreate", "cudaStreamDestroy", "cudaStreamBeginCapture", "cudaStreamEndCapture",
    "cudaMalloc", "cudaFree", "cudaHostAlloc", "cudaHostRegister", "cudaHostUnregister",
    "cudaGraphLaunch", "cudaGraphInstantiate", "cudaGraphUpload",
    "cudaLibraryLoad", "cudaLibraryUnload",
    "cudaSetDevice", "cudaDeviceReset",
};

constexpr std::string_view kDriverPrefixes[] = {
    "cuLaunch",  // cuLaunchKernel, ...Ex, Cooperative, HostFunc, Grid
    "cuMemcpy", "cuMemset", "cuMemPrefetch",
    "cuStreamSynchronize", "cuCtxSynchronize",
    "cuEventRecord", "cuEventQuery", "cuEventSynchronize", "cuStreamWaitEvent",
    "cuStreamCreate", "cuStreamDestroy", "cuStreamBeginCapture", "cuStreamEndCapture",
    "cuMemAlloc", "cuMemFree", "cuMemHostAlloc", "cuMemHostRegister", "cuMemHostUnregister",
    "cuMemCreate", "cuMemRelease", "cuMemMap", "cuMemUnmap",
    "cuGraphLaunch", "cuGraphInstantiate", "cuGraphUpload",
    "cuModuleLoad", "cuModuleUnload", "cuLibraryLoad", "cuLibraryUnload", "cuLink",
    "cuCtxSetCurrent", "cuCtxCreate", "cuCtxDestroy", "cuDevicePrimaryCtxRetain",
    "cuDevicePrimaryCtxReset",
};

template <std::size_t N>
bool startsWithAny(std::string_view name, const std::string_view (&prefixes)[N]) {
  for (std::string_view prefix : prefixes) {
    if (name.substr(0, prefix.size()) == prefix) return true;
  }
  return false;
}

}  // namespace

bool isLeanRuntimeApi(std::string_view name) { return startsWithAny(name, kRuntimePrefixes); }
bool isLeanDriverApi(std::string_view name) { return startsWithAny(name, kDriverPrefixes); }

}  // namespace cuoverlap::collector::activity
