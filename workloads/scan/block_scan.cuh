// Block-level scans for the multi-block scan: each block scans one tile in shared memory and
// reports the tile's total, so the totals can be scanned and added back as tile offsets.
#pragma once

#include <cstddef>

namespace cuoverlap {

// Hillis-Steele: 1024 threads, one element each; log2(1024) steps, each reading one buffer and
// writing the other (double buffering avoids a read-after-write race within a step).
constexpr int kHillisSteeleTile = 1024;
// Blelloch: 1024 threads, two elements each.
constexpr int kBlellochTile = 2048;
constexpr int kLogBanks = 5;

template <bool kPadded>
__device__ __forceinline__ int bankPad(int index) {
  return kPadded ? index + (index >> kLogBanks) : index;
}

// Leaves the inclusive scan of the tile in the returned buffer.
template <typename T>
__device__ T* hillisSteeleTile(T (&buffers)[2][kHillisSteeleTile]) {
  const int i = threadIdx.x;
  int source = 0;
  for (int offset = 1; offset < kHillisSteeleTile; offset <<= 1) {
    const T own = buffers[source][i];
    buffers[1 - source][i] = i >= offset ? own + buffers[source][i - offset] : own;
    source = 1 - source;
    __syncthreads();
  }
  return buffers[source];
}

// Replaces the tile by its exclusive scan and returns the tile total.
template <typename T, bool kPadded>
__device__ T blellochTile(T* temp) {
  const int thread = threadIdx.x;
  int offset = 1;
  for (int active = kBlellochTile >> 1; active > 0; active >>= 1) {
    __syncthreads();
    if (thread < active) {
      const int ai = bankPad<kPadded>(offset * (2 * thread + 1) - 1);
      const int bi = bankPad<kPadded>(offset * (2 * thread + 2) - 1);
      temp[bi] += temp[ai];
    }
    offset <<= 1;
  }
  __shared__ T total;
  const int last = bankPad<kPadded>(kBlellochTile - 1);
  if (thread == 0) {
    total = temp[last];
    temp[last] = T(0);
  }
  for (int active = 1; active < kBlellochTile; active <<= 1) {
    offset >>= 1;
    __syncthreads();
    if (thread < active) {
      const int ai = bankPad<kPadded>(offset * (2 * thread + 1) - 1);
      const int bi = bankPad<kPadded>(offset * (2 * thread + 2) - 1);
      const T left = temp[ai];
      temp[ai] = temp[bi];
      temp[bi] += left;
    }
  }
  __syncthreads();
  return total;
}

}  // namespace cuoverlap
