// Interval arithmetic on half-open nanosecond intervals [start, end): union, intersection and the
// concurrency sweep that every overlap metric is built from.
//
// Two forms: list functions (unionOf, intersectionOf) for small sets and tests, and streaming
// accumulators (UnionLength, ConcurrencySweep) that take intervals in non-decreasing start order
// and keep O(1) (resp. O(max concurrency)) state, so that metrics over 10^7 ops need no copies.
#pragma once

#include <cstdint>
#include <queue>
#include <vector>

#include "cuoverlap/model.h"

namespace cuoverlap {

struct Interval {
  Ns start = 0;
  Ns end = 0;
  Ns length() const { return end > start ? end - start : 0; }
  friend bool operator==(const Interval& a, const Interval& b) {
    return a.start == b.start && a.end == b.end;
  }
};

// Sorted, disjoint, non-touching intervals covering exactly the input. Empty intervals vanish.
std::vector<Interval> unionOf(std::vector<Interval> intervals);

// Intersection of two unions (each sorted and disjoint, as unionOf returns).
std::vector<Interval> intersectionOf(const std::vector<Interval>& a, const std::vector<Interval>& b);

// The time of `a` outside `b` (each sorted and disjoint, as unionOf returns).
std::vector<Interval> differenceOf(const std::vector<Interval>& a, const std::vector<Interval>& b);

// Total length of sorted disjoint intervals.
Ns totalLength(const std::vector<Interval>& disjoint);

// Length of the union of intervals added in non-decreasing start order. O(1) state.
class UnionLength {
 public:
  void add(Ns start, Ns end) {  // inline: a call per op in most passes
    if (end <= start) return;
    if (open_ && start <= end_) {
      end_ = end_ < end ? end : end_;
      return;
    }
    if (open_) total_ += end_ - start_;
    start_ = start;
    end_ = end;
    open_ = true;
  }
  Ns length() const { return total_ + (open_ ? end_ - start_ : 0); }

 private:
  Ns start_ = 0;
  Ns end_ = 0;
  Ns total_ = 0;
  bool open_ = false;
};

// Time spent with exactly k intervals active, k = 0..max, between the first start and the last
// end. Intervals are added in non-decreasing start order; state is a min-heap of the active ends.
class ConcurrencySweep {
 public:
  void add(Ns start, Ns end) {  // inline, with advanceTo and credit: a call per op of the metrics
    if (end < start) return;
    if (!started_) {
      now_ = start;
      started_ = true;
    }
    advanceTo(start);
    if (end > start) active_ends_.push(end);
  }
  // Drains the remaining active intervals; call once, after the last add().
  std::vector<Ns> finish();

 private:
  // Retires every active interval that ends at or before `time`.
  void advanceTo(Ns time) {
    while (!active_ends_.empty() && active_ends_.top() <= time) {
      credit(active_ends_.top());
      active_ends_.pop();
    }
    credit(time);
  }
  // Time from now_ to until spent at the current level.
  void credit(Ns until) {
    if (until <= now_) return;
    std::size_t level = active_ends_.size();
    if (histogram_.size() <= level) histogram_.resize(level + 1, 0);
    histogram_[level] += until - now_;
    now_ = until;
  }

  std::priority_queue<Ns, std::vector<Ns>, std::greater<Ns>> active_ends_;
  std::vector<Ns> histogram_;
  Ns now_ = 0;
  bool started_ = false;
};

// Convenience for lists: the concurrency histogram of arbitrary (unsorted) intervals.
std::vector<Ns> concurrencyHistogram(std::vector<Interval> intervals);

}  // namespace cuoverlap
