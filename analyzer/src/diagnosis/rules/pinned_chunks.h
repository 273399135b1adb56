// The pinned host allocator: the driver sub-allocates small pinned allocations from chunks it keeps
// mapped while any allocation in them lives. A loop's cudaMallocHost/cudaFreeHost pair of a small
// buffer with no other pinned allocation alive maps a chunk and unmaps it each time (the lab's
// H100: 0.56-1.05 ms and 0.26-0.45 ms for buffers of 192-304 KiB, g000015, g000131, g004027),
// where beside a live pinned buffer the same pair takes 3-74 µs (g000044, g000148, g000163,
// g000239). A fix that pins the program's pageable buffers once at setup (pin-host, the
// single-stream split's pinned buffers) keeps such a chunk alive, and the loop's pair no longer
// maps it: pinning g004027's two pageable buffers (60 and 4 KiB) made its loop's 304 KiB pair
// take 3 and 3-6 µs instead of 561-610 and 259-287, 2.0 ms of its 3.9 ms span.
//
// A trace records no allocation's size: the pinned copies its thread issues while the buffer is
// alive (between the allocation and its free) stand for it, and a pinned copy outside every such
// life shows another pinned buffer alive (a chunk kept mapped already: nothing to give back). A
// buffer and the smallest buffer the fix pins must fit one chunk together (the lab's: 1.26 MiB beside a live 204 KiB pinned buffer
// took 7 µs, g000148; 1.27 MiB beside 1.73 MiB and 1.32 beside 1.32 still mapped their own,
// g000138, g004081: taken as 2 MiB). Buffers of several MiB map their own chunk either way
// (g000071's 4.4 MiB).
#pragma once

#include <cstdint>
#include <vector>

#include "diagnosis/device_view.h"
#include "diagnosis/host_timeline.h"
#include "diagnosis/schedule_estimate.h"

namespace cuoverlap::diagnosis {

// A pinned allocation or free of this much own time or more mapped or unmapped a chunk: the lab's
// calls that did took 0.26 ms or more, those that sub-allocated 74 µs or less.
inline constexpr Ns kChunkMappingNs = 150'000;
inline constexpr std::uint64_t kPinnedChunkBytes = std::uint64_t{2} << 20;
// A sub-allocated pinned allocation's or free's own time (the lab's pinned-variant runs: 3-10 µs).
inline constexpr Ns kSubAllocatedCallNs = 5'000;

// The pinned allocations and frees that map or unmap a chunk of their own, which a fix pinning a
// buffer of `pinned_bytes` at setup would keep alive: each at kSubAllocatedCallNs of own time
// (an allocation waits for nothing; a free still waits for the device).
std::vector<CallChange> chunkKeptAlive(const DeviceView& view, const HostTimeline& host,
                                       std::uint64_t pinned_bytes);

// chunkKeptAlive's changes added to `changed`, but for calls it already changes.
void addChunkKeptAlive(const DeviceView& view, const HostTimeline& host, std::uint64_t pinned_bytes,
                       std::vector<CallChange>& changed);

}  // namespace cuoverlap::diagnosis
