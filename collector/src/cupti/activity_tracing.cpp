#include "cupti/activity_tracing.h"

#include <time.h>

#include <atomic>
#include <cstdio>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_set>
#include <vector>

#include "cupti/api_selection.h"
#include "cupti/capture_triggers.h"
#include "cupti/cupti_check.h"
#include "cupti/driver_function.h"
#include "cupti/gpu_metrics.h"
#include "cupti/op_buffers.h"
#include "cupti/unified_memory.h"
#include "pcie_link.h"

// Exported by libcupti but not declared in CUDA 13.0's headers.
extern "C" CUptiResult CUPTIAPI cuptiNvtxInitialize2(void* get_export_table);

namespace cuoverlap::collector::activity {
namespace {

// CUPTI record layouts used by activity_translation.cpp are those of CUPTI 13.0.
constexpr std::uint32_t kMinimumCuptiVersion = 130000;

BufferPool* g_pool = nullptr;
WriterThread* g_writer = nullptr;
CUpti_SubscriberHandle g_subscriber = nullptr;
std::atomic<bool> g_detached{false};
std::atomic<bool> g_unified_memory_at_context{false};  // configure the counters at the first context
std::atomic<std::uint64_t> g_dropped{0}, g_completed{0}, g_callback_ns{0};

std::uint64_t monotonicNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000u + static_cast<std::uint64_t>(ts.tv_nsec);
}

void CUPTIAPI onBufferRequested(std::uint8_t** buffer, std::size_t* size, std::size_t* max_records) {
  std::uint64_t begin = monotonicNs();
  // How many buffers this thread asked for before: its buffers grow from small (buffer_pool.h).
  thread_local unsigned t_requests = 0;
  *max_records = 0;
  *size = 0;
  *buffer = g_detached.load(std::memory_order_relaxed)
                ? nullptr
                : g_pool->acquire(g_pool->sizeForRequest(t_requests++), *size);
  g_callback_ns.fetch_add(monotonicNs() - begin, std::memory_order_relaxed);
}

void CUPTIAPI onBufferCompleted(CUcontext context, std::uint32_t stream_id, std::uint8_t* buffer,
                                std::size_t, std::size_t valid_size) {
  std::uint64_t begin = monotonicNs();
  std::size_t dropped = 0;
  if (CUOVERLAP_CUPTI(cuptiActivityGetNumDroppedRecords(context, stream_id, &dropped))) {
    g_dropped.fetch_add(dropped, std::memory_order_relaxed);
  }
  g_completed.fetch_add(1, std::memory_order_relaxed);
  // In a forked child the buffer is left alone: the parent's writer does not exist here.
  if (buffer != nullptr && !g_detached.load(std::memory_order_relaxed)) {
    g_writer->submit(buffer, valid_size);
  }
  g_callback_ns.fetch_add(monotonicNs() - begin, std::memory_order_relaxed);
}

// Subscribing with a callback that enables no domain costs nothing per API call; it exists so
// that a second CUPTI tool in the process is detected instead of silently corrupting both traces.
// Also the one callback we do enable: nvtxRangeStart*, to learn which marker ids are start/end
// ranges (CUPTI's marker records do not say). Costs a lock per nvtxRangeStart call only.
constexpr CUpti_CallbackId kNvtxRangeStartCallbacks[] = {
    CUPTI_CBID_NVTX_nvtxRangeStartA, CUPTI_CBID_NVTX_nvtxRangeStartW,
    CUPTI_CBID_NVTX_nvtxRangeStartEx, CUPTI_CBID_NVTX_nvtxDomainRangeStartEx};

bool isNvtxRangeStart(CUpti_CallbackId id) {
  for (CUpti_CallbackId start : kNvtxRangeStartCallbacks) {
    if (id == start) return true;
  }
  return false;
}

std::mutex g_range_mutex;
bool g_gpu_metrics = false;  // set before the callback is enabled
std::unordered_set<std::uint32_t>* g_start_end_ranges = new std::unordered_set<std::uint32_t>();

// And, only when CUPTI refused the unified-memory counters before the driver had a context, the
// first context's creation, to configure them then.
// With GPU metrics, every context's creation: its device is sampled from then on.
void CUPTIAPI onCallback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId id, const void* data) {
  if (domain == CUPTI_CB_DOMAIN_RESOURCE && id == CUPTI_CBID_RESOURCE_CONTEXT_CREATED) {
    if (g_unified_memory_at_context.exchange(false)) enableUnifiedMemory(true);
    const auto* resource = static_cast<const CUpti_ResourceData*>(data);
    std::uint32_t device = 0;
    if (g_gpu_metrics && resource != nullptr && resource->context != nullptr &&
        CUOVERLAP_CUPTI_QUIET(cuptiGetDeviceId(resource->context, &device))) {
      gpu_metrics::noteContext(device);
    }
  }
  if (domain == CUPTI_CB_DOMAIN_RESOURCE && id == CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING && g_gpu_metrics) {
    const auto* resource = static_cast<const CUpti_ResourceData*>(data);
    std::uint32_t device = 0;
    if (resource != nullptr && resource->context != nullptr &&
        CUOVERLAP_CUPTI_QUIET(cuptiGetDeviceId(resource->context, &device))) {
      gpu_metrics::noteContextEnding(device);
    }
  }
  if (data == nullptr) return;
  if (domain == CUPTI_CB_DOMAIN_DRIVER_API) {
    op_buffers::onDriverCallback(id, *static_cast<const CUpti_CallbackData*>(data));
  }
  onCaptureCallback(domain, id, data);
  if (domain != CUPTI_CB_DOMAIN_NVTX || !isNvtxRangeStart(id)) return;
  const auto* nvtx = static_cast<const CUpti_NvtxData*>(data);
  if (nvtx->functionReturnValue == nullptr) return;
  std::uint64_t range_id = *static_cast<const std::uint64_t*>(nvtx->functionReturnValue);
  std::lock_guard<std::mutex> lock(g_range_mutex);
  g_start_end_ranges->insert(static_cast<std::uint32_t>(range_id));
}


