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

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <utility>
#include <vector>

#include "diagnosis/api_names.h"
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
inline std::vector<CallChange> chunkKeptAlive(const DeviceView& view, const HostTimeline& host,
                                              std::uint64_t pinned_bytes) {
  if (pinned_bytes == 0 || pinned_bytes >= kPinnedChunkBytes) return {};
  // Per thread, its pinned allocations and frees in start order.
  using Thread = std::pair<std::uint32_t, std::uint32_t>;
  std::map<Thread, std::vector<std::size_t>> pinning;
  for (std::size_t call : view.calls()) {
    const std::string_view base = apiBaseName(view.callName(call));
    if (isPinnedHostAllocation(base) || base == "cudaFreeHost" || base == "cuMemFreeHost") {
      pinning[{view.call(call).pid, view.call(call).tid}].push_back(call);
    }
  }
  if (pinning.empty()) return {};
  // A buffer's life: from its allocation to the thread's next pinning call (its free), or from
  // the thread's previous one to its free (allocated before the view). Per call, the largest
  // pinned copy its thread issued in its buffer's life.
  struct Life {
    Ns from = 0;
    Ns to = 0;
    std::uint64_t bytes = 0;
  };
  std::map<std::size_t, Life> life_of;
  for (const auto& [thread, calls] : pinning) {
    for (std::size_t k = 0; k < calls.size(); ++k) {
      const RuntimeCall& c = view.call(calls[k]);
      const bool allocation = isPinnedHostAllocation(apiBaseName(view.callName(calls[k])));
      const Ns from = allocation ? c.end : k > 0 ? view.call(calls[k - 1]).end : std::numeric_limits<Ns>::min();
      const Ns to = allocation ? (k + 1 < calls.size() ? view.call(calls[k + 1]).start : std::numeric_limits<Ns>::max())
                               : c.start;
      life_of[calls[k]] = {from, to, 0};
    }
  }
  // Every pinned copy must fall in a life of its thread's: one that does not shows another pinned
  // buffer alive, which keeps a chunk mapped already.
  for (const ScopedOp& scoped : view.ops()) {
    const GpuOp& op = view.op(scoped);
    if (op.kind != OpKind::kMemcpy || (op.src_kind != MemKind::kPinned && op.dst_kind != MemKind::kPinned)) continue;
    const auto launch = view.launchCall(op);
    if (!launch) return {};
    const RuntimeCall& c = view.call(*launch);
    const auto calls = pinning.find({c.pid, c.tid});
    if (calls == pinning.end()) return {};
    bool inside = false;
    for (std::size_t call : calls->second) {
      Life& life = life_of[call];
      if (c.start < life.from || c.start >= life.to) continue;
      life.bytes = std::max(life.bytes, op.bytes);
      inside = true;
    }
    if (!inside) return {};
  }
  std::map<std::size_t, Ns> own_of;  // the calls' own time (after a free's drain)
  for (const HostBarrier& b : host.barriers) own_of.emplace(b.call, b.own);
  std::vector<CallChange> changes;
  for (const auto& [call, life] : life_of) {
    if (life.bytes == 0 || life.bytes + pinned_bytes > kPinnedChunkBytes) continue;
    const auto own = own_of.find(call);
    const Ns took = own != own_of.end() ? own->second : view.call(call).end - view.call(call).start;
    if (took < kChunkMappingNs) continue;
    changes.push_back({call, !isPinnedHostAllocation(apiBaseName(view.callName(call))), kSubAllocatedCallNs});
  }
  return changes;
}

// chunkKeptAlive's changes added to `changed`, but for calls it already changes.
inline void addChunkKeptAlive(const DeviceView& view, const HostTimeline& host, std::uint64_t pinned_bytes,
                              std::vector<CallChange>& changed) {
  for (const CallChange& c : chunkKeptAlive(view, host, pinned_bytes)) {
    const auto same = [&](const CallChange& x) { return x.call == c.call; };
    if (std::none_of(changed.begin(), changed.end(), same)) changed.push_back(c);
  }
}

}  // namespace cuoverlap::diagnosis
