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
      {"implicit-sync-fixed", "twin of implicit-sync: scratch allocated once, cudaMemsetAsync on the tile's stream (clean)", "serial"},
      {"sync-in-loop", "cudaDeviceSynchronize after every tile: blocking-sync-call", "serial"},
      {"host-bound", "thousands of tiny kernels with host work between launches: host-launch-bound", "host-bound"},
      {"host-bound-graph", "the same kernels replayed from a CUDA graph: launch gaps gone (clean)", "host-bound"},
      {"saturating", "a kernel filling every SM beside a small kernel on another stream: device-saturating-kernel", ""},
      {"saturating-fixed", "twin of saturating: the same blocks reserve no shared memory, the small kernel fits beside (clean)", ""},
      {"sync-copy", "synchronous cudaMemcpy from pageable memory between kernels: sync-memcpy, pageable-memcpy", "sync-copy"},
      {"sync-copy-fixed", "twin of sync-copy: pinned memory, cudaMemcpyAsync on one stream, each copy still feeds the next kernel (clean)", "sync-copy"},
      {"host-busy", "the host generates each batch's input while the GPU idles (no CUDA call in progress): host-busy", "host-busy"},
      {"host-busy-fixed", "twin of host-busy: a prefetching loader (double-buffered staging and device buffers, copy-in, compute and copy-out streams): the next batch is generated and copied in while the GPU computes (clean)", "host-busy"},
      {"memset-barrier", "cudaMemsetAsync on the legacy default stream between two blocking streams: legacy-default-stream", "memset-barrier"},
      {"memset-barrier-fixed", "twin of memset-barrier: the memset on the stream whose kernel reads it (clean)", "memset-barrier"},
      {"wait-chain", "independent kernels on 4 streams chained by cudaStreamWaitEvent, filling 6% of the GPU: event-wait-serialization", "wait-chain"},
      {"wait-chain-fixed", "twin of wait-chain: the same kernels without the waits, four at a time (clean)", "wait-chain"},
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
  if (name == "saturating") return runSaturating(options, true);
  if (name == "saturating-fixed") return runSaturating(options, false);
  if (name == "sync-copy") return runSyncCopy(options, false);
  if (name == "sync-copy-fixed") return runSyncCopy(options, true);
  if (name == "host-busy") return runHostBusy(options, false);
  if (name == "host-busy-fixed") return runHostBusy(options, true);
  if (name == "memset-barrier") return runMemsetBarrier(options, false);
  if (name == "memset-barrier-fixed") return runMemsetBarrier(options, true);
  if (name == "wait-chain") return runWaitChain(options, false);
  if (name == "wait-chain-fixed") return runWaitChain(options, true);
  return runTilePipeline(name, options);
}

}  // namespace cuoverlap