// Recorded from the start, window or not: a device/context/stream is created once, often before
// any window, and the analysis needs it; marker records let the writer keep the NVTX ranges that
// open and close a window whole (capture_window.h). MARKER before MARKER_DATA. Allocations
// (MEMORY2, unless CUOVERLAP_MEMORY_USAGE=0) too: a window's ops touch memory allocated before it.
constexpr CUpti_ActivityKind kAlwaysKinds[] = {
    CUPTI_ACTIVITY_KIND_DEVICE, CUPTI_ACTIVITY_KIND_CONTEXT, CUPTI_ACTIVITY_KIND_STREAM,
    CUPTI_ACTIVITY_KIND_MARKER, CUPTI_ACTIVITY_KIND_MARKER_DATA};
// Recorded only while a capture window is open (always without one).
constexpr CUpti_ActivityKind kWindowKinds[] = {
    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
    CUPTI_ACTIVITY_KIND_MEMCPY2,           CUPTI_ACTIVITY_KIND_MEMSET,
    CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,   CUPTI_ACTIVITY_KIND_CUDA_EVENT,
    CUPTI_ACTIVITY_KIND_OVERHEAD};
// Every call (`--api all`): enabling these kinds overrides per-call choices.
constexpr CUpti_ActivityKind kAllApiKinds[] = {CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_ACTIVITY_KIND_DRIVER};

// Lean mode: each runtime/driver callback id whose name api_selection.h keeps is enabled on its
// own (cuptiActivityEnableRuntimeApi / EnableDriverApi), without the RUNTIME/DRIVER kinds. The ids
// are looked up once and kept, so that a capture window toggles them without asking for names.
std::vector<CUpti_CallbackId> g_lean_runtime, g_lean_driver;
ApiTracing g_api = ApiTracing::kLean;
std::mutex g_recording_mutex;
bool g_recording = false;

