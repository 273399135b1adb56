// Iteration candidates for the steady state (definitions: steady_state.cpp and docs/metrics.md).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cuoverlap/analysis.h"
#include "cuoverlap/intervals.h"

namespace cuoverlap::phases {

// Fewer repetitions than this are not a loop.
inline constexpr std::size_t kMinIterations = 4;

// A run of consecutive iterations, in time order; iteration i is [starts[i], starts[i+1]) and the
// last one ends at `last_end`. Starts are GPU times: where each iteration's GPU work begins.
struct IterationRun {
  std::string source;          // "nvtx:<pattern>", "graph-launch" or "kernel-pattern"
  std::vector<Ns> starts;
  std::vector<Ns> host_ns;     // per iteration, its host range's length (NVTX and graph launches)
  Ns last_end = 0;
  Ns gpu_work_ns = 0;          // GPU work inside the iterations (the candidates' score)
};

// Sums of GPU op durations (all devices in scope) by start time: the work a stretch holds.
// 8 bytes per op of the trace (a prefix sum over Trace::ops, which are sorted by start).
class GpuWork {
 public:
  GpuWork(const Trace& trace, const Scope& scope);
  // Duration of the ops in scope that start in [from, to).
  Ns in(Ns from, Ns to) const;

 private:
  const Trace& trace_;
  std::vector<Ns> prefix_;     // prefix_[i] = work of Trace::ops[0..i] in scope
};

// "ProfilerStep#12" -> "ProfilerStep#N", "iteration 7" -> "iteration N": digit runs become N.
std::string namePattern(std::string_view name);

// A range that a library emits (NCCL, PyTorch internals, cuDNN/cuBLAS, XLA, a non-default domain).
bool isLibraryRange(std::string_view name, std::string_view domain);

// The best run of NVTX ranges that repeat (one name pattern, one thread, one nesting level, not
// overlapping): the one whose instances hold the most GPU work. Empty `starts` when none.
// `work` is built on first use (only when a group qualifies). With `only` (--iterations NAME),
// only the ranges of that name pattern count, library ranges included; a NAME that no range of the
// scope has is a UserError naming the range patterns that repeat, closest first.
IterationRun nvtxIterations(const Trace& trace, const Scope& scope, std::optional<GpuWork>& work,
                            const std::optional<std::string>& only = std::nullopt);

// The cudaGraphLaunch/cuGraphLaunch calls of the thread that launches graphs most often, when at
// least kMinIterations: each launch is an iteration starting where its graph's first op starts.
IterationRun graphLaunchIterations(const Trace& trace, const Scope& scope);

// The repeating sequence of kernel names on the device with the most kernels: iterations start at
// each occurrence of the anchor kernel whose segments repeat most. Empty `starts` when none.
IterationRun kernelPatternIterations(const Trace& trace, const Scope& scope);

}  // namespace cuoverlap::phases
