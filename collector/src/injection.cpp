// Entry points called by the CUDA driver (CUDA_INJECTION64_PATH) and by NVTX
// (NVTX_INJECTION64_PATH). The process-lifecycle hooks are in lifecycle.cpp.
// Nothing here may exit, abort or throw into the host program.
#include "collector.h"
#include "cupti/activity_tracing.h"
#include "lifecycle.h"

namespace cuoverlap::collector {
namespace {

bool startWithHooks() {
  static bool tracing = [] {
    bool started = startCollectorOnce();
    if (started) installLifecycleHooks();
    return started;
  }();
  return tracing;
}

}  // namespace
}  // namespace cuoverlap::collector

extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {
  cuoverlap::collector::startWithHooks();
  return 1;  // the program runs either way
}

// Returning 0 turns NVTX calls into no-ops when the process is not traced.
extern "C" __attribute__((visibility("default"))) int InitializeInjectionNvtx2(
    const void* get_export_table) {
  if (!cuoverlap::collector::startWithHooks()) return 0;
  return cuoverlap::collector::activity::initializeNvtx(get_export_table) ? 1 : 0;
}
