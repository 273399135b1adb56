// The CUDA-streams scenarios: each is built to show one overlap problem (or its absence) that the
// analyzer must diagnose. The list below is CUDA-free so `--list` works without a GPU.
#pragma once

#include <string>
#include <vector>

namespace cuoverlap {

struct ScenarioOptions {
  int tiles = 40;          // tile pipelines: number of tiles
  int tile_mb = 16;        // tile pipelines: MiB per tile and direction
  int work = 4500;         // affine steps per element: kernel time per tile (about 2x a copy)
  std::string order = "depth";  // pipelines: depth (tile by tile) | breadth (phase by phase)
  int iterations = 100;    // kernel-only scenarios: rounds of kernels
  int probe_work = 20000;  // kernel-only scenarios: affine steps per thread
  int kernels = 3000;      // host-bound: number of tiny kernels
  int host_us = 15;        // host-bound: host-side work per launch, in microseconds
  int chunks = 400;        // sync-copy: chunks copied and folded one after another
  int chunk_kb = 1024;     // sync-copy: KiB per chunk
  int batches = 16;        // host-busy: GPU batches
  int batch_mb = 4;        // host-busy: MiB per batch
  int batch_kernels = 16;  // host-busy: kernels per batch (--work steps each)
  int batch_host_us = 2000;  // host-busy: CPU work before each batch, in microseconds
  bool serialize = false;  // run the same work on one stream: the serial baseline
  int repeat = 1;          // runs of the scenario (and of its baseline); the fastest is reported
};

// Times measured by the scenario itself with CUDA events.
struct ScenarioResult {
  double wall_ms = 0.0;
  // Engine busy time, measured only where ops run in isolation (the serial scenario).
  double h2d_ms = 0.0;
  double compute_ms = 0.0;
  double d2h_ms = 0.0;
  bool verified = false;
};

struct ScenarioInfo {
  std::string name;
  std::string shows;     // the diagnosis it is built to show, in one line
  std::string baseline;  // scenario whose time is "serial" for the speedup; "" = itself serialized
};

// Fixed twins: every scenario built to show a problem has a twin doing the same work with the
// problem fixed (scenarios.json, "fixed_twin"); a twin's baseline is its bad scenario, so its
// "speedup" line is what the fix saved.

const std::vector<ScenarioInfo>& allScenarios();
const ScenarioInfo* findScenario(const std::string& name);

// Runs one scenario; exits through the CUDA check on an API failure.
ScenarioResult runScenario(const std::string& name, const ScenarioOptions& options);

ScenarioResult runTilePipeline(const std::string& name, const ScenarioOptions& options);
ScenarioResult runNullStreamTrap(const ScenarioOptions& options, bool nonblocking);
ScenarioResult runPerThreadDefaultStream(const ScenarioOptions& options);
ScenarioResult runEventDag(const ScenarioOptions& options, bool unnecessary_wait);
ScenarioResult runHostBound(const ScenarioOptions& options, bool graph);
ScenarioResult runSaturating(const ScenarioOptions& options, bool reserve_shared);
ScenarioResult runSyncCopy(const ScenarioOptions& options, bool fixed);
ScenarioResult runHostBusy(const ScenarioOptions& options, bool fixed);
ScenarioResult runMemsetBarrier(const ScenarioOptions& options, bool fixed);
ScenarioResult runWaitChain(const ScenarioOptions& options, bool fixed);

}  // namespace cuoverlap
