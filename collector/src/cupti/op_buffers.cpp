#include "cupti/op_buffers.h"

#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "cupti/cupti_check.h"
#include "cupti/driver_function.h"
#include "op_buffer_words.h"
#include "trace_schema.h"

namespace cuoverlap::collector::op_buffers {
namespace {

using schema::BufferAccess;
using FuncParamInfo = CUresult CUDAAPI(CUfunction, std::size_t, std::size_t*, std::size_t*);
using KernelParamInfo = CUresult CUDAAPI(CUkernel, std::size_t, std::size_t*, std::size_t*);
using AddressRange = CUresult CUDAAPI(CUdeviceptr*, std::size_t*, CUdeviceptr);

FuncParamInfo* g_func_param_info = nullptr;
KernelParamInfo* g_kernel_param_info = nullptr;
AddressRange* g_address_range = nullptr;
WriterThread* g_writer = nullptr;
std::atomic<bool> g_recording{false}, g_detached{false};
// Bumped by every call that frees or unmaps memory: the per-thread allocation caches start over.
std::atomic<std::uint64_t> g_free_epoch{0};

// A measuring build (cmake -DCUOVERLAP_OP_BUFFER_STATS=ON) counts and times the launch callbacks'
// work and prints it when the session ends: where a launch-bound program's cost goes.
#ifdef CUOVERLAP_OP_BUFFER_STATS
struct Stats {
  std::atomic<std::uint64_t> launches{0}, words{0}, hits{0}, misses{0}, queries{0}, found{0}, layout_queries{0};
  std::atomic<std::uint64_t> launch_ns{0}, query_ns{0}, layout_ns{0}, submit_ns{0};
};
Stats g_stats;
// CUOVERLAP_OP_BUFFER_STATS_SKIP=1 (this build only): the callbacks are enabled but return at once,
// so that CUPTI's own cost of calling them is told apart from the work they do.
const bool g_stats_skip = std::getenv("CUOVERLAP_OP_BUFFER_STATS_SKIP") != nullptr;
struct Timed {
  std::atomic<std::uint64_t>& total;
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
  ~Timed() {
    total += static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                            std::chrono::steady_clock::now() - start).count());
  }
};
#define CUOVERLAP_COUNT(field) (++g_stats.field)
#define CUOVERLAP_TIMED(field) const Timed timed_##field{g_stats.field}
#else
#define CUOVERLAP_COUNT(field) ((void)0)
#define CUOVERLAP_TIMED(field) ((void)0)
#endif

// Rows wait here until a batch is full (or the session ends); never freed, as the process may
// exit while another thread still launches.
constexpr std::size_t kBatchRows = 8192;
std::mutex g_rows_mutex;
auto* g_rows = new std::vector<OpBufferRow>();

// Parameter layouts, per function handle and code epoch (op_buffer_words.h); never destroyed, as
// the process may exit while another thread still launches.
constexpr std::size_t kMaxParams = 256;
auto& g_layouts = *new LayoutCache<CUfunction>();

// The runtime hands the driver a library kernel (CUkernel) where a CUfunction goes: the function
// query refuses it as an invalid handle, the kernel query answers.
std::vector<ParamSlot> queryLayout(CUfunction function) {
  CUOVERLAP_COUNT(layout_queries);
  CUOVERLAP_TIMED(layout_ns);
  std::vector<ParamSlot> slots;
  bool library_kernel = false;
  for (std::size_t i = 0; i < kMaxParams; ++i) {
    std::size_t offset = 0, size = 0;
    CUresult result = CUDA_ERROR_NOT_SUPPORTED;
    if (!library_kernel && g_func_param_info != nullptr) {
      result = g_func_param_info(function, i, &offset, &size);
      library_kernel = i == 0 && result == CUDA_ERROR_INVALID_HANDLE;
    } else if (g_func_param_info == nullptr) {
      library_kernel = true;
    }
    if (library_kernel && g_kernel_param_info != nullptr) {
      result = g_kernel_param_info(reinterpret_cast<CUkernel>(function), i, &offset, &size);
    }
    if (result != CUDA_SUCCESS) break;
    slots.push_back({static_cast<std::uint32_t>(offset), static_cast<std::uint32_t>(size)});
  }
  return slots;
}

const std::vector<ParamSlot>& layoutOf(CUfunction function) {
  return g_layouts.layoutOf(function, queryLayout);
}

struct Range {
  std::uint64_t base = 0, size = 0;
};