void selectLeanApis() {
  for (int id = 1; id < static_cast<int>(CUPTI_RUNTIME_TRACE_CBID_SIZE); ++id) {
    const char* name = nullptr;
    auto cbid = static_cast<CUpti_CallbackId>(id);
    if (CUOVERLAP_CUPTI_QUIET(cuptiGetCallbackName(CUPTI_CB_DOMAIN_RUNTIME_API, cbid, &name)) &&
        name != nullptr && isLeanRuntimeApi(name)) {
      g_lean_runtime.push_back(cbid);
    }
  }
  for (int id = 1; id < static_cast<int>(CUPTI_DRIVER_TRACE_CBID_SIZE); ++id) {
    const char* name = nullptr;
    auto cbid = static_cast<CUpti_CallbackId>(id);
    if (CUOVERLAP_CUPTI_QUIET(cuptiGetCallbackName(CUPTI_CB_DOMAIN_DRIVER_API, cbid, &name)) &&
        name != nullptr && isLeanDriverApi(name)) {
      g_lean_driver.push_back(cbid);
    }
  }
}

// Returns how many lean callback ids were switched.
std::size_t switchApis(bool on) {
  if (g_api == ApiTracing::kAll) {
    for (CUpti_ActivityKind kind : kAllApiKinds) {
      CUOVERLAP_CUPTI(on ? cuptiActivityEnable(kind) : cuptiActivityDisable(kind));
    }
    return 0;
  }
  std::size_t switched = 0;
  const std::uint8_t enable = on ? 1 : 0;
  for (CUpti_CallbackId cbid : g_lean_runtime) switched += CUOVERLAP_CUPTI(cuptiActivityEnableRuntimeApi(cbid, enable));
  for (CUpti_CallbackId cbid : g_lean_driver) switched += CUOVERLAP_CUPTI(cuptiActivityEnableDriverApi(cbid, enable));
  return switched;
}

// Lean API ids are enabled once, at the start, and never switched: switched on only when a
// window opened (H100, driver 580.159.04, CUPTI 13.0), they recorded no call at all while the
// window's kernels were recorded. With a capture window the writer drops the calls outside it
// (TraceWriter::setApiFilter).
bool g_lean_always_on = false;

std::size_t switchRecording(bool on) {
  for (CUpti_ActivityKind kind : kWindowKinds) {
    // A kind this driver cannot record is logged and skipped; the others still work.
    CUOVERLAP_CUPTI(on ? cuptiActivityEnable(kind) : cuptiActivityDisable(kind));
  }
  return g_lean_always_on ? 0 : switchApis(on);
}

}  // namespace

std::string subscribe() {
  std::uint32_t version = 0;
  if (!CUOVERLAP_CUPTI(cuptiGetVersion(&version))) return "CUPTI is not usable";
  if (version < kMinimumCuptiVersion) {
    return "CUPTI API version " + std::to_string(version) + " is older than 13.0 (" +
           std::to_string(kMinimumCuptiVersion) + ")";
  }
  char other[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN * 2] = {};
  CUpti_SubscriberParams params{};
  params.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
  params.subscriberName = "cuoverlap";
  params.oldSubscriberName = other;
  params.oldSubscriberSize = sizeof other;
  CUptiResult result = cuptiSubscribe_v2(&g_subscriber, onCallback, nullptr, &params);
  if (result == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
    // CUPTI names an unnamed subscriber "CUPTI for <not provided>": no help to the user.
    std::string named = other;
    std::string name = !named.empty() && named.find("<not provided>") == std::string::npos
                           ? " (" + named + ")" : "";
    return "another CUPTI tool" + name + " is already attached: nsys, ncu, a framework profiler or "
           "the program itself";
  }
  if (!CUOVERLAP_CUPTI(result)) return "cuptiSubscribe failed";
  return "";
}

void unsubscribe() {
  if (g_subscriber != nullptr) CUOVERLAP_CUPTI(cuptiUnsubscribe(g_subscriber));
  g_subscriber = nullptr;
}

