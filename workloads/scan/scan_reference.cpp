#include "scan_reference.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <fmt/format.h>

namespace cuoverlap {
namespace {

std::uint32_t mixBits(std::uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  x ^= x >> 33;
  return static_cast<std::uint32_t>(x);
}

// Error bound for a float prefix computed in any order. Two kinds of additions occur: sums
// inside a tree or a thread (depth about log2(n) + items per thread; every partial sum is at most
// S_i = sum of |x_j| up to i), and the carry chain across tiles (at most i / 1024 + 1 steps; every
// partial sum there is a true prefix, at most M_i = the largest |prefix| so far). Each addition
// errs by at most u = 2^-24 of its result, so |error_i| <= u * (depth * S_i + chain_i * M_i).
constexpr double kUnitRoundoff = 1.0 / (1 << 24);
constexpr double kSmallestTile = 1024.0;
constexpr double kTreeDepthSlack = 20.0;

}  // namespace

std::vector<std::int32_t> makeIntInput(std::size_t n, std::uint32_t seed) {
  std::vector<std::int32_t> values(n);
  for (std::size_t i = 0; i < n; ++i) values[i] = static_cast<std::int32_t>(mixBits(i ^ (std::uint64_t(seed) << 40)) & 7u);
  return values;
}

std::vector<float> makeFloatInput(std::size_t n, std::uint32_t seed) {
  std::vector<float> values(n);
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint32_t bits = mixBits(i ^ (std::uint64_t(seed) << 40)) >> 8;  // 24 random bits
    values[i] = static_cast<float>(bits) / float(1 << 23) - 1.0f;
  }
  return values;
}

void hostScan(const std::vector<std::int32_t>& in, std::vector<std::int32_t>& out, ScanKind kind) {
  out.resize(in.size());
  if (kind == ScanKind::kInclusive) {
    std::inclusive_scan(in.begin(), in.end(), out.begin());
  } else {
    std::exclusive_scan(in.begin(), in.end(), out.begin(), 0);
  }
}

std::size_t firstIntMismatch(const std::vector<std::int32_t>& in,
                             const std::vector<std::int32_t>& result, ScanKind kind) {
  std::int32_t prefix = 0;
  for (std::size_t i = 0; i < in.size(); ++i) {
    const std::int32_t expected = kind == ScanKind::kInclusive ? prefix + in[i] : prefix;
    if (i >= result.size() || result[i] != expected) return i;
    prefix += in[i];
  }
  return in.size();
}

std::size_t firstFloatMismatch(const std::vector<float>& in, const std::vector<float>& result,
                               ScanKind kind, std::string* detail) {
  const double depth = std::log2(double(in.size()) + 1.0) + kTreeDepthSlack;
  double prefix = 0.0;
  double abs_sum = 0.0;
  double max_prefix = 0.0;
  for (std::size_t i = 0; i < in.size(); ++i) {
    // The element's own term counts toward the bound for inclusive and exclusive alike.
    abs_sum += std::fabs(in[i]);
    const double expected = kind == ScanKind::kInclusive ? prefix + in[i] : prefix;
    max_prefix = std::max({max_prefix, std::fabs(prefix), std::fabs(prefix + in[i])});
    const double chain = double(i) / kSmallestTile + 1.0;
    const double tolerance = kUnitRoundoff * (depth * abs_sum + chain * max_prefix);
    if (i >= result.size() || std::fabs(double(result[i]) - expected) > tolerance) {
      if (detail != nullptr && i < result.size()) {
        *detail = fmt::format("got {} expected {} (tolerance {})", result[i], expected, tolerance);
      }
      return i;
    }
    prefix += in[i];
  }
  return in.size();
}

}  // namespace cuoverlap
