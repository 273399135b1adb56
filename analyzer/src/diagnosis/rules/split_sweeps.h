// How the split's lanes' kernels share the device (single-stream's split, single_stream_fixes.cpp):
// few-block kernels that sweep large buffers (sweeps) and kernels of half the device or more, whose
// room beside each other a trace does not always tell, and one-wave device-filling kernels whose
// slots the next lane takes from their middle. Definitions and their measurements: split_sweeps.cpp.
#pragma once

#include <cstdint>
#include <unordered_set>
#include <vector>

#include "diagnosis/device_view.h"
#include "diagnosis/schedule_estimate.h"

namespace cuoverlap::diagnosis {

inline constexpr std::uint64_t kSplitStreams = 3;  // the streams the split issues its chunks to
// A step's first-run kernel that ran beside other streams' work counts as slower (coldLaneKernels)
// only by more than this share of the later run's time: the other work's jitter. The lab's
// corpora score the same from 1% to 10%.
inline constexpr double kBesideJitter = 0.05;
// Where a one-wave device-filling kernel that ran alone frees its slots to the split's next lane
// (aloneFillers): its middle. In the lab's fixed programs the next device-filling kernel of
// another stream started a median 0.499 of a 1056x256 kernel's run before its end (221 pairs, 90
// within 0.475-0.525; the sixteenth session's lab21-drain22); the corpora score the same from 0.4
// to 0.6.
inline constexpr float kAloneFillerSlotsFreeAt = 0.5f;

// How the split's sweeps (the kernels of `sweeps`, sweepingKernelsInOrder's edges, of a cache-bound
// split) run side by side, where that is known: kThrash, no faster than in order; kFromMemory, at
// their own recorded pace; kUnknown, somewhere between (priced midway).
enum class SweepsSideBySide { kUnknown, kThrash, kFromMemory };

// Where the split's lanes take the slots of the stream's one-wave device-filling kernels that ran
// with no other stream's kernel beside them (the split queues the next lane's kernels behind
// them): `fillers`, the positions of such kernels, and `takers`, the stream's kernels that fill
// the device. Empty where the stream has none of either.
struct AloneFillers {
  std::vector<std::size_t> fillers;
  std::vector<std::size_t> takers;
};

// Whether the split stream's few-block kernels include a sweep whose runs alone vary as memory's
// do (with `only`, the kernels at those positions alone).
bool repeatsVary(const DeviceView& view, const std::vector<std::uint64_t>& keys, std::uint64_t stream,
                 const std::unordered_set<std::size_t>* only = nullptr);

// How the split's sweeps (`sweeps`: sweepingKernelsInOrder's edges) run side by side, where known.
SweepsSideBySide sweepsSideBySide(const DeviceView& view, const std::vector<std::uint64_t>& keys,
                                  const std::vector<std::uint64_t>& lanes, std::uint64_t stream,
                                  const std::vector<OrderEdge>& sweeps);

// Edges that keep the split stream's sweeping few-block kernels in their order across the lanes
// (not those whose lanes' buffers fit half the L2, where the trace records them).
std::vector<OrderEdge> sweepingKernelsInOrder(const DeviceView& view, const std::vector<std::uint64_t>& keys,
                                              const std::vector<std::uint64_t>& lanes, std::uint64_t stream,
                                              bool cache_bound);

// Whether a kernel's first-step run (`first`, coldLaneKernels) was longer than its recorded run by
// more than `share` of it.
bool firstRunLonger(const DeviceView& view, const FasterOp& first, double share);

// The sweeps of a cache-bound split at the pace they take from memory, each lane's buffer its own
// (kSweepFromMemory times their one-stream run), where keeping them in order changes nothing.
std::vector<FasterOp> sweepsFromMemory(const DeviceView& view, const std::vector<OrderEdge>& sweeps,
                                       const std::vector<FasterOp>& cold);

// Edges that keep the split stream's kernels of half the device or more in their order across the
// lanes.
std::vector<OrderEdge> halfDeviceKernelsInOrder(const DeviceView& view, const std::vector<std::uint64_t>& keys,
                                                const std::vector<std::uint64_t>& lanes, std::uint64_t stream);

// The stream's one-wave device-filling kernels that ran alone, and its kernels that take their slots.
AloneFillers aloneFillers(const DeviceView& view, const std::vector<std::uint64_t>& keys, std::uint64_t stream);

}  // namespace cuoverlap::diagnosis
