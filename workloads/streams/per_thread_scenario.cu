// per-thread: the null-stream trap compiled with --default-stream per-thread (this file only; see
// CMakeLists.txt). The <<<>>> launch below names no stream, so it goes to the per-thread default
// stream, which behaves like an ordinary blocking stream and does not serialize with s1.
#include "../common/cuda_check.h"
#include "affine_kernels.cuh"
#include "probe_scenarios.h"

namespace cuoverlap {

ScenarioResult runPerThreadDefaultStream(const ScenarioOptions& options) {
  cudaStream_t s1 = nullptr;
  CUOVERLAP_CUDA_CHECK(cudaStreamCreate(&s1));
  const bool serialize = options.serialize;
  const ScenarioResult result = runProbeTriplets(
      options, s1, serialize ? s1 : cudaStreamPerThread,
      [&](std::uint32_t* out, unsigned blocks, std::uint32_t seed, int steps) {
        if (serialize) {
          affineProbeKernelLocal<<<blocks, kProbeThreads, 0, s1>>>(out, seed, steps);
        } else {
          affineProbeKernelLocal<<<blocks, kProbeThreads>>>(out, seed, steps);
        }
        CUOVERLAP_CHECK_LAUNCH();
      });
  CUOVERLAP_CUDA_CHECK(cudaStreamDestroy(s1));
  return result;
}

}  // namespace cuoverlap
