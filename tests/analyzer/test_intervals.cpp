// Interval arithmetic: hand-made cases, and the streaming forms checked against the list forms.
#include <catch2/catch.hpp>

#include <random>

#include "cuoverlap/intervals.h"

using cuoverlap::ConcurrencySweep;
using cuoverlap::Interval;
using cuoverlap::Ns;
using cuoverlap::UnionLength;

TEST_CASE("unionOf merges overlapping, nested and touching intervals", "[intervals]") {
  auto merged = cuoverlap::unionOf({{10, 20}, {15, 30}, {40, 50}, {42, 45}, {50, 55}, {60, 60}});
  REQUIRE(merged == std::vector<Interval>{{10, 30}, {40, 55}});
  REQUIRE(cuoverlap::totalLength(merged) == 35);
}

TEST_CASE("unionOf of nothing and of empty intervals is empty", "[intervals]") {
  REQUIRE(cuoverlap::unionOf({}).empty());
  REQUIRE(cuoverlap::unionOf({{5, 5}, {9, 3}}).empty());
}

TEST_CASE("intersectionOf keeps only common time", "[intervals]") {
  std::vector<Interval> a{{0, 10}, {20, 30}, {40, 50}};
  std::vector<Interval> b{{5, 25}, {28, 45}};
  auto common = cuoverlap::intersectionOf(a, b);
  REQUIRE(common == std::vector<Interval>{{5, 10}, {20, 25}, {28, 30}, {40, 45}});
  REQUIRE(cuoverlap::intersectionOf(a, {}).empty());
  REQUIRE(cuoverlap::intersectionOf({{0, 10}}, {{10, 20}}).empty());  // touching is not overlap
}

TEST_CASE("differenceOf keeps the time of the first set outside the second", "[intervals]") {
  const std::vector<Interval> a = {{0, 10}, {20, 30}, {40, 50}};
  const std::vector<Interval> b = {{5, 22}, {24, 26}, {28, 45}, {60, 70}};
  const std::vector<Interval> expected = {{0, 5}, {22, 24}, {26, 28}, {45, 50}};
  using cuoverlap::differenceOf;
  CHECK(differenceOf(a, b) == expected);
  CHECK(differenceOf(a, {}) == a);
  CHECK(differenceOf({}, b).empty());
  CHECK(differenceOf({{0, 10}}, {{0, 10}}).empty());
  CHECK(cuoverlap::totalLength(differenceOf(a, b)) + cuoverlap::totalLength(cuoverlap::intersectionOf(a, b)) ==
        cuoverlap::totalLength(a));
}

TEST_CASE("UnionLength streams the union length", "[intervals]") {
  UnionLength u;
  REQUIRE(u.length() == 0);
  u.add(10, 20);
  u.add(15, 30);
  u.add(30, 35);  // touching extends
  u.add(40, 41);
  u.add(50, 50);  // empty, ignored
  REQUIRE(u.length() == 26);
}

TEST_CASE("concurrency histogram of a hand-made case", "[intervals]") {
  // [0,10) alone, [10,15) with two, [15,20) with three, [20,30) idle, [30,40) one.
  auto h = cuoverlap::concurrencyHistogram({{0, 20}, {10, 20}, {15, 20}, {30, 40}});
  REQUIRE(h == std::vector<Ns>{10, 20, 5, 5});
}

TEST_CASE("concurrency sweep of a single interval and of none", "[intervals]") {
  REQUIRE(cuoverlap::concurrencyHistogram({{100, 250}}) == std::vector<Ns>{0, 150});
  REQUIRE(cuoverlap::concurrencyHistogram({}).empty());
}

TEST_CASE("streaming forms agree with brute force on random intervals", "[intervals]") {
  std::mt19937 rng(12345);
  std::uniform_int_distribution<Ns> start_of(0, 200);
  std::uniform_int_distribution<Ns> length_of(0, 30);
  for (int round = 0; round < 200; ++round) {
    std::vector<Interval> intervals(1 + round % 25);
    for (Interval& iv : intervals) {
      iv.start = start_of(rng);
      iv.end = iv.start + length_of(rng);
    }
    // Brute force: count active intervals at every nanosecond of [min start, max end).
    Ns lo = 1000, hi = -1;
    for (const Interval& iv : intervals) lo = std::min(lo, iv.start), hi = std::max(hi, iv.end);
    std::vector<Ns> expected;
    Ns busy = 0;
    for (Ns t = lo; t < hi; ++t) {
      std::size_t k = 0;
      for (const Interval& iv : intervals) k += (iv.start <= t && t < iv.end) ? 1 : 0;
      if (expected.size() <= k) expected.resize(k + 1, 0);
      ++expected[k];
      busy += k > 0 ? 1 : 0;
    }
    auto sorted = intervals;
    std::sort(sorted.begin(), sorted.end(),
              [](const Interval& a, const Interval& b) { return a.start < b.start; });
    UnionLength u;
    for (const Interval& iv : sorted) u.add(iv.start, iv.end);
    REQUIRE(u.length() == busy);
    REQUIRE(cuoverlap::totalLength(cuoverlap::unionOf(intervals)) == busy);
    auto histogram = cuoverlap::concurrencyHistogram(intervals);
    while (!expected.empty() && expected.back() == 0) expected.pop_back();
    while (!histogram.empty() && histogram.back() == 0) histogram.pop_back();
    REQUIRE(histogram == expected);
  }
}
