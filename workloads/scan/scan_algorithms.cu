// Algorithm names, the shared workspace, CUB's DeviceScan and the dispatch over all scans.
#include "scan_algorithms.h"

#include <algorithm>
#include <cstdint>
#include <stdexcept>

#include <cub/device/device_scan.cuh>

#include "../common/cuda_check.h"
#include "scan_internal.h"

namespace cuoverlap {

const std::vector<ScanAlgorithm>& allScanAlgorithms() {
  static const std::vector<ScanAlgorithm> algorithms = {
      ScanAlgorithm::kHillisSteele, ScanAlgorithm::kBlelloch, ScanAlgorithm::kBlellochPadded,
      ScanAlgorithm::kLookback, ScanAlgorithm::kCub};
  return algorithms;
}

std::string scanAlgorithmName(ScanAlgorithm algorithm) {
  switch (algorithm) {
    case ScanAlgorithm::kHillisSteele: return "hillis-steele";
    case ScanAlgorithm::kBlelloch: return "blelloch";
    case ScanAlgorithm::kBlellochPadded: return "blelloch-padded";
    case ScanAlgorithm::kLookback: return "lookback";
    case ScanAlgorithm::kCub: return "cub";
  }
  return "unknown";
}

ScanAlgorithm parseScanAlgorithm(const std::string& name) {
  for (ScanAlgorithm algorithm : allScanAlgorithms()) {
    if (scanAlgorithmName(algorithm) == name) return algorithm;
  }
  throw std::invalid_argument("unknown scan algorithm '" + name + "'");
}

template <typename T>
std::size_t cubTempBytes(std::size_t n) {
  std::size_t inclusive = 0;
  std::size_t exclusive = 0;
  const auto items = static_cast<std::int64_t>(n);
  CUOVERLAP_CUDA_CHECK(cub::DeviceScan::InclusiveSum(nullptr, inclusive, static_cast<const T*>(nullptr),
                                                     static_cast<T*>(nullptr), items));
  CUOVERLAP_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(nullptr, exclusive, static_cast<const T*>(nullptr),
                                                     static_cast<T*>(nullptr), items));
  return std::max(inclusive, exclusive);
}

template <typename T>
void runCubScan(ScanKind kind, const T* d_in, T* d_out, std::size_t n, void* temp,
                std::size_t temp_bytes, cudaStream_t stream) {
  const auto items = static_cast<std::int64_t>(n);
  if (kind == ScanKind::kInclusive) {
    CUOVERLAP_CUDA_CHECK(cub::DeviceScan::InclusiveSum(temp, temp_bytes, d_in, d_out, items, stream));
  } else {
    CUOVERLAP_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(temp, temp_bytes, d_in, d_out, items, stream));
  }
}

ScanWorkspace::ScanWorkspace(std::size_t max_n) : max_n_(max_n) {
  // The smallest tile gives the most block sums at every level; both element types are 4 bytes.
  const std::size_t tile = std::min(multiBlockTile(ScanAlgorithm::kHillisSteele),
                                    multiBlockTile(ScanAlgorithm::kBlelloch));
  for (std::size_t count = max_n; count > tile;) {
    count = (count + tile - 1) / tile;
    void* sums = nullptr;
    CUOVERLAP_CUDA_CHECK(cudaMalloc(&sums, count * sizeof(float)));
    block_sums_.push_back(sums);
  }
  CUOVERLAP_CUDA_CHECK(cudaMalloc(&tile_status_, lookbackStatusWords(max_n) * sizeof(*tile_status_)));
  cub_temp_bytes_ = std::max(cuoverlap::cubTempBytes<std::int32_t>(max_n), cuoverlap::cubTempBytes<float>(max_n));
  CUOVERLAP_CUDA_CHECK(cudaMalloc(&cub_temp_, std::max<std::size_t>(cub_temp_bytes_, 1)));
}

ScanWorkspace::~ScanWorkspace() {
  for (void* sums : block_sums_) cudaFree(sums);
  cudaFree(tile_status_);
  cudaFree(cub_temp_);
}

template <typename T>
void runScan(ScanAlgorithm algorithm, ScanKind kind, const T* d_in, T* d_out, std::size_t n,
             const ScanWorkspace& workspace, cudaStream_t stream) {
  if (n > workspace.maxN()) throw std::invalid_argument("scan longer than its workspace");
  switch (algorithm) {
    case ScanAlgorithm::kLookback:
      runLookbackScan<T>(kind, d_in, d_out, n, workspace.tileStatus(), nullptr, nullptr, stream);
      return;
    case ScanAlgorithm::kCub:
      runCubScan<T>(kind, d_in, d_out, n, workspace.cubTemp(), workspace.cubTempBytes(), stream);
      return;
    default:
      runMultiBlockScan<T>(algorithm, kind, d_in, d_out, n, workspace, stream);
      return;
  }
}

template void runScan<std::int32_t>(ScanAlgorithm, ScanKind, const std::int32_t*, std::int32_t*,
                                    std::size_t, const ScanWorkspace&, cudaStream_t);
template void runScan<float>(ScanAlgorithm, ScanKind, const float*, float*, std::size_t,
                             const ScanWorkspace&, cudaStream_t);

}  // namespace cuoverlap
