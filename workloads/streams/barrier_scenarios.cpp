// memset-barrier and wait-chain, with their fixed twins: probe kernels (results in mapped host
// memory, no copies) kept apart by a barrier or a chain of waits that protects nothing.
//
// memset-barrier: two blocking streams s1 and s2 run probe kernels side by side (a quarter of
// the SMs each): long on s1 and short on s2 in even rounds, the other way round in odd ones, so
// the two streams carry the same work. Each round's s1 kernel reads a mask that a memset zeroes
// first; the bad version issues it as `cudaMemsetAsync(mask, 0, bytes)` with no stream, i.e. on the
// legacy default stream, which waits for all earlier work on both blocking streams and holds
// back all later work on them: every round lasts as long as its longer kernel. The fixed twin
// puts the memset on s1, the stream whose kernel reads the mask: the same dependency, no
// barrier, each stream runs its kernels back to back.
//
// wait-chain: kernel k of 4 x --iterations runs on stream k mod 4, on blocks filling about 6% of
// the SMs, writing its own output: the kernels are independent. The bad version makes kernel k
// wait (cudaStreamWaitEvent) for kernel k-1, which runs them one at a time on a GPU they leave
// 94% idle. The fixed twin drops the waits: four kernels at a time.
#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include <fmt/format.h>

#include "../common/buffers.h"
#include "../common/event_timer.h"
#include "../common/nvtx_range.h"
#include "affine_work.h"
#include "probe_scenarios.h"
#include "scenario.h"