void configureBuffers(const CollectorOptions& options) {
  std::size_t device_bytes = options.device_buffer_bytes, pool_limit = options.device_buffer_pool;
  std::size_t value_size = sizeof(std::size_t);
  CUOVERLAP_CUPTI(cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE, &value_size,
                                            &device_bytes));
  CUOVERLAP_CUPTI(cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_POOL_LIMIT,
                                            &value_size, &pool_limit));
  // OS thread ids (gettid), as nsys records them; CUPTI's default is pthread_self(), whose low 24
  // bits (what globalTid keeps) can collide between threads.
  CUOVERLAP_CUPTI(cuptiSetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM));
  std::uint8_t zeroed = 1;
  std::size_t zeroed_size = sizeof zeroed;
  CUOVERLAP_CUPTI(cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER,
                                            &zeroed_size, &zeroed));
  // Only set when asked otherwise: 1 is CUPTI 13.0's default.
  if (!options.per_thread_buffers) {
    std::uint8_t per_thread = 0;
    std::size_t per_thread_size = sizeof per_thread;
    CUOVERLAP_CUPTI(cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_PER_THREAD_ACTIVITY_BUFFER,
                                              &per_thread_size, &per_thread));
  }
}

std::string enable(BufferPool& pool, WriterThread& writer, const CollectorOptions& options,
                   std::size_t& lean_calls) {
  lean_calls = 0;
  g_pool = &pool;
  g_writer = &writer;
  if (!CUOVERLAP_CUPTI(cuptiActivityRegisterCallbacks(onBufferRequested, onBufferCompleted))) {
    return "cannot register activity buffers";
  }
  for (CUpti_ActivityKind kind : kAlwaysKinds) CUOVERLAP_CUPTI(cuptiActivityEnable(kind));
  if (options.memory_usage) CUOVERLAP_CUPTI(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMORY2));
  if (enableUnifiedMemory(false) == UnifiedMemoryState::kRetryAtContext) {
    g_unified_memory_at_context.store(true);
    CUOVERLAP_CUPTI(cuptiEnableCallback(1, g_subscriber, CUPTI_CB_DOMAIN_RESOURCE,
                                        CUPTI_CBID_RESOURCE_CONTEXT_CREATED));
  }
  if (options.gpu_metrics_interval_ns > 0) {
    g_gpu_metrics = true;
    CUOVERLAP_CUPTI(cuptiEnableCallback(1, g_subscriber, CUPTI_CB_DOMAIN_RESOURCE,
                                        CUPTI_CBID_RESOURCE_CONTEXT_CREATED));
    CUOVERLAP_CUPTI(cuptiEnableCallback(1, g_subscriber, CUPTI_CB_DOMAIN_RESOURCE,
                                        CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING));
  }
  if (options.op_buffers) {
    const std::string why = op_buffers::enable(g_subscriber, writer);
    if (!why.empty() && !options.quiet) {
      std::fprintf(stderr, "cuoverlap: warning: not recording which memory each op touches: %s\n", why.c_str());
    }
  }
  g_api = options.api;
  if (g_api == ApiTracing::kLean) selectLeanApis();
  lean_calls = g_api == ApiTracing::kLean ? g_lean_runtime.size() + g_lean_driver.size() : 0;
  // With a capture window the rest waits for it to open (setRecording), except lean calls.
  if (!options.capture.active()) {
    setRecording(true);
  } else if (g_api == ApiTracing::kLean) {
    switchApis(true);
    g_lean_always_on = true;
  }
  if (options.cupti_flush_period_ms > 0) {
    CUOVERLAP_CUPTI(cuptiActivityFlushPeriod(options.cupti_flush_period_ms));
  }
  for (CUpti_CallbackId id : kNvtxRangeStartCallbacks) {
    CUOVERLAP_CUPTI(cuptiEnableCallback(1, g_subscriber, CUPTI_CB_DOMAIN_NVTX, id));
  }
  return "";
}

void setRecording(bool on) {
  std::lock_guard<std::mutex> lock(g_recording_mutex);
  if (g_recording == on || g_detached.load()) return;
  switchRecording(on);
  op_buffers::setRecording(on);
  g_recording = on;
}

bool initializeNvtx(const void* get_export_table) {
  return CUOVERLAP_CUPTI(cuptiNvtxInitialize2(const_cast<void*>(get_export_table)));
}

void flush(bool forced) {
  if (g_detached.load()) return;
  CUOVERLAP_CUPTI(cuptiActivityFlushAll(forced ? CUPTI_ACTIVITY_FLAG_FLUSH_FORCED : 0));
}

