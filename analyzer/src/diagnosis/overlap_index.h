// Intervals that overlap a query interval, found without walking the ones that ended before it.
//
// Sorted by start alone, the intervals overlapping [from, to) begin in [from - longest, to), and a
// walk of that range visits every interval begun up to `longest` before `from`: with one interval
// as long as the trace (a thread's synchronize or copy that waited through the run), every query
// walks them all, quadratic in the count (implicit-sync-call's held calls took 75% of the analysis
// of 128k launches so: docs/BENCHMARKS.md, "Forty-third session"). Here intervals are kept in
// classes of length [2^k, 2^(k+1)) ns, each sorted by start and walked from `from` less its own
// longest: an interval visited and left out began at most twice its length before `from`.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "cuoverlap/intervals.h"
#include "cuoverlap/model.h"

namespace cuoverlap::diagnosis {

// T: any type with `start` and `end` (Ns, end > start for an interval that can overlap anything).
template <typename T>
class OverlapIndex {
 public:
  explicit OverlapIndex(const std::vector<T>& items) {
    std::vector<T> by_class[kClasses];
    for (const T& item : items) {
      if (item.end <= item.start) continue;
      by_class[lengthClass(static_cast<std::uint64_t>(item.end - item.start))].push_back(item);
    }
    for (std::vector<T>& members : by_class) {
      if (members.empty()) continue;
      std::sort(members.begin(), members.end(), [](const T& a, const T& b) { return a.start < b.start; });
      Ns longest = 0;
      for (const T& item : members) longest = std::max(longest, item.end - item.start);
      classes_.push_back({longest, std::move(members)});
    }
  }

  bool empty() const { return classes_.empty(); }

  // Calls f(item) for each item with start < to and end > from, in no particular order.
  template <typename F>
  void forEachOverlapping(Ns from, Ns to, F f) const {
    for (const Class& c : classes_) {
      auto it = std::lower_bound(c.by_start.begin(), c.by_start.end(), from - c.longest,
                                 [](const T& item, Ns t) { return item.start < t; });
      for (; it != c.by_start.end() && it->start < to; ++it) {
        if (it->end > from) f(*it);
      }
    }
  }

 private:
  static constexpr int kClasses = 64;
  // floor(log2(length)), length > 0.
  static int lengthClass(std::uint64_t length) {
    int k = 0;
    while (length >>= 1) ++k;
    return k;
  }
  struct Class {
    Ns longest = 0;
    std::vector<T> by_start;
  };
  std::vector<Class> classes_;
};

// How much of [from, to) the items of `index` for which keep(item) holds cover (their union).
template <typename T, typename Keep>
Ns coveredLength(const OverlapIndex<T>& index, Ns from, Ns to, Keep keep) {
  std::vector<Interval> parts;
  index.forEachOverlapping(from, to, [&](const T& item) {
    if (keep(item)) parts.push_back({std::max(from, item.start), std::min(to, item.end)});
  });
  std::sort(parts.begin(), parts.end(), [](const Interval& a, const Interval& b) { return a.start < b.start; });
  UnionLength covered;
  for (const Interval& part : parts) covered.add(part.start, part.end);
  return covered.length();
}

}  // namespace cuoverlap::diagnosis
