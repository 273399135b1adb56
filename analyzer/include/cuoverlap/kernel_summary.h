// The kernels that took the most GPU time, per device (the table users know from `nsys stats`'s
// cuda_gpu_kern_sum): for each kernel name, its launches, total, mean, shortest and longest time,
// and its share of the device's kernel time. Times are clipped to the scope's window.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "cuoverlap/report.h"

namespace cuoverlap {

// Per device in scope: every kernel name (or the first `limit`) by total time (ties: by name), in
// one pass over trace.ops. share = total / the device's summed kernel time. The report keeps them
// all (JSON `kernel_summary`); the text, Markdown and HTML tables show the first rows
// (Report::kernel_rows).
std::map<std::uint16_t, std::vector<KernelSummary>> summarizeKernels(
    const Trace& trace, const Scope& scope, std::size_t limit = static_cast<std::size_t>(-1));

}  // namespace cuoverlap