namespace cuoverlap {
namespace {

constexpr int kLongFactor = 3;  // memset-barrier: a long kernel has 3x the short one's steps
constexpr int kChainStreams = 4;

struct ProbeCheck {
  std::uint32_t seed = 0;
  int steps = 0;
};

// Kernel k wrote map^steps(seed ^ t) to out[k * threads + t].
bool verifyEach(const std::uint32_t* out, const std::vector<ProbeCheck>& checks, std::size_t threads) {
  for (std::size_t k = 0; k < checks.size(); ++k) {
    const AffineMap map = composeAffine(checks[k].steps);
    for (std::size_t t = 0; t < threads; ++t) {
      const std::uint32_t expected = map.apply(checks[k].seed ^ static_cast<std::uint32_t>(t));
      if (out[k * threads + t] != expected) {
        fmt::print(stderr, "mismatch in kernel {} thread {}: got {} expected {}\n", k, t,
                   out[k * threads + t], expected);
        return false;
      }
    }
  }
  return true;
}

// Blocks of a wait-chain kernel: a sixteenth of the SMs, about 6% of an H100's 132.
unsigned chainProbeBlocks() {
  int device = 0, sms = 0;
  CUOVERLAP_CUDA_CHECK(cudaGetDevice(&device));
  CUOVERLAP_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  return static_cast<unsigned>(std::max(1, sms / 16));
}

}  // namespace

ScenarioResult runMemsetBarrier(const ScenarioOptions& options, bool fixed) {
  const unsigned blocks = smallProbeBlocks();
  const std::size_t threads = std::size_t(blocks) * kProbeThreads;
  const int rounds = options.iterations;
  cudaStream_t s1 = nullptr, s2 = nullptr;
  CUOVERLAP_CUDA_CHECK(cudaStreamCreate(&s1));  // blocking streams, as cudaStreamCreate makes them
  CUOVERLAP_CUDA_CHECK(cudaStreamCreate(&s2));
  PinnedBuffer<std::uint32_t> out(2 * std::size_t(rounds) * threads, cudaHostAllocMapped);
  DeviceBuffer<std::uint32_t> masks(std::size_t(rounds) * threads);
  // Every mask starts non-zero: a kernel that ran before its memset fails verification.
  CUOVERLAP_CUDA_CHECK(cudaMemsetAsync(masks.get(), 0xff, masks.bytes(), s1));
  CUOVERLAP_CUDA_CHECK(cudaStreamSynchronize(s1));
  std::vector<ProbeCheck> checks(2 * std::size_t(rounds));
  EventTimer on_s1, on_s2;
  on_s1.start(s1);
  on_s2.start(s1);
  for (int round = 0; round < rounds; ++round) {
    NvtxRange range(fmt::format("iteration {}", round));
    const std::size_t k = 2 * std::size_t(round);
    const int long_steps = kLongFactor * options.probe_work, short_steps = options.probe_work;
    checks[k] = {probeSeed(k), round % 2 == 0 ? long_steps : short_steps};
    checks[k + 1] = {probeSeed(k + 1), round % 2 == 0 ? short_steps : long_steps};
    std::uint32_t* mask = masks.get() + std::size_t(round) * threads;
    {
      NvtxRange phase("memset");
      if (fixed) CUOVERLAP_CUDA_CHECK(cudaMemsetAsync(mask, 0, threads * sizeof(std::uint32_t), s1));
      else CUOVERLAP_CUDA_CHECK(cudaMemsetAsync(mask, 0, threads * sizeof(std::uint32_t)));
    }
    { NvtxRange phase("compute s1");
      launchAffineProbeMasked(out.get() + k * threads, blocks, checks[k].seed, checks[k].steps, mask, s1); }
    { NvtxRange phase("compute s2");
      launchAffineProbe(out.get() + (k + 1) * threads, blocks, checks[k + 1].seed, checks[k + 1].steps, s2); }
  }
  on_s1.stop(s1);
  on_s2.stop(s2);
  CUOVERLAP_CUDA_CHECK(cudaDeviceSynchronize());
  ScenarioResult result;
  result.wall_ms = std::max(on_s1.elapsedMs(), on_s2.elapsedMs());
  result.verified = verifyEach(out.get(), checks, threads);
  CUOVERLAP_CUDA_CHECK(cudaStreamDestroy(s1));
  CUOVERLAP_CUDA_CHECK(cudaStreamDestroy(s2));
  return result;
}

ScenarioResult runWaitChain(const ScenarioOptions& options, bool fixed) {
  const unsigned blocks = chainProbeBlocks();
  const std::size_t threads = std::size_t(blocks) * kProbeThreads;
  const std::size_t kernels = kChainStreams * std::size_t(options.iterations);
  std::array<cudaStream_t, kChainStreams> streams{};
  std::array<cudaEvent_t, kChainStreams> done{};
  for (int s = 0; s < kChainStreams; ++s) {
    CUOVERLAP_CUDA_CHECK(cudaStreamCreateWithFlags(&streams[s], cudaStreamNonBlocking));
    CUOVERLAP_CUDA_CHECK(cudaEventCreateWithFlags(&done[s], cudaEventDisableTiming));
  }
  PinnedBuffer<std::uint32_t> out(kernels * threads, cudaHostAllocMapped);
  // A start and an end mark per stream (no wait joins them): the span is from the earliest start
  // to the latest end.
  std::array<cudaEvent_t, kChainStreams> starts{}, ends{};
  for (int s = 0; s < kChainStreams; ++s) {
    CUOVERLAP_CUDA_CHECK(cudaEventCreate(&starts[s]));
    CUOVERLAP_CUDA_CHECK(cudaEventCreate(&ends[s]));
    CUOVERLAP_CUDA_CHECK(cudaEventRecord(starts[s], streams[s]));
  }
  for (std::size_t k = 0; k < kernels; ++k) {
    NvtxRange range(fmt::format("kernel {}", k));
    const int s = static_cast<int>(k % kChainStreams);
    if (!fixed && k > 0) {
      NvtxRange phase("wait");
      CUOVERLAP_CUDA_CHECK(cudaStreamWaitEvent(streams[s], done[(k - 1) % kChainStreams], 0));
    }
    NvtxRange phase("compute");
    launchAffineProbe(out.get() + k * threads, blocks, probeSeed(k), options.probe_work, streams[s]);
    if (!fixed) CUOVERLAP_CUDA_CHECK(cudaEventRecord(done[s], streams[s]));
  }
  for (int s = 0; s < kChainStreams; ++s) CUOVERLAP_CUDA_CHECK(cudaEventRecord(ends[s], streams[s]));
  CUOVERLAP_CUDA_CHECK(cudaDeviceSynchronize());
  double earliest = 0.0, latest = 0.0;  // relative to stream 0's start
  for (int s = 0; s < kChainStreams; ++s) {
    earliest = std::min(earliest, double(elapsedMs(starts[0], starts[s])));
    latest = std::max(latest, double(elapsedMs(starts[0], ends[s])));
  }
  ScenarioResult result;
  result.wall_ms = latest - earliest;
  result.verified = verifyProbes(out.get(), kernels, threads, options.probe_work);
  for (int s = 0; s < kChainStreams; ++s) {
    cudaEventDestroy(starts[s]);
    cudaEventDestroy(ends[s]);
    cudaEventDestroy(done[s]);
    CUOVERLAP_CUDA_CHECK(cudaStreamDestroy(streams[s]));
  }
  return result;
}

}  // namespace cuoverlap
