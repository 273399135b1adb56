// Which ops of a device the program ordered with each other: stream order (each op after the
// previous op of its stream) and the event waits that carry data (stream_waits.h, kept by
// waitIsRealDependency), closed transitively. Two ops ordered that way can never run side by side
// however the work is issued: a copy and the kernel that reads its buffer, or a kernel and the
// copy that brings its result back. Host ordering (a synchronize between them) is not a
// dependency: removing it is the host findings' fix.
//
// Algorithm: the ops of one stream are a chain, so the ancestors of an op on any stream are a
// prefix of that stream's ops and its descendants a suffix. One pass in start order carries, per
// op, the last ancestor position on every stream (a vector clock over the streams), one pass in
// reverse the first descendant position; prefix sums of kernels per stream then count the
// kernels ordered with an op. Cost: O(n x S) time, O(n + S^2) memory (a clock row per stream,
// kept per op only for the ends of waits) for n ops on S streams; above kMaxClockEntries (n x S)
// the answer is "unknown" (empty), and callers keep their dependency-free rule. Without a wait
// that carries data, stream order alone decides, in O(n) time and O(S) memory, at any size.
#pragma once

#include <cstddef>
#include <vector>

#include "diagnosis/device_view.h"

namespace cuoverlap::diagnosis {

inline constexpr std::size_t kMaxClockEntries = std::size_t{1} << 23;

// Per position of view.ops(): true when every kernel of the view is an ancestor or a descendant of
// that op (for a kernel: every other kernel), so that it could not overlap any kernel. Empty when
// the view is too large to tell (see kMaxClockEntries; never without data-carrying waits).
std::vector<bool> orderedWithEveryKernel(const DeviceView& view);

}  // namespace cuoverlap::diagnosis