// The allocations this thread's launches pointed into lately, and words that were no address.
struct RangeCache {
  static constexpr std::size_t kSlots = 16;
  std::uint64_t epoch = ~std::uint64_t{0};
  std::array<Range, kSlots> hits{};
  std::size_t next_hit = 0;
  RecentMisses misses;
};

bool resolve(std::uint64_t word, Range& range) {
  thread_local RangeCache cache;
  const std::uint64_t epoch = g_free_epoch.load(std::memory_order_relaxed);
  if (cache.epoch != epoch) {
    cache.hits = {}, cache.next_hit = 0, cache.misses.clear();
    cache.epoch = epoch;
  }
  CUOVERLAP_COUNT(words);
  for (const Range& hit : cache.hits) {
    if (hit.size != 0 && word - hit.base < hit.size) return CUOVERLAP_COUNT(hits), range = hit, true;
  }
  if (cache.misses.contains(word)) return CUOVERLAP_COUNT(misses), false;
  CUOVERLAP_COUNT(queries);
  CUOVERLAP_TIMED(query_ns);
  CUdeviceptr base = 0;
  std::size_t size = 0;
  if (g_address_range != nullptr && g_address_range(&base, &size, word) == CUDA_SUCCESS && size != 0) {
    CUOVERLAP_COUNT(found);
    range = {static_cast<std::uint64_t>(base), static_cast<std::uint64_t>(size)};
    cache.hits[cache.next_hit++ % RangeCache::kSlots] = range;
    return true;
  }
  cache.misses.insert(word);
  return false;
}

void submit(const OpBufferRow* rows, std::size_t count) {
  if (count == 0) return;
  CUOVERLAP_TIMED(submit_ns);
  std::vector<OpBufferRow> full;
  {
    std::lock_guard<std::mutex> lock(g_rows_mutex);
    g_rows->insert(g_rows->end(), rows, rows + count);
    if (g_rows->size() < kBatchRows) return;
    full.swap(*g_rows);
  }
  if (!g_detached.load()) g_writer->submitOpBuffers(std::move(full));
}

void submitRange(std::uint32_t correlation, std::uint64_t address, std::uint64_t bytes, BufferAccess access) {
  if (address == 0 || bytes == 0) return;
  const OpBufferRow row{correlation, address, bytes, static_cast<std::uint8_t>(access)};
  submit(&row, 1);
}

// Each distinct argument word that points into an allocation: from the pointer to the allocation's
// end (a kernel handed a slice of a buffer gets the slice's start; the analyzer tells slices of one
// allocation apart by it).
void submitKernel(std::uint32_t correlation, CUfunction function, void** params, void** extra) {
  if (function == nullptr) return;
  CUOVERLAP_COUNT(launches);
  CUOVERLAP_TIMED(launch_ns);
  const std::vector<ParamSlot>& layout = layoutOf(function);
  std::array<OpBufferRow, kMaxArgumentWords> rows{};
  std::size_t count = 0;
  auto add = [&](std::uint64_t word) {
    Range range;
    if (!resolve(word, range)) return;
    for (std::size_t i = 0; i < count; ++i) {
      if (rows[i].address == word) return;
    }
    rows[count++] = {correlation, word, range.base + range.size - word,
                     static_cast<std::uint8_t>(BufferAccess::kKernelArgument)};
  };
  if (params != nullptr) {
    forEachArgumentAddress(layout, params, add);
  } else if (extra != nullptr) {
    const void* buffer = nullptr;
    std::size_t size = 0;
    for (std::size_t i = 0; i < 16 && extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
      if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER) buffer = extra[i + 1];
      if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE && extra[i + 1] != nullptr) {
        size = *static_cast<const std::size_t*>(extra[i + 1]);
      }
    }
    forEachPackedArgumentAddress(layout, buffer, size, add);
  }
  submit(rows.data(), count);
}

template <typename Params>
const Params& params(const CUpti_CallbackData& data) {
  return *static_cast<const Params*>(data.functionParams);
}

// The source read and the destination written, in one submission.
void copy(std::uint32_t correlation, std::uint64_t dst, std::uint64_t src, std::size_t bytes) {
  if (bytes == 0) return;
  std::array<OpBufferRow, 2> rows{};
  std::size_t count = 0;
  if (src != 0) rows[count++] = {correlation, src, bytes, static_cast<std::uint8_t>(BufferAccess::kRead)};
  if (dst != 0) rows[count++] = {correlation, dst, bytes, static_cast<std::uint8_t>(BufferAccess::kWrite)};
  submit(rows.data(), count);
}

