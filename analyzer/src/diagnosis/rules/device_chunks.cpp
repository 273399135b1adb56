#include "diagnosis/rules/device_chunks.h"

#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <utility>

#include "diagnosis/api_names.h"

namespace cuoverlap::diagnosis {
namespace {

using Thread = std::pair<std::uint32_t, std::uint32_t>;

// The device allocations the trace sizes, by end address: every one its memory events record
// that lived in the view (of a process of its ops: a trace's other windows reuse the addresses for
// other allocations), and those kernels touched (a kernel argument's op buffer runs from its
// pointer to its allocation's end, so the lowest pointer seen into an allocation is its base).
class Allocations {
 public:
  explicit Allocations(const DeviceView& view) {
    addLiving(view);
    for (const ScopedOp& scoped : view.ops()) {
      const GpuOp& op = view.op(scoped);
      if (op.kind != OpKind::kKernel) continue;
      const auto [first, last] = opBuffersOf(view.trace(), op);
      for (const OpBuffer* b = first; b != last; ++b) {
        if (b->access == schema::BufferAccess::kKernelArgument && b->bytes > 0) add(b->address, b->bytes);
      }
    }
  }

  // The end of the allocation that holds [address, address + bytes), if one above sized it.
  std::optional<std::uint64_t> holding(std::uint64_t address, std::uint64_t bytes) const {
    const auto it = base_by_end_.upper_bound(address);
    if (it == base_by_end_.end() || it->second > address || address + bytes > it->first) return std::nullopt;
    return it->first;
  }
  std::uint64_t base(std::uint64_t end) const { return base_by_end_.at(end); }
  std::uint64_t bytes(std::uint64_t end) const { return end - base_by_end_.at(end); }

 private:
  void addLiving(const DeviceView& view) {
    const std::vector<MemoryEvent>& events = view.trace().memory_events;  // in time order
    if (events.empty() || view.empty()) return;
    std::set<std::uint32_t> pids;
    Ns from = view.spanStart(), to = view.spanEnd();
    for (const ScopedOp& scoped : view.ops()) pids.insert(view.op(scoped).pid);
    for (const std::size_t call : view.calls()) {
      from = std::min(from, view.call(call).start);
      to = std::max(to, view.call(call).end);
    }
    // Live allocations of a process never overlap: one that a later allocation overlaps was freed
    // by then, recorded or not (a trimmed trace or a capture range can hold an allocation without
    // its free).
    std::map<std::pair<std::uint32_t, std::uint64_t>, const MemoryEvent*> open;  // (pid, address) -> allocation
    const auto close = [&](const MemoryEvent& allocation, Ns freed) {
      if (allocation.time < to && freed > from) add(allocation.address, allocation.bytes);
    };
    for (const MemoryEvent& e : events) {
      // Later events only end allocations that lived past the view, which count as still open.
      if (e.time >= to) break;
      if (e.kind != MemKind::kDevice || e.bytes == 0 || pids.count(e.pid) == 0) continue;
      const std::uint64_t end = e.allocation ? e.address + e.bytes : e.address + 1;
      auto it = open.lower_bound({e.pid, end});
      while (it != open.begin()) {
        const auto before = std::prev(it);
        const MemoryEvent& living = *before->second;
        if (before->first.first != e.pid || living.address + living.bytes <= e.address) break;
        close(living, e.time);
        it = open.erase(before);
      }
      if (e.allocation) open.emplace(std::make_pair(e.pid, e.address), &e);
    }
    for (const auto& living : open) close(*living.second, std::numeric_limits<Ns>::max());
  }

  void add(std::uint64_t address, std::uint64_t bytes) {
    const auto [it, fresh] = base_by_end_.emplace(address + bytes, address);
    if (!fresh) it->second = std::min(it->second, address);
  }

