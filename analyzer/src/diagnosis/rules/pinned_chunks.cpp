#include "diagnosis/rules/pinned_chunks.h"

#include <algorithm>
#include <map>
#include <utility>

#include "diagnosis/api_names.h"

namespace cuoverlap::diagnosis {

namespace {

bool isPinnedHostFree(std::string_view base) { return base == "cudaFreeHost" || base == "cuMemFreeHost"; }

}  // namespace

std::vector<CallChange> chunkKeptAlive(const DeviceView& view, const HostTimeline& host,
                                       std::uint64_t pinned_bytes) {
  if (pinned_bytes == 0 || pinned_bytes >= kPinnedChunkBytes) return {};
  // Per thread, its pinned allocations and frees in start order.
  using Thread = std::pair<std::uint32_t, std::uint32_t>;
  std::map<Thread, std::vector<std::size_t>> pinning;
  for (std::size_t call : view.calls()) {
    const std::string_view base = apiBaseName(view.callName(call));
    if (isPinnedHostAllocation(base) || isPinnedHostFree(base)) {
      pinning[{view.call(call).pid, view.call(call).tid}].push_back(call);
    }
  }
  if (pinning.empty()) return {};
  // A buffer's life is the gap between two of its thread's pinning calls: from its allocation to
  // the thread's next one (its free), or from the thread's previous one to its free (allocated
  // before the view). Gap g of a thread lies between its calls g-1 and g (the first and last
  // open-ended): the life of call g-1 if that is an allocation, and of call g if that is a free.
  // Per call, the largest pinned copy its thread issued in its buffer's life.
  std::map<std::size_t, std::uint64_t> bytes_of;
  for (const auto& [thread, calls] : pinning) {
    for (std::size_t call : calls) bytes_of.emplace(call, 0);
  }
  // Every pinned copy must fall in a life of its thread's: one that does not shows another pinned
  // buffer alive, which keeps a chunk mapped already.
  for (const ScopedOp& scoped : view.ops()) {
    const GpuOp& op = view.op(scoped);
    if (op.kind != OpKind::kMemcpy || (op.src_kind != MemKind::kPinned && op.dst_kind != MemKind::kPinned)) continue;
    const auto launch = view.launchCall(op);
    if (!launch) return {};
    const RuntimeCall& c = view.call(*launch);
    const auto found = pinning.find({c.pid, c.tid});
    if (found == pinning.end()) return {};
    const std::vector<std::size_t>& calls = found->second;
    const auto next = std::upper_bound(calls.begin(), calls.end(), c.start,
                                       [&](Ns t, std::size_t call) { return t < view.call(call).start; });
    const std::size_t gap = static_cast<std::size_t>(next - calls.begin());
    if (gap > 0 && c.start < view.call(calls[gap - 1]).end) return {};
    bool inside = false;
    if (gap > 0 && isPinnedHostAllocation(apiBaseName(view.callName(calls[gap - 1])))) {
      std::uint64_t& bytes = bytes_of[calls[gap - 1]];
      bytes = std::max(bytes, op.bytes);
      inside = true;
    }
    if (gap < calls.size() && isPinnedHostFree(apiBaseName(view.callName(calls[gap])))) {
      std::uint64_t& bytes = bytes_of[calls[gap]];
      bytes = std::max(bytes, op.bytes);
      inside = true;
    }
    if (!inside) return {};
  }
  std::map<std::size_t, Ns> own_of;  // the calls' own time (after a free's drain)
  for (const HostBarrier& b : host.barriers) own_of.emplace(b.call, b.own);
  std::vector<CallChange> changes;
  for (const auto& [call, bytes] : bytes_of) {
    if (bytes == 0 || bytes + pinned_bytes > kPinnedChunkBytes) continue;
    const auto own = own_of.find(call);
    const Ns took = own != own_of.end() ? own->second : view.call(call).end - view.call(call).start;
    if (took < kChunkMappingNs) continue;
    changes.push_back({call, !isPinnedHostAllocation(apiBaseName(view.callName(call))), kSubAllocatedCallNs});
  }
  return changes;
}

void addChunkKeptAlive(const DeviceView& view, const HostTimeline& host, std::uint64_t pinned_bytes,
                       std::vector<CallChange>& changed) {
  for (const CallChange& c : chunkKeptAlive(view, host, pinned_bytes)) {
    const auto same = [&](const CallChange& x) { return x.call == c.call; };
    if (std::none_of(changed.begin(), changed.end(), same)) changed.push_back(c);
  }
}

}  // namespace cuoverlap::diagnosis
