// Single-pass scan with decoupled look-back (Merrill & Garland, "Single-pass Parallel Prefix Scan
// with Decoupled Look-back", 2016). Each block takes the next tile id from a counter (so every
// earlier tile is already running: no deadlock), scans its tile, publishes the tile total as an
// AGGREGATE, then sums its predecessors' descriptors with one warp, 32 at a time, until it meets
// an INCLUSIVE one, and publishes its own INCLUSIVE prefix. Memory traffic is one read and one
// write per element, the lower bound, which is why this is the fastest of our scans.
// Each thread scans kItems consecutive elements in registers; the tile is staged through shared
// memory so that global loads and stores stay coalesced 16-byte vectors.
// A descriptor is one 64-bit word, status in the high half and value bits in the low half, so
// status and value are always seen together.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "../common/cuda_check.h"
#include "scan_internal.h"

namespace cuoverlap {
namespace {

constexpr unsigned kFullMask = 0xffffffffu;
constexpr unsigned long long kAggregate = 1ull << 32;
constexpr unsigned long long kInclusive = 2ull << 32;

__device__ __forceinline__ unsigned toBits(std::int32_t v) { return static_cast<unsigned>(v); }
__device__ __forceinline__ unsigned toBits(float v) { return __float_as_uint(v); }
template <typename T>
__device__ __forceinline__ T fromBits(unsigned bits);
template <>
__device__ __forceinline__ std::int32_t fromBits<std::int32_t>(unsigned bits) {
  return static_cast<std::int32_t>(bits);
}
template <>
__device__ __forceinline__ float fromBits<float>(unsigned bits) { return __uint_as_float(bits); }

// Padding one word per 32 keeps the per-thread reads of 16 consecutive items conflict-free.
__device__ __forceinline__ int padded(int index) { return index + (index >> 5); }

template <typename T>
__device__ __forceinline__ T warpInclusiveScan(T value, int lane) {
  for (int offset = 1; offset < 32; offset <<= 1) {
    const T other = __shfl_up_sync(kFullMask, value, offset);
    if (lane >= offset) value += other;
  }
  return value;
}

template <typename T>
__device__ __forceinline__ T warpSum(T value) {
  for (int offset = 16; offset > 0; offset >>= 1) value += __shfl_xor_sync(kFullMask, value, offset);
  return value;
}

template <typename T>
__device__ void publish(unsigned long long* status, unsigned tile, unsigned long long flag, T value) {
  *reinterpret_cast<volatile unsigned long long*>(status + tile) = flag | toBits(value);
}

// Run by warp 0 of tile > 0: the sum of all earlier tiles.
template <typename T>
__device__ T lookBack(const unsigned long long* status, unsigned tile, int lane) {
  T prefix = T(0);
  long long predecessor = static_cast<long long>(tile) - 1 - lane;
  while (true) {
    unsigned long long word;
    do {
      // Past tile 0 counts as an inclusive zero; tile 0 itself is always INCLUSIVE.
      word = predecessor >= 0
                 ? *reinterpret_cast<const volatile unsigned long long*>(status + predecessor)
                 : kInclusive;
    } while (__any_sync(kFullMask, (word >> 32) == 0));
    const unsigned inclusive_lanes = __ballot_sync(kFullMask, (word >> 32) == 2);
    T value = fromBits<T>(static_cast<unsigned>(word));
    if (inclusive_lanes != 0) {
      const int nearest = __ffs(inclusive_lanes) - 1;
      return prefix + warpSum(lane <= nearest ? value : T(0));
    }
    prefix += warpSum(value);
    predecessor -= 32;
  }
}

// Loads with the streaming hint when kStreaming: each element is read once, so caching it only
// evicts the tile descriptors the look-back needs.
template <bool kStreaming>
__device__ __forceinline__ uint4 loadVector(const uint4* address) {
  return kStreaming ? __ldcs(address) : *address;
}
template <bool kStreaming>
__device__ __forceinline__ void storeVector(uint4* address, uint4 value) {
  if (kStreaming) __stcs(address, value);
  else *address = value;
}

template <typename T, int kThreads, int kItems, bool kStreaming>
__device__ void loadTile(const T* in, std::size_t base, std::size_t n, T* smem) {
  constexpr int kTile = kThreads * kItems;
  if (base + kTile <= n && reinterpret_cast<std::uintptr_t>(in) % 16 == 0) {
    const uint4* in4 = reinterpret_cast<const uint4*>(in + base);
    for (int k = 0; k < kItems / 4; ++k) {
      const int vector = k * kThreads + threadIdx.x;
      const uint4 v = loadVector<kStreaming>(in4 + vector);
      const T* items = reinterpret_cast<const T*>(&v);
      for (int j = 0; j < 4; ++j) smem[padded(vector * 4 + j)] = items[j];
    }
    return;
  }
  for (int k = 0; k < kItems; ++k) {
    const int index = k * kThreads + threadIdx.x;
    smem[padded(index)] = base + index < n ? in[base + index] : T(0);
  }
}

template <typename T, int kThreads, int kItems, bool kStreaming>
__device__ void storeTile(const T* smem, std::size_t base, std::size_t n, T* out) {
  constexpr int kTile = kThreads * kItems;
  if (base + kTile <= n && reinterpret_cast<std::uintptr_t>(out) % 16 == 0) {
    uint4* out4 = reinterpret_cast<uint4*>(out + base);
    for (int k = 0; k < kItems / 4; ++k) {
      const int vector = k * kThreads + threadIdx.x;
      uint4 v;
      T* items = reinterpret_cast<T*>(&v);
      for (int j = 0; j < 4; ++j) items[j] = smem[padded(vector * 4 + j)];
      storeVector<kStreaming>(out4 + vector, v);
    }
    return;
  }
  for (int k = 0; k < kItems; ++k) {
    const int index = k * kThreads + threadIdx.x;
    if (base + index < n) out[base + index] = smem[padded(index)];
  }
}

// Exclusive prefix of this thread's total within the block; sets block_total.
template <typename T, int kWarps>
__device__ T blockExclusiveScan(T thread_total, T* warp_totals, T& block_total) {
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  const T inclusive = warpInclusiveScan(thread_total, lane);
  const T shifted = __shfl_up_sync(kFullMask, inclusive, 1);
  if (lane == 31) warp_totals[warp] = inclusive;
  __syncthreads();
  if (warp == 0) {
    T total = lane < kWarps ? warp_totals[lane] : T(0);
    total = warpInclusiveScan(total, lane);
    if (lane < kWarps) warp_totals[lane] = total;
  }
  __syncthreads();
  block_total = warp_totals[kWarps - 1];
  return (lane > 0 ? shifted : T(0)) + (warp > 0 ? warp_totals[warp - 1] : T(0));
}

template <typename T, int kThreads, int kItems, bool kStreaming>
__global__ void __launch_bounds__(kThreads)
    lookbackScanKernel(const T* in, T* out, std::size_t n, unsigned long long* status,
                       unsigned* tile_counter, const T* carry_in, T* carry_out, bool inclusive) {
  constexpr int kTile = kThreads * kItems;
  constexpr int kWarps = kThreads / 32;
  __shared__ T smem[kTile + kTile / 32];
  __shared__ T warp_totals[kWarps];
  __shared__ unsigned tile_id;
  __shared__ T tile_prefix;
  if (threadIdx.x == 0) tile_id = atomicAdd(tile_counter, 1u);
  __syncthreads();
  const unsigned tile = tile_id;
  const std::size_t base = std::size_t(tile) * kTile;
  loadTile<T, kThreads, kItems, kStreaming>(in, base, n, smem);
  __syncthreads();
  T items[kItems];
  T running = T(0);
  for (int i = 0; i < kItems; ++i) {
    running += smem[padded(threadIdx.x * kItems + i)];
    items[i] = running;
  }
  T block_total;
  const T thread_prefix = blockExclusiveScan<T, kWarps>(running, warp_totals, block_total);
  if (threadIdx.x < 32) {
    const int lane = threadIdx.x;
    T prefix = T(0);
    if (tile == 0) {
      prefix = carry_in != nullptr ? *carry_in : T(0);
      if (lane == 0) publish(status, 0, kInclusive, prefix + block_total);
    } else {
      if (lane == 0) publish(status, tile, kAggregate, block_total);
      prefix = lookBack<T>(status, tile, lane);
      if (lane == 0) publish(status, tile, kInclusive, prefix + block_total);
    }
    if (lane == 0) {
      tile_prefix = prefix;
      if (carry_out != nullptr && tile == gridDim.x - 1) *carry_out = prefix + block_total;
    }
  }
  __syncthreads();
  const T offset = tile_prefix + thread_prefix;
  for (int i = 0; i < kItems; ++i) {
    const T before = i > 0 ? items[i - 1] : T(0);
    smem[padded(threadIdx.x * kItems + i)] = offset + (inclusive ? items[i] : before);
  }
  __syncthreads();
  storeTile<T, kThreads, kItems, kStreaming>(smem, base, n, out);
}

template <typename T, int kThreads, int kItems, bool kStreaming>
void launchVariant(ScanKind kind, const T* d_in, T* d_out, std::size_t n,
                   unsigned long long* status, const T* d_carry_in, T* d_carry_out,
                   cudaStream_t stream) {
  constexpr int kTile = kThreads * kItems;
  const std::size_t tiles = (n + kTile - 1) / kTile;
  // Descriptors start INVALID (0) and the tile counter (the word after them) at 0.
  CUOVERLAP_CUDA_CHECK(cudaMemsetAsync(status, 0, (tiles + 1) * sizeof(*status), stream));
  unsigned* counter = reinterpret_cast<unsigned*>(status + tiles);
  lookbackScanKernel<T, kThreads, kItems, kStreaming><<<static_cast<unsigned>(tiles), kThreads, 0, stream>>>(
      d_in, d_out, n, status, counter, d_carry_in, d_carry_out, kind == ScanKind::kInclusive);
  CUOVERLAP_CHECK_LAUNCH();
}

template <typename T>
using Launcher = void (*)(ScanKind, const T*, T*, std::size_t, unsigned long long*, const T*, T*,
                          cudaStream_t);

// Tile shapes tried by `cuoverlap-scan tune`; index 0 is the default, chosen from its table on an
// H100 (docs/BENCHMARKS.md): 8192-element tiles halve the look-back chain of 4096-element ones,
// and the streaming cache hints keep the once-touched data from evicting the tile descriptors.
template <typename T>
const std::vector<std::pair<std::string, Launcher<T>>>& variants() {
  static const std::vector<std::pair<std::string, Launcher<T>>> table = {
      {"256x32 streaming", launchVariant<T, 256, 32, true>},
      {"256x16 streaming", launchVariant<T, 256, 16, true>},
      {"256x16", launchVariant<T, 256, 16, false>},
      {"128x16", launchVariant<T, 128, 16, false>},
      {"256x24 streaming", launchVariant<T, 256, 24, true>},
      {"512x16 streaming", launchVariant<T, 512, 16, true>},
      {"128x32 streaming", launchVariant<T, 128, 32, true>},
  };
  return table;
}

}  // namespace

// The smallest tile of any variant bounds the number of descriptors.
std::size_t lookbackStatusWords(std::size_t n) { return (n + 128 * 16 - 1) / (128 * 16) + 1; }

std::size_t lookbackVariantCount() { return variants<std::int32_t>().size(); }
std::string lookbackVariantName(std::size_t variant) { return variants<std::int32_t>().at(variant).first; }

template <typename T>
void runLookbackScanVariant(std::size_t variant, ScanKind kind, const T* d_in, T* d_out,
                            std::size_t n, unsigned long long* status, const T* d_carry_in,
                            T* d_carry_out, cudaStream_t stream) {
  if (n == 0) return;
  variants<T>().at(variant).second(kind, d_in, d_out, n, status, d_carry_in, d_carry_out, stream);
}

template <typename T>
void runLookbackScan(ScanKind kind, const T* d_in, T* d_out, std::size_t n,
                     unsigned long long* status, const T* d_carry_in, T* d_carry_out,
                     cudaStream_t stream) {
  runLookbackScanVariant<T>(0, kind, d_in, d_out, n, status, d_carry_in, d_carry_out, stream);
}

template void runLookbackScan<std::int32_t>(ScanKind, const std::int32_t*, std::int32_t*,
                                            std::size_t, unsigned long long*, const std::int32_t*,
                                            std::int32_t*, cudaStream_t);
template void runLookbackScan<float>(ScanKind, const float*, float*, std::size_t,
                                     unsigned long long*, const float*, float*, cudaStream_t);

}  // namespace cuoverlap

namespace cuoverlap {
template void runLookbackScanVariant<std::int32_t>(std::size_t, ScanKind, const std::int32_t*,
                                                   std::int32_t*, std::size_t, unsigned long long*,
                                                   const std::int32_t*, std::int32_t*, cudaStream_t);
}  // namespace cuoverlap
