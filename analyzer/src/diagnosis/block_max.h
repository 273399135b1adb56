// Range-maximum and "which earlier items still run at time t" queries over items sorted by start.
//
// Items are addressed by position 0..n-1 and their value (an end time) is read through a callback,
// so the index itself stores only one maximum per block of kBlock positions plus a segment tree
// over those blocks: 2 * n / 64 * 8 bytes, a quarter of a byte per item. Both queries descend the
// tree and scan only the blocks that can hold an answer:
//   maxIn(l, r)            O(kBlock + log n)
//   forEachAbove(p, t, f)  every position q < p with value(q) > t, increasing: O((k + 1) * (kBlock
//                          + log n)) for k answers, whatever the values before p look like (a
//                          prefix maximum would rescan to the start behind one long item).
// This is the part of Perfetto's IntervalIntersector we need: windows over intervals that overlap.
#pragma once

#include <cstddef>
#include <limits>
#include <vector>

#include "cuoverlap/model.h"

namespace cuoverlap::diagnosis {

class BlockMaxTree {
 public:
  static constexpr std::size_t kBlock = 64;
  static constexpr Ns kNone = std::numeric_limits<Ns>::min();

  BlockMaxTree() = default;

  template <typename Value>
  BlockMaxTree(std::size_t size, Value value) : size_(size) {
    const std::size_t blocks = (size + kBlock - 1) / kBlock;
    leaves_ = 1;
    while (leaves_ < blocks) leaves_ *= 2;
    tree_.assign(2 * leaves_, kNone);
    for (std::size_t p = 0; p < size; ++p) {
      Ns& block = tree_[leaves_ + p / kBlock];
      const Ns v = value(p);
      if (v > block) block = v;
    }
    for (std::size_t node = leaves_ - 1; node >= 1; --node) {
      tree_[node] = tree_[2 * node] > tree_[2 * node + 1] ? tree_[2 * node] : tree_[2 * node + 1];
    }
  }

  std::size_t size() const { return size_; }

  // The largest value at positions [l, r); kNone when the range is empty.
  template <typename Value>
  Ns maxIn(std::size_t l, std::size_t r, Value value) const {
    Ns best = kNone;
    const auto take = [&](Ns v) { best = v > best ? v : best; };
    if (r > size_) r = size_;
    while (l < r && l % kBlock != 0) take(value(l++));
    while (r > l && r % kBlock != 0) take(value(--r));
    if (l >= r) return best;
    // Whole blocks [l / kBlock, r / kBlock): the iterative segment-tree query.
    for (std::size_t lo = leaves_ + l / kBlock, hi = leaves_ + r / kBlock; lo < hi; lo /= 2, hi /= 2) {
      if (lo & 1) take(tree_[lo++]);
      if (hi & 1) take(tree_[--hi]);
    }
    return best;
  }

  // The items (positions 0..size-1, sorted by start_of) that overlap [a, b), in position order:
  // those that began before a and end after `ended_after`, then those that begin in [a, b) and
  // `keep` keeps. Two binary searches and forEachAbove: O(log n + answers) blocks scanned.
  template <typename StartOf, typename EndOf, typename Keep, typename Visit>
  void forEachOverlapping(StartOf start_of, EndOf end_of, Ns a, Ns b, Ns ended_after, Keep keep,
                          Visit visit) const {
    const std::size_t first = firstStartingAtOrAfter(start_of, 0, a);
    const std::size_t last = firstStartingAtOrAfter(start_of, first, b);
    forEachAbove(first, ended_after, end_of, visit);
    for (std::size_t q = first; q < last; ++q) {
      if (keep(q)) visit(q);
    }
  }

  // Calls visit(q) for every position q < end with value(q) > threshold, in increasing order.
  template <typename Value, typename Visit>
  void forEachAbove(std::size_t end, Ns threshold, Value value, Visit visit) const {
    if (end > size_) end = size_;
    if (end == 0) return;
    descend(1, 0, leaves_, end, threshold, value, visit);
  }

 private:
  // The first position from `from` on whose start is >= t (size_ when none).
  template <typename StartOf>
  std::size_t firstStartingAtOrAfter(StartOf start_of, std::size_t from, Ns t) const {
    std::size_t lo = from;
    std::size_t hi = size_;
    while (lo < hi) {
      const std::size_t mid = lo + (hi - lo) / 2;
      if (start_of(mid) < t) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  // Node `node` covers blocks [first, last).
  template <typename Value, typename Visit>
  void descend(std::size_t node, std::size_t first, std::size_t last, std::size_t end, Ns threshold,
               Value& value, Visit& visit) const {
    if (first * kBlock >= end || tree_[node] <= threshold) return;
    if (last - first == 1) {
      const std::size_t stop = (first + 1) * kBlock < end ? (first + 1) * kBlock : end;
      for (std::size_t q = first * kBlock; q < stop; ++q) {
        if (value(q) > threshold) visit(q);
      }
      return;
    }
    const std::size_t middle = (first + last) / 2;
    descend(2 * node, first, middle, end, threshold, value, visit);
    descend(2 * node + 1, middle, last, end, threshold, value, visit);
  }

  std::size_t size_ = 0;
  std::size_t leaves_ = 1;
  std::vector<Ns> tree_;
};

}  // namespace cuoverlap::diagnosis