constexpr CUpti_CallbackId kCallbacks[] = {
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel, CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpy, CUPTI_DRIVER_TRACE_CBID_cuMemcpy_ptds,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync, CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2, CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2_ptds,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2, CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2_ptds,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoD_v2, CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoD_v2_ptds,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2, CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2, CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2, CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuMemsetD8_v2, CUPTI_DRIVER_TRACE_CBID_cuMemsetD8_v2_ptds,
    CUPTI_DRIVER_TRACE_CBID_cuMemsetD16_v2, CUPTI_DRIVER_TRACE_CBID_cuMemsetD16_v2_ptds,
    CUPTI_DRIVER_TRACE_CBID_cuMemsetD32_v2, CUPTI_DRIVER_TRACE_CBID_cuMemsetD32_v2_ptds,
    CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async, CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuMemsetD16Async, CUPTI_DRIVER_TRACE_CBID_cuMemsetD16Async_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async, CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2, CUPTI_DRIVER_TRACE_CBID_cuMemFreeHost,
    CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync, CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuMemHostUnregister, CUPTI_DRIVER_TRACE_CBID_cuMemUnmap,
    CUPTI_DRIVER_TRACE_CBID_cuModuleUnload, CUPTI_DRIVER_TRACE_CBID_cuLibraryUnload,
    CUPTI_DRIVER_TRACE_CBID_cuCtxDestroy, CUPTI_DRIVER_TRACE_CBID_cuCtxDestroy_v2,
    CUPTI_DRIVER_TRACE_CBID_cuDevicePrimaryCtxReset, CUPTI_DRIVER_TRACE_CBID_cuDevicePrimaryCtxReset_v2,
    CUPTI_DRIVER_TRACE_CBID_cuDevicePrimaryCtxRelease, CUPTI_DRIVER_TRACE_CBID_cuDevicePrimaryCtxRelease_v2};

}  // namespace

std::string enable(CUpti_SubscriberHandle subscriber, WriterThread& writer) {
  g_func_param_info = driverFunction<FuncParamInfo>("cuFuncGetParamInfo");
  g_kernel_param_info = driverFunction<KernelParamInfo>("cuKernelGetParamInfo");
  g_address_range = driverFunction<AddressRange>("cuMemGetAddressRange_v2");
  if (g_address_range == nullptr) return "the driver has no cuMemGetAddressRange_v2";
  g_writer = &writer;
  std::size_t enabled = 0;
  for (CUpti_CallbackId id : kCallbacks) {
    enabled += CUOVERLAP_CUPTI(cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API, id));
  }
  return enabled == 0 ? "no driver callback could be enabled" : "";
}

void setRecording(bool on) { g_recording.store(on); }

