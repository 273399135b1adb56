// Entry points shared between the scan translation units; not part of the workload's interface.
#pragma once

#include "scan_algorithms.h"

namespace cuoverlap {

// Hillis-Steele and both Blelloch variants: tile scans, a recursive scan of the tile totals,
// then one pass adding each tile's offset.
template <typename T>
void runMultiBlockScan(ScanAlgorithm algorithm, ScanKind kind, const T* d_in, T* d_out,
                       std::size_t n, const ScanWorkspace& workspace, cudaStream_t stream);

// Elements per tile of the multi-block scan for `algorithm`.
int multiBlockTile(ScanAlgorithm algorithm);

// Tile shapes of the look-back scan (threads x items, cache hints), for `cuoverlap-scan tune`;
// variant 0 is what runLookbackScan uses.
std::size_t lookbackVariantCount();
std::string lookbackVariantName(std::size_t variant);
template <typename T>
void runLookbackScanVariant(std::size_t variant, ScanKind kind, const T* d_in, T* d_out,
                            std::size_t n, unsigned long long* status, const T* d_carry_in,
                            T* d_carry_out, cudaStream_t stream);

template <typename T>
std::size_t cubTempBytes(std::size_t n);

template <typename T>
void runCubScan(ScanKind kind, const T* d_in, T* d_out, std::size_t n, void* temp,
                std::size_t temp_bytes, cudaStream_t stream);

}  // namespace cuoverlap
