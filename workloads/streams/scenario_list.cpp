#include "scenario.h"

namespace cuoverlap {

const std::vector<ScenarioInfo>& allScenarios() {
  static const std::vector<ScenarioInfo> scenarios = {
      {"serial", "default stream, synchronous cudaMemcpy, one buffer: single-stream, sync-memcpy", "serial"},
      {"pipeline2", "double buffering on 2 streams, pinned memory: copies hidden under kernels (clean)", "serial"},
      {"pipeline3", "triple buffering on 3 streams, pinned memory: near the ideal bound (clean)", "serial"},
      {"pageable", "the pipeline with cudaMemcpyAsync on malloc memory: pageable-memcpy", "serial"},
      {"nullstream-trap", "kernel on s1, on the legacy default stream, on s1: legacy-default-stream", ""},
      {"nonblocking", "the trap with cudaStreamNonBlocking streams: no serialization (clean)", ""},
      {"per-thread", "the trap built with --default-stream per-thread: no serialization (clean)", ""},
      {"event-dag", "copies on two streams joined by cudaStreamWaitEvent into a kernel stream (clean)", ""},
      {"event-dag-serialized", "event-dag plus one unnecessary wait: event-wait-serialization", ""},
      {"implicit-sync", "cudaMalloc/cudaFree/cudaMallocHost/cudaMemset in the loop: implicit-sync-call, sync-memset", "serial"},
      {"sync-in-loop", "cudaDeviceSynchronize after every tile: blocking-sync-call", "serial"},
      {"host-bound", "thousands of tiny kernels with host work between launches: host-launch-bound", "host-bound"},
      {"host-bound-graph", "the same kernels replayed from a CUDA graph: launch gaps gone (clean)", "host-bound"},
      {"saturating", "a kernel filling every SM beside a small kernel on another stream: device-saturating-kernel", ""},
      {"multi-gpu", "the triple-buffered pipeline fanned out over all visible GPUs (clean)", "serial"},
  };
  return scenarios;
}

const ScenarioInfo* findScenario(const std::string& name) {
  for (const ScenarioInfo& info : allScenarios()) {
    if (info.name == name) return &info;
  }
  return nullptr;
}

ScenarioResult runScenario(const std::string& name, const ScenarioOptions& options) {
  if (name == "nullstream-trap") return runNullStreamTrap(options, false);
  if (name == "nonblocking") return runNullStreamTrap(options, true);
  if (name == "per-thread") return runPerThreadDefaultStream(options);
  if (name == "event-dag") return runEventDag(options, false);
  if (name == "event-dag-serialized") return runEventDag(options, true);
  if (name == "host-bound") return runHostBound(options, false);
  if (name == "host-bound-graph") return runHostBound(options, true);
  if (name == "saturating") return runSaturating(options);
  return runTilePipeline(name, options);
}

}  // namespace cuoverlap
