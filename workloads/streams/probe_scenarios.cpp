// nullstream-trap, nonblocking, saturating: kernel-only scenarios built from probe kernels.
#include "probe_scenarios.h"

#include <algorithm>

#include <fmt/format.h>

#include "../common/buffers.h"
#include "../common/event_timer.h"
#include "../common/nvtx_range.h"
#include "affine_work.h"

namespace cuoverlap {

unsigned smallProbeBlocks() {
  int device = 0;
  int sms = 0;
  CUOVERLAP_CUDA_CHECK(cudaGetDevice(&device));
  CUOVERLAP_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  return static_cast<unsigned>(std::max(1, sms / 4));
}

std::uint32_t probeSeed(std::size_t index) { return static_cast<std::uint32_t>(index * 0x9e3779b9u + 1u); }

bool verifyProbes(const std::uint32_t* out, std::size_t kernels, std::size_t threads, int steps) {
  const AffineMap map = composeAffine(steps);
  for (std::size_t k = 0; k < kernels; ++k) {
    for (std::size_t t = 0; t < threads; ++t) {
      const std::uint32_t expected = map.apply(probeSeed(k) ^ static_cast<std::uint32_t>(t));
      if (out[k * threads + t] != expected) {
        fmt::print(stderr, "mismatch in kernel {} thread {}: got {} expected {}\n", k, t,
                   out[k * threads + t], expected);
        return false;
      }
    }
  }
  return true;
}

ScenarioResult runProbeTriplets(const ScenarioOptions& options, cudaStream_t s1,
                                cudaStream_t other, const ProbeLauncher& launch_other) {
  const unsigned blocks = smallProbeBlocks();
  const std::size_t threads = std::size_t(blocks) * kProbeThreads;
  const std::size_t kernels = 3 * std::size_t(options.iterations);
  PinnedBuffer<std::uint32_t> out(kernels * threads, cudaHostAllocMapped);
  EventTimer on_s1, on_other;
  on_s1.start(s1);
  on_other.start(s1);
  for (int round = 0; round < options.iterations; ++round) {
    NvtxRange range(fmt::format("iteration {}", round));
    const std::size_t k = 3 * std::size_t(round);
    { NvtxRange phase("compute s1");
      launchAffineProbe(out.get() + k * threads, blocks, probeSeed(k), options.probe_work, s1); }
    { NvtxRange phase("compute other");
      launch_other(out.get() + (k + 1) * threads, blocks, probeSeed(k + 1), options.probe_work); }
    { NvtxRange phase("compute s1");
      launchAffineProbe(out.get() + (k + 2) * threads, blocks, probeSeed(k + 2), options.probe_work, s1); }
  }
  on_s1.stop(s1);
  on_other.stop(other);
  CUOVERLAP_CUDA_CHECK(cudaDeviceSynchronize());
  ScenarioResult result;
  result.wall_ms = std::max(on_s1.elapsedMs(), on_other.elapsedMs());
  result.verified = verifyProbes(out.get(), kernels, threads, options.probe_work);
  return result;
}

ScenarioResult runNullStreamTrap(const ScenarioOptions& options, bool nonblocking) {
  cudaStream_t s1 = nullptr;
  CUOVERLAP_CUDA_CHECK(cudaStreamCreateWithFlags(&s1, nonblocking ? cudaStreamNonBlocking : cudaStreamDefault));
  // cudaStreamLegacy names the legacy default stream whatever the build's --default-stream.
  cudaStream_t other = options.serialize ? s1 : cudaStreamLegacy;
  const ScenarioResult result = runProbeTriplets(
      options, s1, other, [&](std::uint32_t* out, unsigned blocks, std::uint32_t seed, int steps) {
        launchAffineProbe(out, blocks, seed, steps, other);
      });
  CUOVERLAP_CUDA_CHECK(cudaStreamDestroy(s1));
  return result;
}

// saturating: per round, a kernel that fills every SM (one block per SM holding all its shared
// memory) on s1, then a one-block kernel on s2 that can only start when the big kernel's blocks
// leave, which they all do together at its end. saturating-fixed (reserve_shared false): the same
// blocks without the shared memory they never use, so the small kernel's block fits beside one.
ScenarioResult runSaturating(const ScenarioOptions& options, bool reserve_shared) {
  int sms = 0;
  CUOVERLAP_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const std::size_t big_threads = std::size_t(sms) * kSaturatingThreads;
  const std::size_t small_threads = kProbeThreads;
  const int rounds = 2 * options.iterations;  // a round is ~0.1 ms on an H100: 20 ms at the default
  cudaStream_t s1 = nullptr, s2 = nullptr;
  CUOVERLAP_CUDA_CHECK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  CUOVERLAP_CUDA_CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  if (options.serialize) s2 = s1;
  PinnedBuffer<std::uint32_t> big_out(rounds * big_threads, cudaHostAllocMapped);
  PinnedBuffer<std::uint32_t> small_out(rounds * small_threads, cudaHostAllocMapped);
  EventTimer on_s1, on_s2;
  on_s1.start(s1);
  on_s2.start(s1);
  for (int round = 0; round < rounds; ++round) {
    NvtxRange range(fmt::format("iteration {}", round));
    { NvtxRange phase("compute big");
      launchSaturatingProbe(big_out.get() + round * big_threads, probeSeed(round), options.probe_work, s1,
                            reserve_shared); }
    { NvtxRange phase("compute small");
      launchAffineProbe(small_out.get() + round * small_threads, 1, probeSeed(round), options.probe_work / 8, s2); }
  }
  on_s1.stop(s1);
  on_s2.stop(s2);
  CUOVERLAP_CUDA_CHECK(cudaDeviceSynchronize());
  ScenarioResult result;
  result.wall_ms = std::max(on_s1.elapsedMs(), on_s2.elapsedMs());
  result.verified = verifyProbes(big_out.get(), rounds, big_threads, options.probe_work) &&
                    verifyProbes(small_out.get(), rounds, small_threads, options.probe_work / 8);
  CUOVERLAP_CUDA_CHECK(cudaStreamDestroy(s1));
  if (!options.serialize) CUOVERLAP_CUDA_CHECK(cudaStreamDestroy(s2));
  return result;
}

}  // namespace cuoverlap
