// host-bound: thousands of one-block kernels, each after a little host work (standing in for the
// per-launch logic of a framework), so the GPU waits on the host between kernels. The graph
// variant captures the same kernels once and replays them: one launch, no gaps.
#include <chrono>
#include <cstdint>

#include <fmt/format.h>

#include "../common/buffers.h"
#include "../common/event_timer.h"
#include "../common/nvtx_range.h"
#include "affine_work.h"
#include "scenario.h"

namespace cuoverlap {
namespace {

void spinHost(int microseconds) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(microseconds);
  while (std::chrono::steady_clock::now() < until) {
  }
}

void launchTinyKernels(const ScenarioOptions& options, std::uint32_t* state, cudaStream_t stream,
                       bool with_host_work) {
  for (int k = 0; k < options.kernels; ++k) {
    if (with_host_work) spinHost(options.host_us);
    launchTinyStep(state, stream);
  }
}

void replayAsGraph(const ScenarioOptions& options, std::uint32_t* state, cudaStream_t stream,
                   EventTimer& timer) {
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  {
    NvtxRange range("capture");
    CUOVERLAP_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    launchTinyKernels(options, state, stream, false);
    CUOVERLAP_CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
    CUOVERLAP_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  }
  NvtxRange range("compute");
  timer.start(stream);
  CUOVERLAP_CUDA_CHECK(cudaGraphLaunch(exec, stream));
  timer.stop(stream);
  CUOVERLAP_CUDA_CHECK(cudaStreamSynchronize(stream));
  CUOVERLAP_CUDA_CHECK(cudaGraphExecDestroy(exec));
  CUOVERLAP_CUDA_CHECK(cudaGraphDestroy(graph));
}

}  // namespace

ScenarioResult runHostBound(const ScenarioOptions& options, bool graph) {
  // Mapped host memory: the result needs no copy, so the trace holds kernels only.
  PinnedBuffer<std::uint32_t> state(kTinyThreads, cudaHostAllocMapped);
  for (unsigned t = 0; t < kTinyThreads; ++t) state[t] = t * 7919u + 1u;
  cudaStream_t stream = nullptr;
  CUOVERLAP_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  EventTimer timer;
  if (graph) {
    replayAsGraph(options, state.get(), stream, timer);
  } else {
    NvtxRange range("compute");
    timer.start(stream);
    launchTinyKernels(options, state.get(), stream, true);
    timer.stop(stream);
    CUOVERLAP_CUDA_CHECK(cudaStreamSynchronize(stream));
  }
  ScenarioResult result;
  result.wall_ms = timer.elapsedMs();
  const AffineMap map = composeAffine(options.kernels);
  result.verified = true;
  for (unsigned t = 0; t < kTinyThreads; ++t) {
    if (state[t] != map.apply(t * 7919u + 1u)) {
      fmt::print(stderr, "mismatch in state {}: got {} expected {}\n", t, state[t], map.apply(t * 7919u + 1u));
      result.verified = false;
    }
  }
  CUOVERLAP_CUDA_CHECK(cudaStreamDestroy(stream));
  return result;
}

}  // namespace cuoverlap
