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

}  // namespace cuoverlap::diagnosis
