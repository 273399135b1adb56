// diagnosis/overlap_index.h: the intervals overlapping a query, against a walk of them all, with
// lengths over six orders of magnitude and intervals that span all the others.
#include <catch2/catch.hpp>

#include <algorithm>
#include <random>
#include <vector>

#include "diagnosis/overlap_index.h"

namespace cuoverlap {
namespace {

struct Span {
  Ns start = 0;
  Ns end = 0;
  int id = 0;
};

std::vector<int> overlapping(const diagnosis::OverlapIndex<Span>& index, Ns from, Ns to) {
  std::vector<int> ids;
  index.forEachOverlapping(from, to, [&](const Span& s) { ids.push_back(s.id); });
  std::sort(ids.begin(), ids.end());
  return ids;
}

std::vector<int> walkAll(const std::vector<Span>& spans, Ns from, Ns to) {
  std::vector<int> ids;
  for (const Span& s : spans) {
    if (s.end > s.start && s.start < to && s.end > from) ids.push_back(s.id);
  }
  return ids;
}

TEST_CASE("overlap index: the intervals a walk of them all finds") {
  std::mt19937_64 random(43);
  std::vector<Span> spans;
  for (int id = 0; id < 2'000; ++id) {
    const Ns start = static_cast<Ns>(random() % 1'000'000);
    // Lengths over six orders of magnitude, some empty, one spanning everything.
    const Ns length = id == 7 ? 10'000'000 : static_cast<Ns>(random() % 7 == 0 ? 0 : 1 + random() % (1 << (random() % 20)));
    spans.push_back({id == 7 ? -5'000'000 : start, (id == 7 ? -5'000'000 : start) + length, id});
  }
  const diagnosis::OverlapIndex<Span> index(spans);
  for (int q = 0; q < 500; ++q) {
    const Ns from = static_cast<Ns>(random() % 1'100'000) - 50'000;
    const Ns to = from + static_cast<Ns>(random() % (1 << (random() % 18)));
    CHECK(overlapping(index, from, to) == walkAll(spans, from, to));
  }
  CHECK(overlapping(index, 10, 10).empty() == walkAll(spans, 10, 10).empty());
  CHECK(diagnosis::OverlapIndex<Span>({}).empty());
}

TEST_CASE("overlap index: an interval spanning the rest is found beside each short one") {
  // 10,000 short intervals one after another and one spanning them all (the shape that made a walk
  // by start from the query less the longest length visit them all): each query of a short
  // interval's extent finds it and the spanning one.
  std::vector<Span> spans;
  for (int id = 0; id < 10'000; ++id) spans.push_back({id * 100, id * 100 + 50, id});
  spans.push_back({-1, 2'000'000, -1});
  const diagnosis::OverlapIndex<Span> index(spans);
  for (int id = 0; id < 10'000; id += 97) {
    CHECK(overlapping(index, id * 100 + 10, id * 100 + 20) == std::vector<int>{-1, id});
  }
}

}  // namespace
}  // namespace cuoverlap
