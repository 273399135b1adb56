#include "diagnosis/api_names.h"

#include <algorithm>
#include <array>
#include <cctype>

namespace cuoverlap::diagnosis {
namespace {

bool startsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

bool contains(std::string_view s, std::string_view part) {
  return s.find(part) != std::string_view::npos;
}

// Stream-ordered allocators (cudaMallocAsync, cudaFreeAsync) do not synchronize: not listed.
constexpr std::array<std::string_view, 20> kAllocationApis = {
    "cudaMalloc", "cudaFree", "cudaMallocHost", "cudaHostAlloc", "cudaFreeHost",
    "cudaHostRegister", "cudaHostUnregister", "cudaMallocPitch", "cudaMalloc3D",
    "cudaMallocManaged", "cudaMallocArray", "cudaFreeArray", "cuMemAlloc", "cuMemFree",
    "cuMemAllocHost", "cuMemHostAlloc", "cuMemFreeHost", "cuMemHostRegister",
    "cuMemHostUnregister", "cuMemAllocPitch"};

constexpr std::array<std::string_view, 4> kPinnedHostAllocationApis = {
    "cudaMallocHost", "cudaHostAlloc", "cuMemAllocHost", "cuMemHostAlloc"};

constexpr std::array<std::string_view, 6> kHostPageUnlockingOrRegisteringApis = {
    "cudaFreeHost", "cuMemFreeHost", "cudaHostRegister", "cudaHostUnregister", "cuMemHostRegister",
    "cuMemHostUnregister"};

constexpr std::array<std::string_view, 2> kDeviceAllocationApis = {"cudaMalloc", "cuMemAlloc"};

// Module loading, JIT compilation (cuModuleLoadData of PTX, cuLink*) and linking.
constexpr std::array<std::string_view, 4> kModuleLoadPrefixes = {"cuModuleLoad", "cuLibraryLoad",
                                                                 "cudaLibraryLoad", "cuLink"};

ApiKind classifyCopyOrSet(std::string_view base) {
  const bool is_async = contains(base, "Async");
  if (startsWith(base, "cudaMemcpy") || startsWith(base, "cuMemcpy")) {
    return is_async ? ApiKind::kMemcpyAsync : ApiKind::kMemcpySync;
  }
  if (startsWith(base, "cudaMemset") || startsWith(base, "cuMemset")) {
    return is_async ? ApiKind::kMemsetAsync : ApiKind::kMemsetSync;
  }
  return ApiKind::kOther;
}

}  // namespace

std::string_view apiBaseName(std::string_view name) {
  const auto pos = name.rfind("_v");
  if (pos == std::string_view::npos || pos + 2 >= name.size()) return name;
  for (std::size_t i = pos + 2; i < name.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(name[i]))) return name;
  }
  return name.substr(0, pos);
}

bool isPinnedHostAllocation(std::string_view base) {
  return std::find(kPinnedHostAllocationApis.begin(), kPinnedHostAllocationApis.end(), base) !=
         kPinnedHostAllocationApis.end();
}

bool locksHostPages(std::string_view base) {
  return isPinnedHostAllocation(base) ||
         std::find(kHostPageUnlockingOrRegisteringApis.begin(), kHostPageUnlockingOrRegisteringApis.end(),
                   base) != kHostPageUnlockingOrRegisteringApis.end();
}

bool isDeviceAllocation(std::string_view base) {
  return std::find(kDeviceAllocationApis.begin(), kDeviceAllocationApis.end(), base) !=
         kDeviceAllocationApis.end();
}

bool isDeviceFree(std::string_view base) {
  return base == "cudaFree" || base == "cudaFreeArray" || base == "cuMemFree";
}

ApiKind classifyApi(std::string_view name) {
  const std::string_view base = apiBaseName(name);
  for (std::string_view alloc : kAllocationApis) {
    if (base == alloc) return ApiKind::kAllocation;
  }
  if (base == "cudaDeviceSynchronize" || base == "cudaThreadSynchronize" ||
      base == "cuCtxSynchronize") {
    return ApiKind::kDeviceSync;
  }
  if (base == "cudaStreamSynchronize" || base == "cuStreamSynchronize") return ApiKind::kStreamSync;
  if (base == "cudaEventSynchronize" || base == "cuEventSynchronize") return ApiKind::kEventSync;
  if (base == "cudaStreamWaitEvent" || base == "cuStreamWaitEvent") {
    return ApiKind::kStreamWaitEvent;
  }
  for (std::string_view prefix : kModuleLoadPrefixes) {
    if (startsWith(base, prefix)) return ApiKind::kModuleLoad;
  }
  if (startsWith(base, "cudaLaunch") || startsWith(base, "cuLaunch") ||
      startsWith(base, "cudaGraphLaunch") || startsWith(base, "cuGraphLaunch")) {
    return ApiKind::kLaunch;
  }
  return classifyCopyOrSet(base);
}

}  // namespace cuoverlap::diagnosis
