// Edit distance for "did you mean": NVTX range names (--range) and subcommand names.
#pragma once

#include <cstddef>
#include <string_view>

namespace cuoverlap {

// Insertions, deletions and substitutions turning `a` into `b`, ignoring ASCII case.
std::size_t editDistance(std::string_view a, std::string_view b);

}  // namespace cuoverlap