  std::map<std::uint64_t, std::uint64_t> base_by_end_;
};

// The device allocations (their ends) `op` touches (`writes_only`: writes or hands to a kernel);
// nothing where one is unknown (a copy or memset into memory no kernel touched and no memory event
// sized).
std::optional<std::vector<std::uint64_t>> deviceSide(const DeviceView& view, const Allocations& allocations,
                                                     const GpuOp& op, bool writes_only = false) {
  std::vector<std::uint64_t> ends;
  const auto [first, last] = opBuffersOf(view.trace(), op);
  for (const OpBuffer* b = first; b != last; ++b) {
    bool device = false;
    if (op.kind == OpKind::kKernel) {
      device = b->access == schema::BufferAccess::kKernelArgument;
    } else if (op.kind == OpKind::kMemset) {
      device = op.src_kind == MemKind::kDevice;
    } else if (op.kind == OpKind::kMemcpy) {
      device = b->access == schema::BufferAccess::kWrite ? op.dst_kind == MemKind::kDevice
                                                          : !writes_only && op.src_kind == MemKind::kDevice;
    }
    if (!device) continue;
    const auto end = allocations.holding(b->address, b->bytes);
    if (!end) return std::nullopt;
    ends.push_back(*end);
  }
  return ends;
}

// The rooms of the 2 MiB chunks that hold the allocations `sizes` (base -> bytes), in address
// order; an allocation of a chunk's size or more has a mapping of its own.
std::vector<std::uint64_t> roomsOf(const std::map<std::uint64_t, std::uint64_t>& sizes) {
  std::map<std::uint64_t, std::uint64_t> used;  // chunk -> bytes
  for (const auto& [base, bytes] : sizes) {
    if (bytes < kDeviceChunkBytes) used[base / kDeviceChunkBytes] += bytes;
  }
  std::vector<std::uint64_t> rooms;
  for (const auto& [chunk, bytes] : used) rooms.push_back(bytes < kDeviceChunkBytes ? kDeviceChunkBytes - bytes : 0);
  return rooms;
}

bool fits(const std::vector<std::uint64_t>& rooms, std::uint64_t bytes) {
  return std::any_of(rooms.begin(), rooms.end(), [&](std::uint64_t room) { return bytes <= room; });
}

// A device allocation of a thread and its free, the thread's next device allocation call (none:
// the allocation is the thread's last in the view).
struct Life {
  std::size_t allocation = 0;
  std::optional<std::size_t> free;
};

// Per thread, its device allocations followed by a free (or by nothing), and when each buffer
// lived: from the allocation's return to the free's start.
class Lives {
 public:
  explicit Lives(const DeviceView& view) {
    std::map<Thread, std::vector<std::size_t>> calls;  // per thread, in start order
    for (const std::size_t call : view.calls()) {
      const std::string_view base = apiBaseName(view.callName(call));
      if (isDeviceAllocation(base) || isDeviceFree(base)) calls[{view.call(call).pid, view.call(call).tid}].push_back(call);
    }
    for (const auto& [thread, list] : calls) {
      for (std::size_t k = 0; k < list.size(); ++k) {
        if (!isDeviceAllocation(apiBaseName(view.callName(list[k])))) continue;
        const bool last = k + 1 == list.size();
        if (!last && !isDeviceFree(apiBaseName(view.callName(list[k + 1])))) continue;
        const Ns until = last ? std::numeric_limits<Ns>::max() : view.call(list[k + 1]).start;
        spans_[thread].emplace_back(view.call(list[k]).end, until, lives_.size());
        lives_.push_back({list[k], last ? std::nullopt : std::optional<std::size_t>(list[k + 1])});
      }
    }
  }
  bool empty() const { return lives_.empty(); }
  const Life& operator[](std::size_t k) const { return lives_[k]; }

  // The life of its thread's that call `c` began in.
  std::optional<std::size_t> at(const RuntimeCall& c) const {
    const auto found = spans_.find({c.pid, c.tid});
    if (found == spans_.end()) return std::nullopt;
    const auto& list = found->second;  // disjoint, in time order
    const auto it = std::upper_bound(list.begin(), list.end(), c.start,
                                     [](Ns t, const auto& span) { return t < std::get<0>(span); });
    if (it == list.begin() || c.start > std::get<1>(*std::prev(it))) return std::nullopt;
    return std::get<2>(*std::prev(it));
  }

