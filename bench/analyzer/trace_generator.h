// Writes a synthetic trace of N GPU ops in our schema (schema::kCreateTables): four streams of
// overlapping copies, kernels and memsets, 500 ns apart, like a pipelined workload.
#pragma once

#include <cstdint>
#include <string>

namespace cuoverlap::bench {

void writeSyntheticTrace(const std::string& path, std::int64_t ops);

}  // namespace cuoverlap::bench
