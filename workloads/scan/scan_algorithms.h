// The prefix-scan family: one host entry point over every algorithm, so the benchmark, the
// correctness sweep and the streamed mode treat them alike.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

namespace cuoverlap {

enum class ScanAlgorithm {
  kHillisSteele,    // step-efficient, double-buffered, one block per tile
  kBlelloch,        // work-efficient up/down-sweep (Harris, Sengupta, Owens)
  kBlellochPadded,  // the same with bank-conflict-free shared-memory indexing
  kLookback,        // single pass, decoupled look-back (Merrill & Garland)
  kCub,             // cub::DeviceScan, the reference
};

enum class ScanKind { kInclusive, kExclusive };

const std::vector<ScanAlgorithm>& allScanAlgorithms();
std::string scanAlgorithmName(ScanAlgorithm algorithm);
// Throws std::invalid_argument on an unknown name.
ScanAlgorithm parseScanAlgorithm(const std::string& name);

// Device scratch sized once for scans of up to max_n elements of 4-byte types, so timed runs
// allocate nothing (an allocation inside a timed loop would also synchronize the device).
class ScanWorkspace {
 public:
  explicit ScanWorkspace(std::size_t max_n);
  ~ScanWorkspace();
  ScanWorkspace(const ScanWorkspace&) = delete;
  ScanWorkspace& operator=(const ScanWorkspace&) = delete;

  std::size_t maxN() const { return max_n_; }
  // Per recursion level of the multi-block scan: one partial sum per tile of the level below.
  void* blockSums(std::size_t level) const { return block_sums_.at(level); }
  // Look-back tile descriptors followed by the dynamic tile counter.
  unsigned long long* tileStatus() const { return tile_status_; }
  void* cubTemp() const { return cub_temp_; }
  std::size_t cubTempBytes() const { return cub_temp_bytes_; }

 private:
  std::size_t max_n_;
  std::vector<void*> block_sums_;
  unsigned long long* tile_status_ = nullptr;
  void* cub_temp_ = nullptr;
  std::size_t cub_temp_bytes_ = 0;
};

// Scans n elements of d_in into d_out (distinct buffers) on `stream`; n may be any length up to
// the workspace's maxN(). Instantiated for std::int32_t and float.
template <typename T>
void runScan(ScanAlgorithm algorithm, ScanKind kind, const T* d_in, T* d_out, std::size_t n,
             const ScanWorkspace& workspace, cudaStream_t stream);

// Single-pass look-back scan that adds *d_carry_in (when not null) to every output and writes
// the running total after the last element to *d_carry_out (when not null): how the streamed
// mode chains tiles without a host round trip. `status` needs lookbackStatusWords(n) words.
template <typename T>
void runLookbackScan(ScanKind kind, const T* d_in, T* d_out, std::size_t n,
                     unsigned long long* status, const T* d_carry_in, T* d_carry_out,
                     cudaStream_t stream);
std::size_t lookbackStatusWords(std::size_t n);

}  // namespace cuoverlap
