// Multi-block scan of any length from block scans and scanned block sums. A tile past the end of
// the input is padded with zeros, the identity of +, so every length works, not only powers of
// two. Levels: n -> ceil(n / tile) block sums -> ... -> one tile.
#include <cstdint>

#include "../common/cuda_check.h"
#include "block_scan.cuh"
#include "scan_internal.h"

namespace cuoverlap {
namespace {

// Writes the tile's inclusive or exclusive scan and its total (when block_sums is not null).
template <typename T>
__global__ void __launch_bounds__(1024)
    hillisSteeleTilesKernel(const T* in, T* out, T* block_sums, std::size_t n, bool inclusive) {
  __shared__ T buffers[2][kHillisSteeleTile];
  const std::size_t index = std::size_t(blockIdx.x) * kHillisSteeleTile + threadIdx.x;
  buffers[0][threadIdx.x] = index < n ? in[index] : T(0);
  __syncthreads();
  const T* scanned = hillisSteeleTile(buffers);
  if (index < n) {
    const T exclusive = threadIdx.x > 0 ? scanned[threadIdx.x - 1] : T(0);
    out[index] = inclusive ? scanned[threadIdx.x] : exclusive;
  }
  if (block_sums != nullptr && threadIdx.x == 0) {
    block_sums[blockIdx.x] = scanned[kHillisSteeleTile - 1];
  }
}

template <typename T, bool kPadded>
__global__ void __launch_bounds__(1024)
    blellochTilesKernel(const T* in, T* out, T* block_sums, std::size_t n, bool inclusive) {
  __shared__ T temp[kBlellochTile + (kPadded ? kBlellochTile >> kLogBanks : 0)];
  const std::size_t base = std::size_t(blockIdx.x) * kBlellochTile;
  const int low = threadIdx.x;
  const int high = threadIdx.x + kBlellochTile / 2;
  // Keep the inputs: the inclusive result is exclusive + input, exact for integers and floats.
  const T low_in = base + low < n ? in[base + low] : T(0);
  const T high_in = base + high < n ? in[base + high] : T(0);
  temp[bankPad<kPadded>(low)] = low_in;
  temp[bankPad<kPadded>(high)] = high_in;
  const T total = blellochTile<T, kPadded>(temp);
  if (base + low < n) out[base + low] = temp[bankPad<kPadded>(low)] + (inclusive ? low_in : T(0));
  if (base + high < n) {
    out[base + high] = temp[bankPad<kPadded>(high)] + (inclusive ? high_in : T(0));
  }
  if (block_sums != nullptr && threadIdx.x == 0) block_sums[blockIdx.x] = total;
}

// Adds the scanned total of all earlier tiles to every element of each tile.
template <typename T>
__global__ void addTileOffsetsKernel(T* data, const T* tile_offsets, std::size_t n, int tile) {
  const T offset = tile_offsets[blockIdx.x];
  const std::size_t base = std::size_t(blockIdx.x) * tile;
  for (int i = threadIdx.x; i < tile; i += blockDim.x) {
    if (base + i < n) data[base + i] += offset;
  }
}

template <typename T>
void launchTiles(ScanAlgorithm algorithm, const T* in, T* out, T* block_sums, std::size_t n,
                 bool inclusive, cudaStream_t stream) {
  const int tile = multiBlockTile(algorithm);
  const unsigned blocks = static_cast<unsigned>((n + tile - 1) / tile);
  switch (algorithm) {
    case ScanAlgorithm::kHillisSteele:
      hillisSteeleTilesKernel<T><<<blocks, 1024, 0, stream>>>(in, out, block_sums, n, inclusive);
      break;
    case ScanAlgorithm::kBlelloch:
      blellochTilesKernel<T, false><<<blocks, 1024, 0, stream>>>(in, out, block_sums, n, inclusive);
      break;
    default:
      blellochTilesKernel<T, true><<<blocks, 1024, 0, stream>>>(in, out, block_sums, n, inclusive);
      break;
  }
  CUOVERLAP_CHECK_LAUNCH();
}

template <typename T>
void scanLevel(ScanAlgorithm algorithm, bool inclusive, const T* in, T* out, std::size_t n,
               std::size_t level, const ScanWorkspace& workspace, cudaStream_t stream) {
  const int tile = multiBlockTile(algorithm);
  if (n <= static_cast<std::size_t>(tile)) {
    launchTiles<T>(algorithm, in, out, nullptr, n, inclusive, stream);
    return;
  }
  const std::size_t tiles = (n + tile - 1) / tile;
  T* sums = static_cast<T*>(workspace.blockSums(level));
  launchTiles<T>(algorithm, in, out, sums, n, inclusive, stream);
  // In place is safe: a tile kernel reads its whole tile into shared memory before writing it.
  scanLevel<T>(algorithm, false, sums, sums, tiles, level + 1, workspace, stream);
  addTileOffsetsKernel<T><<<static_cast<unsigned>(tiles), 256, 0, stream>>>(out, sums, n, tile);
  CUOVERLAP_CHECK_LAUNCH();
}

}  // namespace

int multiBlockTile(ScanAlgorithm algorithm) {
  return algorithm == ScanAlgorithm::kHillisSteele ? kHillisSteeleTile : kBlellochTile;
}

template <typename T>
void runMultiBlockScan(ScanAlgorithm algorithm, ScanKind kind, const T* d_in, T* d_out,
                       std::size_t n, const ScanWorkspace& workspace, cudaStream_t stream) {
  if (n == 0) return;
  scanLevel<T>(algorithm, kind == ScanKind::kInclusive, d_in, d_out, n, 0, workspace, stream);
}

template void runMultiBlockScan<std::int32_t>(ScanAlgorithm, ScanKind, const std::int32_t*,
                                              std::int32_t*, std::size_t, const ScanWorkspace&,
                                              cudaStream_t);
template void runMultiBlockScan<float>(ScanAlgorithm, ScanKind, const float*, float*, std::size_t,
                                       const ScanWorkspace&, cudaStream_t);

}  // namespace cuoverlap
