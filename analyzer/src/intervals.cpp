#include "cuoverlap/intervals.h"

#include <algorithm>

namespace cuoverlap {

namespace {
bool byStart(const Interval& a, const Interval& b) {
  return a.start != b.start ? a.start < b.start : a.end < b.end;
}
}  // namespace

std::vector<Interval> unionOf(std::vector<Interval> intervals) {
  std::sort(intervals.begin(), intervals.end(), byStart);
  std::vector<Interval> merged;
  for (const Interval& iv : intervals) {
    if (iv.end <= iv.start) continue;
    if (!merged.empty() && iv.start <= merged.back().end) {
      merged.back().end = std::max(merged.back().end, iv.end);
    } else {
      merged.push_back(iv);
    }
  }
  return merged;
}

std::vector<Interval> intersectionOf(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  std::vector<Interval> out;
  std::size_t i = 0;
  std::size_t j = 0;
  while (i < a.size() && j < b.size()) {
    Ns start = std::max(a[i].start, b[j].start);
    Ns end = std::min(a[i].end, b[j].end);
    if (start < end) out.push_back({start, end});
    // The interval that ends first cannot meet anything further in the other list.
    if (a[i].end < b[j].end) ++i; else ++j;
  }
  return out;
}

std::vector<Interval> differenceOf(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  std::vector<Interval> out;
  std::size_t j = 0;
  for (Interval rest : a) {
    while (j < b.size() && b[j].end <= rest.start) ++j;
    // b is sorted: its intervals that start inside `rest` cut it in order.
    for (std::size_t k = j; k < b.size() && b[k].start < rest.end && rest.start < rest.end; ++k) {
      if (b[k].start > rest.start) out.push_back({rest.start, b[k].start});
      rest.start = std::max(rest.start, b[k].end);
    }
    if (rest.start < rest.end) out.push_back(rest);
  }
  return out;
}

Ns totalLength(const std::vector<Interval>& disjoint) {
  Ns total = 0;
  for (const Interval& iv : disjoint) total += iv.length();
  return total;
}

std::vector<Ns> ConcurrencySweep::finish() {
  while (!active_ends_.empty()) {
    credit(active_ends_.top());
    active_ends_.pop();
  }
  // Trailing zeros above the maximum level never happen: levels are only created when reached.
  return std::move(histogram_);
}

std::vector<Ns> concurrencyHistogram(std::vector<Interval> intervals) {
  std::sort(intervals.begin(), intervals.end(), byStart);
  ConcurrencySweep sweep;
  for (const Interval& iv : intervals) sweep.add(iv.start, iv.end);
  return sweep.finish();
}

}  // namespace cuoverlap
