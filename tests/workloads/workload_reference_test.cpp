// The host references every workload is verified against: if these were wrong, a broken GPU
// result could pass as verified.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "scan/scan_reference.h"
#include "streams/affine_work.h"

namespace cuoverlap {
namespace {

// A float prefix sum in the order a multi-block GPU scan uses: sequential inside each tile, then
// tile totals carried from tile to tile. Differs from a sequential sum in the last bits.
std::vector<float> tiledFloatScan(const std::vector<float>& in, std::size_t tile, bool inclusive) {
  std::vector<float> out(in.size());
  float carry = 0.0f;
  for (std::size_t base = 0; base < in.size(); base += tile) {
    float local = 0.0f;
    for (std::size_t i = base; i < std::min(in.size(), base + tile); ++i) {
      out[i] = carry + (inclusive ? local + in[i] : local);
      local += in[i];
    }
    carry += local;
  }
  return out;
}

}  // namespace

TEST_CASE("the composed affine map equals stepping one at a time", "[workloads]") {
  for (int steps : {0, 1, 2, 7, 4500}) {
    const AffineMap map = composeAffine(steps);
    for (std::uint32_t x : {0u, 1u, 12345u, 0xffffffffu}) {
      std::uint32_t stepped = x;
      for (int s = 0; s < steps; ++s) stepped = stepped * kAffineMultiplier + kAffineIncrement;
      CHECK(map.apply(x) == stepped);
    }
  }
}

TEST_CASE("integer inputs are deterministic, small and seed-dependent", "[workloads]") {
  const auto a = makeIntInput(10000, 1);
  CHECK(a == makeIntInput(10000, 1));
  CHECK(a != makeIntInput(10000, 2));
  CHECK(std::all_of(a.begin(), a.end(), [](std::int32_t v) { return v >= 0 && v <= 7; }));
  CHECK(std::count(a.begin(), a.end(), 7) > 0);  // the whole range is used
}

TEST_CASE("the host scan and the exact integer check", "[workloads]") {
  const std::vector<std::int32_t> in = {1, 2, 3, 4};
  std::vector<std::int32_t> inclusive, exclusive;
  hostScan(in, inclusive, ScanKind::kInclusive);
  hostScan(in, exclusive, ScanKind::kExclusive);
  CHECK(inclusive == std::vector<std::int32_t>{1, 3, 6, 10});
  CHECK(exclusive == std::vector<std::int32_t>{0, 1, 3, 6});
  CHECK(firstIntMismatch(in, inclusive, ScanKind::kInclusive) == 4);
  CHECK(firstIntMismatch(in, exclusive, ScanKind::kExclusive) == 4);
  CHECK(firstIntMismatch(in, exclusive, ScanKind::kInclusive) == 0);  // kinds swapped
  auto corrupt = inclusive;
  corrupt[2] += 1;
  CHECK(firstIntMismatch(in, corrupt, ScanKind::kInclusive) == 2);
  CHECK(firstIntMismatch(in, std::vector<std::int32_t>{1, 3}, ScanKind::kInclusive) == 2);  // short
}

TEST_CASE("the float check accepts another summation order", "[workloads]") {
  const auto in = makeFloatInput(std::size_t(1) << 20, 2);
  for (bool inclusive : {true, false}) {
    const ScanKind kind = inclusive ? ScanKind::kInclusive : ScanKind::kExclusive;
    std::string detail;
    CHECK(firstFloatMismatch(in, tiledFloatScan(in, 1024, inclusive), kind, &detail) == in.size());
    CHECK(firstFloatMismatch(in, tiledFloatScan(in, 8192, inclusive), kind, &detail) == in.size());
  }
}

TEST_CASE("the float check catches misplaced elements and tiles", "[workloads]") {
  const auto in = makeFloatInput(5000, 2);
  auto good = tiledFloatScan(in, 1024, true);
  std::string detail;
  auto shifted = good;  // tile 1 read one element late: a classic off-by-one at a tile boundary
  for (std::size_t i = 1024; i < 2048; ++i) shifted[i] = good[i] - in[i] + in[i - 1];
  CHECK(firstFloatMismatch(in, shifted, ScanKind::kInclusive, &detail) <= 1100);
  CHECK_FALSE(detail.empty());
  auto missing_carry = good;  // tile 2 without the total of the tiles before it
  const float carry = good[2047];
  for (std::size_t i = 2048; i < 3072; ++i) missing_carry[i] -= carry;
  CHECK(firstFloatMismatch(in, missing_carry, ScanKind::kInclusive, nullptr) == 2048);
  CHECK(firstFloatMismatch(in, good, ScanKind::kExclusive, nullptr) == 0);  // kinds swapped
}

}  // namespace cuoverlap
