#include "cupti/capture_triggers.h"

#include <nvtx3/nvToolsExt.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>

#include <generated_nvtx_meta.h>

#include "cupti/activity_tracing.h"
#include "cupti/cupti_check.h"

namespace cuoverlap::collector::activity {
namespace {

std::atomic<CaptureWindow*> g_window{nullptr};

constexpr CUpti_CallbackId kNvtxTriggers[] = {
    CUPTI_CBID_NVTX_nvtxRangePushA,  CUPTI_CBID_NVTX_nvtxRangePushEx, CUPTI_CBID_NVTX_nvtxRangePop,
    CUPTI_CBID_NVTX_nvtxRangeStartA, CUPTI_CBID_NVTX_nvtxRangeStartEx, CUPTI_CBID_NVTX_nvtxRangeEnd};

std::uint64_t threadId() { return static_cast<std::uint64_t>(syscall(SYS_gettid)); }

// The ASCII message of an event's attributes; nullptr for a registered or wide string.
const char* asciiMessage(const nvtxEventAttributes_t* attributes) {
  if (attributes == nullptr || attributes->messageType != NVTX_MESSAGE_TYPE_ASCII) return nullptr;
  return attributes->message.ascii;
}

WindowChange onNvtx(CaptureWindow& window, CUpti_CallbackId id, const CUpti_NvtxData& nvtx) {
  const std::uint64_t now = timestampNs();
  const void* params = nvtx.functionParams;
  switch (id) {
    case CUPTI_CBID_NVTX_nvtxRangePushA:
      return window.onRangePush(threadId(), static_cast<const nvtxRangePushA_params*>(params)->message, now);
    case CUPTI_CBID_NVTX_nvtxRangePushEx:
      return window.onRangePush(
          threadId(), asciiMessage(static_cast<const nvtxRangePushEx_params*>(params)->eventAttrib), now);
    case CUPTI_CBID_NVTX_nvtxRangePop: return window.onRangePop(threadId(), now);
    default: break;
  }
  // Start/end: the id nvtxRangeStart returned (functionReturnValue) names the instance.
  if (id == CUPTI_CBID_NVTX_nvtxRangeEnd) {
    return window.onRangeEnd(static_cast<const nvtxRangeEnd_params*>(params)->id, now);
  }
  if (nvtx.functionReturnValue == nullptr) return WindowChange::kNone;
  const auto range_id = *static_cast<const std::uint64_t*>(nvtx.functionReturnValue);
  if (id == CUPTI_CBID_NVTX_nvtxRangeStartA) {
    return window.onRangeStart(range_id, static_cast<const nvtxRangeStartA_params*>(params)->message, now);
  }
  if (id == CUPTI_CBID_NVTX_nvtxRangeStartEx) {
    return window.onRangeStart(
        range_id, asciiMessage(static_cast<const nvtxRangeStartEx_params*>(params)->eventAttrib), now);
  }
  return WindowChange::kNone;
}

// cudaProfilerStart opens once it has returned, cudaProfilerStop closes as it is entered; the
// runtime's calls reach the driver's too, and a second open or close changes nothing.
WindowChange onProfilerApi(CaptureWindow& window, bool start, const CUpti_CallbackData& call) {
  if (start && call.callbackSite == CUPTI_API_EXIT) return window.onProfilerStart(timestampNs());
  if (!start && call.callbackSite == CUPTI_API_ENTER) return window.onProfilerStop(timestampNs());
  return WindowChange::kNone;
}

}  // namespace

void applyWindowChange(WindowChange change) {
  if (change == WindowChange::kOpen) setRecording(true);
  if (change == WindowChange::kClose) setRecording(false);
}

void attachCaptureWindow(CaptureWindow& window) {
  g_window.store(&window);
  CUpti_SubscriberHandle handle = subscriber();
  switch (window.spec().kind) {
    case schema::CaptureKind::kNvtx:
      for (CUpti_CallbackId id : kNvtxTriggers) {
        CUOVERLAP_CUPTI(cuptiEnableCallback(1, handle, CUPTI_CB_DOMAIN_NVTX, id));
      }
      break;
    case schema::CaptureKind::kCudaProfilerApi:
      for (CUpti_CallbackId id : {CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000,
                                  CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000}) {
        CUOVERLAP_CUPTI(cuptiEnableCallback(1, handle, CUPTI_CB_DOMAIN_RUNTIME_API, id));
      }
      for (CUpti_CallbackId id : {CUPTI_DRIVER_TRACE_CBID_cuProfilerStart, CUPTI_DRIVER_TRACE_CBID_cuProfilerStop}) {
        CUOVERLAP_CUPTI(cuptiEnableCallback(1, handle, CUPTI_CB_DOMAIN_DRIVER_API, id));
      }
      break;
    default: break;
  }
}

void onCaptureCallback(CUpti_CallbackDomain domain, CUpti_CallbackId id, const void* data) {
  CaptureWindow* window = g_window.load(std::memory_order_acquire);
  if (window == nullptr) return;
  WindowChange change = WindowChange::kNone;
  if (domain == CUPTI_CB_DOMAIN_NVTX) {
    change = onNvtx(*window, id, *static_cast<const CUpti_NvtxData*>(data));
  } else if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
    const bool start = id == CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000;
    if (start || id == CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000) {
      change = onProfilerApi(*window, start, *static_cast<const CUpti_CallbackData*>(data));
    }
  } else if (domain == CUPTI_CB_DOMAIN_DRIVER_API) {
    const bool start = id == CUPTI_DRIVER_TRACE_CBID_cuProfilerStart;
    if (start || id == CUPTI_DRIVER_TRACE_CBID_cuProfilerStop) {
      change = onProfilerApi(*window, start, *static_cast<const CUpti_CallbackData*>(data));
    }
  }
  applyWindowChange(change);
}

}  // namespace cuoverlap::collector::activity