 private:
  std::vector<Life> lives_;
  std::map<Thread, std::vector<std::tuple<Ns, Ns, std::size_t>>> spans_;
};

// The allocations the ops touched: those touched only inside their thread's lives are loops'
// buffers (per life; the allocator hands each iteration's allocation the same memory), the
// others outlive them (the setup's: base -> bytes). Nothing where an allocation's size is unknown.
struct Buffers {
  std::map<std::uint64_t, std::uint64_t> setup;
  std::map<std::size_t, std::vector<std::uint64_t>> of_life;  // life -> allocation ends
};

std::optional<Buffers> buffersOf(const DeviceView& view, const Allocations& allocations, const Lives& lives) {
  std::map<std::uint64_t, std::set<std::size_t>> lives_of;  // allocation end -> lives
  std::set<std::uint64_t> outliving;
  for (const ScopedOp& scoped : view.ops()) {
    const GpuOp& op = view.op(scoped);
    const auto ends = deviceSide(view, allocations, op);
    if (!ends) return std::nullopt;
    const auto launch = view.launchCall(op);
    const std::optional<std::size_t> life = launch ? lives.at(view.call(*launch)) : std::nullopt;
    for (const std::uint64_t end : *ends) {
      std::set<std::size_t>& in = lives_of[end];
      if (life) {
        in.insert(*life);
      } else {
        outliving.insert(end);
      }
    }
  }
  Buffers buffers;
  for (const auto& [end, in] : lives_of) {
    if (outliving.count(end) != 0) {
      buffers.setup[allocations.base(end)] = allocations.bytes(end);
    } else {
      for (const std::size_t life : in) buffers.of_life[life].push_back(end);
    }
  }
  return buffers;
}

// `rooms` after `copies` more of each buffer of `written` (base -> bytes), in that order, each
// where it first fits, else in a chunk it opens (from 2 MiB up, a mapping of its own).
std::vector<std::uint64_t> roomsAfter(std::vector<std::uint64_t> rooms,
                                      const std::map<std::uint64_t, std::uint64_t>& written, std::size_t copies) {
  for (std::size_t copy = 0; copy < copies; ++copy) {
    for (const auto& buffer : written) {
      const std::uint64_t bytes = buffer.second;
      const auto room = std::find_if(rooms.begin(), rooms.end(), [&](std::uint64_t r) { return bytes <= r; });
      if (room != rooms.end()) {
        *room -= bytes;
      } else if (bytes < kDeviceChunkBytes) {
        rooms.push_back(kDeviceChunkBytes - bytes);
      }
    }
  }
  return rooms;
}

}  // namespace

std::vector<CallChange> deviceChunkKeptAlive(const DeviceView& view, const HostTimeline& host,
                                             const std::vector<std::size_t>& positions, std::size_t copies) {
  if (copies == 0 || positions.empty() || view.trace().op_buffers.empty()) return {};
  const Lives lives(view);
  if (lives.empty()) return {};
  const Allocations allocations(view);
  const std::optional<Buffers> buffers = buffersOf(view, allocations, lives);
  if (!buffers) return {};
  std::map<std::uint64_t, std::uint64_t> written;  // base -> bytes: the buffers the fix copies
  for (const std::size_t p : positions) {
    const auto ends = deviceSide(view, allocations, view.op(view.ops()[p]), /*writes_only=*/true);
    if (!ends) return {};
    for (const std::uint64_t end : *ends) written[allocations.base(end)] = allocations.bytes(end);
  }
  const std::vector<std::uint64_t> rooms_before = roomsOf(buffers->setup);
  const std::vector<std::uint64_t> rooms_after = roomsAfter(rooms_before, written, copies);
  std::map<std::size_t, Ns> own_of;
  for (const HostBarrier& b : host.barriers) own_of.emplace(b.call, b.own);
  const auto ownTime = [&](std::size_t call) {
    const auto own = own_of.find(call);
    return own != own_of.end() ? own->second : view.call(call).end - view.call(call).start;
  };
  std::vector<CallChange> changes;
  for (const auto& [life, ends] : buffers->of_life) {
    if (ends.size() != 1) continue;  // one buffer a life: the one its allocation made
    const std::uint64_t bytes = allocations.bytes(ends.front());
    const Life& pair = lives[life];
    if (bytes >= kDeviceChunkBytes || ownTime(pair.allocation) < kDeviceChunkMappingNs) continue;
    // As recorded it mapped a chunk: a picture in which it fits a live chunk misses allocations.
    if (fits(rooms_before, bytes) || !fits(rooms_after, bytes)) continue;
    changes.push_back({pair.allocation, false, kDeviceCarvedCallNs});
    if (pair.free && ownTime(*pair.free) >= kDeviceChunkMappingNs) changes.push_back({*pair.free, true, kDeviceCarvedCallNs});
  }
  return changes;
}

}  // namespace cuoverlap::diagnosis