void onDriverCallback(CUpti_CallbackId id, const CUpti_CallbackData& data) {
#ifdef CUOVERLAP_OP_BUFFER_STATS
  if (g_stats_skip) return;
#endif
  if (data.callbackSite != CUPTI_API_ENTER || data.functionParams == nullptr || g_writer == nullptr) return;
  switch (id) {
    case CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemFreeHost:
    case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuMemHostUnregister:
    case CUPTI_DRIVER_TRACE_CBID_cuMemUnmap:
      g_free_epoch.fetch_add(1, std::memory_order_relaxed);  // recording or not: the caches go stale
      return;
    case CUPTI_DRIVER_TRACE_CBID_cuModuleUnload:
    case CUPTI_DRIVER_TRACE_CBID_cuLibraryUnload:
    case CUPTI_DRIVER_TRACE_CBID_cuCtxDestroy:
    case CUPTI_DRIVER_TRACE_CBID_cuCtxDestroy_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuDevicePrimaryCtxReset:
    case CUPTI_DRIVER_TRACE_CBID_cuDevicePrimaryCtxReset_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuDevicePrimaryCtxRelease:
    case CUPTI_DRIVER_TRACE_CBID_cuDevicePrimaryCtxRelease_v2:
      g_layouts.newEpoch();  // function handles may be handed out again
      g_free_epoch.fetch_add(1, std::memory_order_relaxed);  // and the memory freed with the code
      return;
    default:
      break;
  }
  // Outside a capture window nothing is looked up (no argument words, no driver queries).
  if (!g_recording.load(std::memory_order_relaxed)) return;
  const std::uint32_t c = data.correlationId;
  switch (id) {
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz: {
      const auto& p = params<cuLaunchKernel_params>(data);
      return submitKernel(c, p.f, p.kernelParams, p.extra);
    }
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz: {
      const auto& p = params<cuLaunchKernelEx_params>(data);
      return submitKernel(c, p.f, p.kernelParams, p.extra);
    }
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz: {
      const auto& p = params<cuLaunchCooperativeKernel_params>(data);
      return submitKernel(c, p.f, p.kernelParams, nullptr);
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpy:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpy_ptds: {
      const auto& p = params<cuMemcpy_params>(data);
      return copy(c, p.dst, p.src, p.ByteCount);
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync_ptsz: {
      const auto& p = params<cuMemcpyAsync_params>(data);
      return copy(c, p.dst, p.src, p.ByteCount);
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2_ptds: {
      const auto& p = params<cuMemcpyHtoD_v2_params>(data);
      return copy(c, p.dstDevice, reinterpret_cast<std::uint64_t>(p.srcHost), p.ByteCount);
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2_ptds: {
      const auto& p = params<cuMemcpyDtoH_v2_params>(data);
      return copy(c, reinterpret_cast<std::uint64_t>(p.dstHost), p.srcDevice, p.ByteCount);
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoD_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoD_v2_ptds: {
      const auto& p = params<cuMemcpyDtoD_v2_params>(data);
      return copy(c, p.dstDevice, p.srcDevice, p.ByteCount);
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2_ptsz: {
      const auto& p = params<cuMemcpyHtoDAsync_v2_params>(data);
      return copy(c, p.dstDevice, reinterpret_cast<std::uint64_t>(p.srcHost), p.ByteCount);
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2_ptsz: {
      const auto& p = params<cuMemcpyDtoHAsync_v2_params>(data);
      return copy(c, reinterpret_cast<std::uint64_t>(p.dstHost), p.srcDevice, p.ByteCount);
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoDAsync_v2_ptsz: {
      const auto& p = params<cuMemcpyDtoDAsync_v2_params>(data);
      return copy(c, p.dstDevice, p.srcDevice, p.ByteCount);
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD8_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD8_v2_ptds: {
      const auto& p = params<cuMemsetD8_v2_params>(data);
      return submitRange(c, p.dstDevice, p.N, BufferAccess::kWrite);
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD16_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD16_v2_ptds: {
      const auto& p = params<cuMemsetD16_v2_params>(data);
      return submitRange(c, p.dstDevice, p.N * 2, BufferAccess::kWrite);
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD32_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD32_v2_ptds: {
      const auto& p = params<cuMemsetD32_v2_params>(data);
      return submitRange(c, p.dstDevice, p.N * 4, BufferAccess::kWrite);
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async_ptsz: {
      const auto& p = params<cuMemsetD8Async_params>(data);
      return submitRange(c, p.dstDevice, p.N, BufferAccess::kWrite);
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD16Async:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD16Async_ptsz: {
      const auto& p = params<cuMemsetD16Async_params>(data);
      return submitRange(c, p.dstDevice, p.N * 2, BufferAccess::kWrite);
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async:
    case CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async_ptsz: {
      const auto& p = params<cuMemsetD32Async_params>(data);
      return submitRange(c, p.dstDevice, p.N * 4, BufferAccess::kWrite);
    }
    default:
      return;
  }
}

void flush() {
#ifdef CUOVERLAP_OP_BUFFER_STATS
  std::fprintf(stderr,
               "cuoverlap: op buffer stats: launches %llu, words %llu (hits %llu, known non-addresses %llu, "
               "driver queries %llu, found %llu), layout queries %llu; ns: launches %llu, queries %llu, "
               "layouts %llu, submits %llu\n",
               static_cast<unsigned long long>(g_stats.launches.load()), static_cast<unsigned long long>(g_stats.words.load()),
               static_cast<unsigned long long>(g_stats.hits.load()), static_cast<unsigned long long>(g_stats.misses.load()),
               static_cast<unsigned long long>(g_stats.queries.load()), static_cast<unsigned long long>(g_stats.found.load()),
               static_cast<unsigned long long>(g_stats.layout_queries.load()),
               static_cast<unsigned long long>(g_stats.launch_ns.load()), static_cast<unsigned long long>(g_stats.query_ns.load()),
               static_cast<unsigned long long>(g_stats.layout_ns.load()), static_cast<unsigned long long>(g_stats.submit_ns.load()));
#endif
  std::vector<OpBufferRow> rest;
  {
    std::lock_guard<std::mutex> lock(g_rows_mutex);
    rest.swap(*g_rows);
  }
  if (!rest.empty() && g_writer != nullptr && !g_detached.load()) g_writer->submitOpBuffers(std::move(rest));
}

void detachInForkedChild() { g_detached.store(true); }

}  // namespace cuoverlap::collector::op_buffers
