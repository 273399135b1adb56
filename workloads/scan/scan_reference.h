// Host side of the scan workloads: input data, the reference scan, and result checks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "scan_algorithms.h"

namespace cuoverlap {

// Deterministic inputs. Integers lie in [0, 7], so a prefix of 2^28 elements stays below
// 2^31: the int32 check is exact with no overflow. Floats lie in [-1, 1).
std::vector<std::int32_t> makeIntInput(std::size_t n, std::uint32_t seed);
std::vector<float> makeFloatInput(std::size_t n, std::uint32_t seed);

// Sequential host scan: the reference, and the "CPU ms" column of the benchmark.
void hostScan(const std::vector<std::int32_t>& in, std::vector<std::int32_t>& out, ScanKind kind);

// Index of the first mismatch, or n when the result is right. Integers must match exactly.
std::size_t firstIntMismatch(const std::vector<std::int32_t>& in,
                             const std::vector<std::int32_t>& result, ScanKind kind);

// Floats are compared with a double-precision reference. Any summation order is accepted whose
// error stays within the bound described in scan_reference.cpp.
std::size_t firstFloatMismatch(const std::vector<float>& in, const std::vector<float>& result,
                               ScanKind kind, std::string* detail);

}  // namespace cuoverlap
