// The synthetic work every streams scenario runs: `steps` applications of the affine map
// x -> a*x + c (mod 2^32) to each element. The GPU iterates (so kernel time scales with
// --work), while the host checks with the composed map in O(1) per element, so verifying
// hundreds of millions of elements stays cheap.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

namespace cuoverlap {

constexpr std::uint32_t kAffineMultiplier = 1664525u;
constexpr std::uint32_t kAffineIncrement = 1013904223u;

struct AffineMap {
  std::uint32_t multiplier = 1;
  std::uint32_t increment = 0;
  std::uint32_t apply(std::uint32_t x) const { return multiplier * x + increment; }
};

// The map applied `steps` times.
AffineMap composeAffine(int steps);

// Input element i of a tile pipeline; distinct per tile so misplaced tiles are caught.
inline std::uint32_t pipelineInput(std::size_t i) { return static_cast<std::uint32_t>(i * 2654435761u); }

// Every element: out[i] = map^steps(in[i]). One thread per element.
void launchAffineTile(const std::uint32_t* in, std::uint32_t* out, std::size_t n, int steps,
                      cudaStream_t stream);
// out[i] = map^steps(a[i] ^ b[i]): the join of the event-dag scenario.
void launchAffineJoin(const std::uint32_t* a, const std::uint32_t* b, std::uint32_t* out,
                      std::size_t n, int steps, cudaStream_t stream);
// acc[i] = map^steps(acc[i] ^ in[i]): folds one chunk into an accumulator (sync-copy).
void launchAffineFold(const std::uint32_t* in, std::uint32_t* acc, std::size_t n, int steps,
                      cudaStream_t stream);
// A kernel of `blocks` x 256 threads; thread t writes map^steps(seed ^ t) to out[t]. `out` may be
// mapped host memory, so kernel-only scenarios need no copies to be verified.
void launchAffineProbe(std::uint32_t* out, unsigned blocks, std::uint32_t seed, int steps,
                       cudaStream_t stream);
// The probe kernel with thread t computing map^steps(seed ^ t ^ mask[t]): mask (device memory,
// blocks x 256 words) must have been zeroed by a memset for the result to verify (memset-barrier).
void launchAffineProbeMasked(std::uint32_t* out, unsigned blocks, std::uint32_t seed, int steps,
                             const std::uint32_t* mask, cudaStream_t stream);
// One block of kSaturatingThreads threads per SM, each holding all the shared memory a block may
// opt into, so no other block (of any kernel) fits beside it: the kernel fills every SM. With
// reserve_shared false the same blocks reserve no shared memory and leave room beside them
// (saturating-fixed). Returns the number of blocks launched (the SM count).
unsigned launchSaturatingProbe(std::uint32_t* out, std::uint32_t seed, int steps, cudaStream_t stream,
                               bool reserve_shared = true);
constexpr unsigned kSaturatingThreads = 1024;
// One block of 32 threads: state[t] = map(state[t]). Thousands of these make a launch-bound loop.
void launchTinyStep(std::uint32_t* state, cudaStream_t stream);
constexpr unsigned kProbeThreads = 256;
constexpr unsigned kTinyThreads = 32;

}  // namespace cuoverlap
