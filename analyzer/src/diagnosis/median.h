// The median the what-if's measured constants take (hand-offs, turnarounds, launch times).
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

#include "cuoverlap/model.h"

namespace cuoverlap::diagnosis {

// The upper median of `values` (the element at size / 2 in order); 0 when there is none.
inline Ns medianOf(std::vector<Ns> values) {
  if (values.empty()) return 0;
  const auto middle = values.begin() + static_cast<std::ptrdiff_t>(values.size() / 2);
  std::nth_element(values.begin(), middle, values.end());
  return *middle;
}

// Hand-off lags sampled per (from engine, to engine) slot pair (event waits' release lags, the
// legacy barrier's): a pair's median, else, for a pair without a sample, the median of all.
class EnginePairLags {
 public:
  void add(const GpuOp& from, const GpuOp& to, Ns lag) {
    samples_[pairOf(from, to)].push_back(lag);
    all_.push_back(lag);
  }
  bool empty() const { return all_.empty(); }
  // The lag of an edge from `from` to `to`; 0 without any sample.
  Ns lag(const GpuOp& from, const GpuOp& to) {
    if (!settled_) settle();
    const std::size_t pair = pairOf(from, to);
    return samples_[pair].empty() ? any_ : medians_[pair];
  }

 private:
  static std::size_t pairOf(const GpuOp& from, const GpuOp& to) {
    return engineSlot(engineOf(from)) * kEngineSlots + engineSlot(engineOf(to));
  }
  void settle() {
    for (std::size_t pair = 0; pair < samples_.size(); ++pair) medians_[pair] = medianOf(samples_[pair]);
    any_ = medianOf(all_);
    settled_ = true;
  }
  std::vector<std::vector<Ns>> samples_ = std::vector<std::vector<Ns>>(kEngineSlots * kEngineSlots);
  std::vector<Ns> medians_ = std::vector<Ns>(kEngineSlots * kEngineSlots);
  std::vector<Ns> all_;
  Ns any_ = 0;
  bool settled_ = false;
};

}  // namespace cuoverlap::diagnosis
