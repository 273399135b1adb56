// Writes a synthetic trace of N GPU ops in our schema (schema::kCreateTables): four streams of
// overlapping copies, kernels and memsets, 500 ns apart, like a pipelined workload.
#pragma once

#include <cstdint>
#include <string>

namespace cuoverlap::bench {

void writeSyntheticTrace(const std::string& path, std::int64_t ops);

// The same workload as one rank of a data-parallel job: process 1000 + rank, and every 50th op an
// NCCL all-reduce kernel on stream 20 (the communicator's stream), started rank * 100 ns late.
void writeSyntheticRankTrace(const std::string& path, std::int64_t ops, int rank);
// The same ops, each launched by a runtime call 3 µs before it starts (cudaLaunchKernel,
// cudaMemcpyAsync, cudaMemsetAsync on one thread), and `ranges` NVTX push/pop ranges "step"
// splitting the calls into equal consecutive runs: the scoped benchmark's trace.
void writeSyntheticTraceWithRanges(const std::string& path, std::int64_t ops, std::int64_t ranges);

}  // namespace cuoverlap::bench
