#include "cupti/unified_memory.h"

#include <cupti.h>

#include <cstdio>
#include <string>

#include "cupti/cupti_check.h"

namespace cuoverlap::collector::activity {
namespace {

constexpr CUpti_ActivityUnifiedMemoryCounterKind kCounters[] = {
    CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_HTOD,
    CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_DTOH,
    CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_DTOD,
    CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_GPU_PAGE_FAULT,
    CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_CPU_PAGE_FAULT_COUNT,
    CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_THRASHING,
    CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_REMOTE_MAP,
};
constexpr const char* kCounterNames[] = {
    "HtoD migrations", "DtoH migrations", "DtoD migrations", "GPU page faults", "CPU page faults",
    "thrashing", "remote maps",
};
constexpr std::size_t kCount = sizeof kCounters / sizeof kCounters[0];

CUpti_ActivityUnifiedMemoryCounterConfig configFor(CUpti_ActivityUnifiedMemoryCounterKind kind) {
  CUpti_ActivityUnifiedMemoryCounterConfig config{};
  // Scope and device are ignored since CUDA 7.0 but must be valid values.
  config.scope = CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_SCOPE_PROCESS_SINGLE_DEVICE;
  config.kind = kind;
  config.deviceId = 0;
  config.enable = 1;
  return config;
}

std::string resultText(CUptiResult result) {
  const char* text = nullptr;
  if (cuptiGetResultString(result, &text) != CUPTI_SUCCESS || text == nullptr) text = "unknown";
  return std::string(text) + " (" + std::to_string(static_cast<int>(result)) + ")";
}

}  // namespace

UnifiedMemoryState enableUnifiedMemory(bool at_context) {
  CUpti_ActivityUnifiedMemoryCounterConfig all[kCount];
  for (std::size_t i = 0; i < kCount; ++i) all[i] = configFor(kCounters[i]);
  CUptiResult result = cuptiActivityConfigureUnifiedMemoryCounter(all, kCount);
  if (result == CUPTI_ERROR_NOT_INITIALIZED && !at_context) return UnifiedMemoryState::kRetryAtContext;
  std::string refused;
  std::size_t on = kCount;
  if (result != CUPTI_SUCCESS) {  // some kinds unsupported here: keep the others
    on = 0;
    for (std::size_t i = 0; i < kCount; ++i) {
      if (CUOVERLAP_CUPTI_QUIET(cuptiActivityConfigureUnifiedMemoryCounter(&all[i], 1))) {
        ++on;
      } else {
        refused += std::string(refused.empty() ? "" : ", ") + kCounterNames[i];
      }
    }
  }
  if (on > 0) {
    // Measured on an H100 (driver 580): before the first context the enable says NOT_READY.
    const CUptiResult enabled = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER);
    if (enabled == CUPTI_ERROR_NOT_READY && !at_context) return UnifiedMemoryState::kRetryAtContext;
    if (enabled != CUPTI_SUCCESS) {
      result = enabled;
      on = 0;
    }
  }
  if (on == 0) {
    std::fprintf(stderr, "cuoverlap: warning: unified-memory counters are not available here (%s): "
                 "managed-memory page faults and migrations are not recorded\n",
                 resultText(result).c_str());
    return UnifiedMemoryState::kUnavailable;
  }
  if (!refused.empty()) {
    std::fprintf(stderr, "cuoverlap: warning: this system records no unified-memory %s (%s)\n",
                 refused.c_str(), resultText(result).c_str());
  }
  return UnifiedMemoryState::kOn;
}

}  // namespace cuoverlap::collector::activity