bool isStartEndRange(std::uint32_t marker_id) {
  std::lock_guard<std::mutex> lock(g_range_mutex);
  return g_start_end_ranges->erase(marker_id) != 0;
}

void detachInForkedChild() {
  g_detached.store(true);
  op_buffers::detachInForkedChild();
}

void flushOpBuffers() { op_buffers::flush(); }

CUpti_SubscriberHandle subscriber() { return g_subscriber; }

std::uint64_t timestampNs() {
  std::uint64_t ts = 0;
  CUOVERLAP_CUPTI(cuptiGetTimestamp(&ts));
  return ts;
}

std::uint64_t droppedRecords() { return g_dropped.load(); }
std::uint64_t completedBuffers() { return g_completed.load(); }
std::uint64_t callbackNs() { return g_callback_ns.load(); }

std::string cuptiVersion() {
  std::uint32_t version = 0;
  cuptiGetVersion(&version);
  return std::to_string(version);
}

std::string driverVersion() {
  auto* get_version = driverFunction<decltype(cuDriverGetVersion)>("cuDriverGetVersion");
  int version = 0;
  if (get_version == nullptr || !CUOVERLAP_DRIVER(get_version(&version))) return "unknown";
  return std::to_string(version);
}

bool synchronizeCurrentContext(std::chrono::milliseconds timeout) {
  auto* get_current = driverFunction<decltype(cuCtxGetCurrent)>("cuCtxGetCurrent");
  auto* set_current = driverFunction<decltype(cuCtxSetCurrent)>("cuCtxSetCurrent");
  auto* synchronize = driverFunction<decltype(cuCtxSynchronize)>("cuCtxSynchronize");
  if (get_current == nullptr || set_current == nullptr || synchronize == nullptr) return false;
  CUcontext context = nullptr;
  // No current context (the thread never used CUDA): nothing to wait for.
  if (!CUOVERLAP_DRIVER_QUIET(get_current(&context)) || context == nullptr) {
    return false;
  }
  struct Shared {
    std::mutex mutex;
    std::condition_variable cv;
    bool done = false;
  };
  auto shared = std::make_shared<Shared>();
  // Detached: a GPU that never finishes must not hold the process's exit.
  std::thread([=] {
    if (CUOVERLAP_DRIVER_QUIET(set_current(context))) (void)CUOVERLAP_DRIVER_QUIET(synchronize());
    std::lock_guard<std::mutex> lock(shared->mutex);
    shared->done = true;
    shared->cv.notify_all();
  }).detach();
  std::unique_lock<std::mutex> lock(shared->mutex);
  return shared->cv.wait_for(lock, timeout, [&] { return shared->done; });
}

void queryDevice(DeviceRow& row) {
  auto* get_device = driverFunction<decltype(cuDeviceGet)>("cuDeviceGet");
  auto* get_attribute = driverFunction<decltype(cuDeviceGetAttribute)>("cuDeviceGetAttribute");
  CUdevice device = 0;
  if (get_device == nullptr || get_attribute == nullptr) return;
  if (!CUOVERLAP_DRIVER(get_device(&device, static_cast<int>(row.id)))) return;
  int engines = 0, concurrent = 0;
  if (CUOVERLAP_DRIVER(get_attribute(&engines, CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT, device))) {
    row.async_engines = static_cast<std::uint32_t>(engines);
  }
  if (CUOVERLAP_DRIVER(get_attribute(&concurrent, CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS, device))) {
    row.concurrent_kernels = concurrent;
  }
  auto* get_bus_id = driverFunction<decltype(cuDeviceGetPCIBusId)>("cuDeviceGetPCIBusId");
  char bus_id[32] = {};
  if (get_bus_id != nullptr && CUOVERLAP_DRIVER(get_bus_id(bus_id, sizeof bus_id - 1, device))) {
    row.pci_bus_id = bus_id;
    const PcieLink link = queryPcieLink(row.pci_bus_id);
    row.pcie_generation = link.generation;
    row.pcie_width = link.width;
  }
}

}  // namespace cuoverlap::collector::activity
