// The device allocator (scripts/gpu/device_alloc_probe.cu; docs/findings.md, "Fifty-ninth
// session"): the driver carves device allocations under 2 MiB out of 2 MiB chunks it keeps mapped
// while an allocation in them lives, in address order. A loop's cudaMalloc/cudaFree pair whose
// buffer fits no live chunk's room maps a chunk and unmaps it each time (on an H200, cudaMalloc
// 47-51 µs and cudaFree 38-43 µs of their own; the lab's 37-212 µs), one that fits takes about 2 µs
// a call. An allocation of 2 MiB or more has a mapping of its own and leaves no room.
//
// A fix that allocates device buffers at setup (the single-stream split's buffers for its other
// lanes) changes the rooms: where those buffers do not fit a live chunk they open one, and the
// loop's buffer may fit there (lab g000310: setup buffers of 208, 1124 and 644 KiB leave 72 KiB of
// their chunk, so its 1124 KiB loop buffer mapped a chunk each iteration, 38-99 µs; the split's
// two 208 KiB lane buffers open a second chunk, and the loop's cudaMalloc took 2-3 µs).
//
// The trace's memory events (Trace::memory_events: CUDA_GPU_MEMORY_USAGE_EVENTS) size and place
// every allocation; without them, the op buffers (Trace::op_buffers) do for the allocations kernels
// touch: a kernel argument's row runs from its pointer to its allocation's end.
// Chunks are 2 MiB-aligned: the allocations a chunk holds share their address's upper bits.
#pragma once

#include <cstdint>
#include <vector>

#include "diagnosis/device_view.h"
#include "diagnosis/host_timeline.h"
#include "diagnosis/schedule_estimate.h"

namespace cuoverlap::diagnosis {

inline constexpr std::uint64_t kDeviceChunkBytes = std::uint64_t{2} << 20;
// A cudaMalloc or cudaFree of this much own time or more mapped or unmapped a chunk (the probe's
// 38-51 µs; carved out of a live chunk, 2 µs).
inline constexpr Ns kDeviceChunkMappingNs = 30'000;
// A carved-out cudaMalloc's or cudaFree's own time (the probe's 1.8-2.2 µs).
inline constexpr Ns kDeviceCarvedCallNs = 2'000;

// The device allocations and frees of loops that map or unmap a chunk of their own (one buffer
// a loop, touched by ops only between its allocation and its free) which the fix's buffers would
// let the allocator carve out of a chunk they open: `copies` more of each device buffer the ops at
// `positions` write or hand to kernels, allocated at setup after the program's own, each where it
// first fits. Each such call at kDeviceCarvedCallNs of own time (a free still waits for the
// device). Nothing where the trace has no op buffers (which ops touch which buffer) or they do not
// account for what the recording shows: an allocation of unknown size (without memory events, a
// copy's or memset's memory no kernel touched), or a loop's buffer that fits a live chunk's room as
// recorded yet mapped one.
std::vector<CallChange> deviceChunkKeptAlive(const DeviceView& view, const HostTimeline& host,
                                             const std::vector<std::size_t>& positions, std::size_t copies);

}  // namespace cuoverlap::diagnosis
