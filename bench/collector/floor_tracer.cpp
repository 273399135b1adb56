// The benchmark's floor tracer: subscribes, enables the same activity kinds as the collector,
// hands CUPTI recycled buffers and throws every record away. Whatever it costs is CUPTI's own
// cost, which no collector enabling these kinds can go below.
//
// CUOVERLAP_FLOOR_KINDS picks the kinds:
//   all (default): the collector's kinds, every runtime and driver API call included;
//   gpu: GPU activity only (kernels, copies, memsets, and the device/context/stream records
//        that name them), no API call: the floor of any tracer that records what the GPU ran.
#include <cupti.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <mutex>
#include <vector>

namespace {

constexpr std::size_t kBufferBytes = 4u << 20;
std::mutex g_mutex;
std::vector<std::uint8_t*>* g_free = nullptr;

void CUPTIAPI onRequest(std::uint8_t** buffer, std::size_t* size, std::size_t* max_records) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_free->empty()) {
    *buffer = static_cast<std::uint8_t*>(std::aligned_alloc(64, kBufferBytes));
    std::memset(*buffer, 0, kBufferBytes);
  } else {
    *buffer = g_free->back();
    g_free->pop_back();
  }
  *size = kBufferBytes;
  *max_records = 0;
}

void CUPTIAPI onComplete(CUcontext, std::uint32_t, std::uint8_t* buffer, std::size_t, std::size_t valid) {
  std::memset(buffer, 0, valid);
  std::lock_guard<std::mutex> lock(g_mutex);
  g_free->push_back(buffer);
}

void CUPTIAPI onCallback(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*) {}

void flushAtExit() { cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED); }

constexpr CUpti_ActivityKind kGpuKinds[] = {
    CUPTI_ACTIVITY_KIND_DEVICE, CUPTI_ACTIVITY_KIND_CONTEXT, CUPTI_ACTIVITY_KIND_STREAM,
    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMCPY2,
    CUPTI_ACTIVITY_KIND_MEMSET};
constexpr CUpti_ActivityKind kApiKinds[] = {
    CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, CUPTI_ACTIVITY_KIND_CUDA_EVENT, CUPTI_ACTIVITY_KIND_RUNTIME,
    CUPTI_ACTIVITY_KIND_DRIVER, CUPTI_ACTIVITY_KIND_OVERHEAD};

// True for "all" (or unset), false for "gpu"; any other value ends the program: a benchmark run
// under a mistyped switch would measure the wrong floor.
bool withApiCalls() {
  const char* value = std::getenv("CUOVERLAP_FLOOR_KINDS");
  const std::string kinds = value == nullptr ? "all" : value;
  if (kinds == "all") return true;
  if (kinds == "gpu") return false;
  std::fprintf(stderr, "floor tracer: CUOVERLAP_FLOOR_KINDS must be 'all' or 'gpu', not '%s'\n", kinds.c_str());
  std::exit(2);
}

}  // namespace

extern "C" int InitializeInjection(void) {
  static bool done = false;
  if (done) return 1;
  done = true;
  const bool api_calls = withApiCalls();
  g_free = new std::vector<std::uint8_t*>();
  CUpti_SubscriberHandle subscriber;
  if (cuptiSubscribe(&subscriber, onCallback, nullptr) != CUPTI_SUCCESS) return 1;
  // Same buffer settings as the collector, so that the difference is the cost of keeping records.
  for (int i = 0; i < 8; ++i) {
    auto* buffer = static_cast<std::uint8_t*>(std::aligned_alloc(64, kBufferBytes));
    std::memset(buffer, 0, kBufferBytes);
    g_free->push_back(buffer);
  }
  std::size_t device_bytes = 8u << 20, pool_limit = 250, value_size = sizeof(std::size_t);
  cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE, &value_size, &device_bytes);
  cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_POOL_LIMIT, &value_size, &pool_limit);
  std::uint8_t zeroed = 1;
  std::size_t zeroed_size = sizeof zeroed;
  cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER, &zeroed_size, &zeroed);
  cuptiActivityRegisterCallbacks(onRequest, onComplete);
  for (CUpti_ActivityKind kind : kGpuKinds) cuptiActivityEnable(kind);
  if (api_calls) {
    for (CUpti_ActivityKind kind : kApiKinds) cuptiActivityEnable(kind);
  }
  cuptiActivityFlushPeriod(500);
  std::atexit(flushAtExit);
  return 1;
}
