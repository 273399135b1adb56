// Lean API tracing: which CUDA runtime and driver calls the collector records. The analysis reads
// launches (to join ops to the calls that made them and measure launch gaps), copies and memsets
// (sync vs async), synchronizations, CUDA event record/query/sync/wait, stream create/destroy/wait,
// allocations and frees, host registration, graph launch/instantiate/upload and capture,
// module/library load and link (JIT stalls), and context/device set. Everything else
// (cudaGetDevice, cudaGetLastError, cuCtxGetCurrent, attribute queries, ...) is what made a
// PyTorch step 40% slower under tracing and is never read: it is not recorded.
//
// Calls are chosen by name prefix so that every version of a call is taken (_v3020, _ptsz, _ptds,
// WithFlags, Async, ...); the full list is in docs/collector.md.
#pragma once

#include <string_view>

namespace cuoverlap::collector::activity {

bool isLeanRuntimeApi(std::string_view name);
bool isLeanDriverApi(std::string_view name);

}  // namespace cuoverlap::collector::activity
