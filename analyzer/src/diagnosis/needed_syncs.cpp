// Explicit synchronizes the host needs (needed_syncs.h).
#include "diagnosis/needed_syncs.h"

#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "diagnosis/api_names.h"
#include "diagnosis/legacy_barriers.h"

namespace cuoverlap::diagnosis {
namespace {

using ThreadKey = std::pair<std::uint32_t, std::uint32_t>;  // (pid, tid)

// A call that issues work: a launch, copy or memset.
struct WorkCall {
  Ns start = 0;
  bool synchronous = false;            // cudaMemcpy, cudaMemset
  bool reads_gpu_written = true;       // its op may read what GPU work wrote (readsGpuWritten)
  std::optional<std::uint64_t> stream; // its op's DeviceView::streamKey
  const GpuOp* legacy_op = nullptr;    // its op, when that ran on the legacy default stream
  bool operator<(const WorkCall& other) const { return start < other.start; }
};

struct AsyncDtoH {
  Ns start = 0;              // of its call
  std::size_t position = 0;  // of its op in view.ops()
  std::size_t call = 0;      // its call, an index into Trace::runtime_calls
  bool operator<(const AsyncDtoH& other) const { return start < other.start; }
};

struct ThreadCalls {
  std::vector<AsyncDtoH> async_dtoh;  // sorted by call start
  std::vector<WorkCall> work_calls;   // sorted by start
};

// Whether an op reads memory that GPU work writes: a copy from device, array or managed memory
// (or memory of unknown kind). A memset reads nothing, and a copy from pageable or pinned host
// memory reads what the host wrote.
bool readsGpuWritten(const GpuOp& op) {
  if (op.kind != OpKind::kMemcpy) return false;
  return op.src_kind != MemKind::kPageable && op.src_kind != MemKind::kPinned;
}

std::map<ThreadKey, ThreadCalls> callsByThread(const DeviceView& view) {
  std::map<ThreadKey, ThreadCalls> threads;
  std::unordered_map<std::size_t, const GpuOp*> op_of_call;
  std::size_t position = 0;
  for (const ScopedOp& scoped : view.ops()) {
    const std::size_t at = position++;
    const GpuOp& op = view.op(scoped);
    const auto launch = view.launchCall(op);
    if (!launch) continue;
    op_of_call.emplace(*launch, &op);
    if (engineOf(op) != Engine::kD2H || view.callKind(*launch) != ApiKind::kMemcpyAsync) continue;
    const RuntimeCall& c = view.call(*launch);
    threads[{c.pid, c.tid}].async_dtoh.push_back({c.start, at, *launch});
  }
  for (std::size_t call : view.calls()) {
    const ApiKind kind = view.callKind(call);
    const bool sync = kind == ApiKind::kMemcpySync || kind == ApiKind::kMemsetSync;
    if (!sync && kind != ApiKind::kMemcpyAsync && kind != ApiKind::kMemsetAsync &&
        kind != ApiKind::kLaunch) {
      continue;
    }
    const RuntimeCall& c = view.call(call);
    const auto op = op_of_call.find(call);
    const GpuOp* issued = op != op_of_call.end() ? op->second : nullptr;
    WorkCall work;
    work.start = c.start;
    work.synchronous = sync;
    if (issued != nullptr) {
      work.reads_gpu_written = readsGpuWritten(*issued);
      work.stream = DeviceView::streamKey(*issued);
      if (view.onLegacyDefaultStream(*issued)) work.legacy_op = issued;
    }
    threads[{c.pid, c.tid}].work_calls.push_back(work);
  }
  for (auto& [key, t] : threads) {
    std::sort(t.async_dtoh.begin(), t.async_dtoh.end());
    std::sort(t.work_calls.begin(), t.work_calls.end());
  }
  return threads;
}

// When an op was issued: its launch call's start (its own start where no call is known).
Ns issuedAt(const DeviceView& view, std::size_t position) {
  const ScopedOp& scoped = view.ops()[position];
  const auto launch = view.launchCall(view.op(scoped));
  return launch ? view.call(*launch).start : scoped.start;
}

// The order the program imposes on its ops: each stream's issue order, the recorded stream waits
// and the legacy stream's implicit barriers (legacy_barriers.h). Whether one op is ordered before
// another is a search forward from it over ops issued before a bound: every edge runs from an op
// to one issued later, so nothing issued before the first can lie between. Built on the first
// question only (most traces ask none), with each op's successors in one array.
class ProgramOrder {
 public:
  explicit ProgramOrder(const DeviceView& view) : view_(view) {}

  // Whether op `from` is ordered before one of `targets` (all issued before `bound`).
  bool orderedBefore(std::size_t from, const std::vector<std::size_t>& targets, Ns bound) {
    if (issued_.empty()) build();
    std::vector<std::size_t> stack{from};
    std::unordered_map<std::size_t, bool> seen{{from, true}};
    while (!stack.empty()) {
      const std::size_t p = stack.back();
      stack.pop_back();
      if (std::find(targets.begin(), targets.end(), p) != targets.end()) return true;
      for (std::size_t e = first_next_[p]; e < first_next_[p + 1]; ++e) {
        const std::size_t q = next_[e];
        if (issued_[q] >= bound || !seen.emplace(q, true).second) continue;
        stack.push_back(q);
      }
    }
    return false;
  }

 private:
  void build() {
    const std::size_t count = view_.ops().size();
    issued_.resize(count);
    std::vector<std::pair<std::size_t, std::size_t>> edges;  // (from, to)
    {
      std::unordered_map<std::uint64_t, std::vector<std::pair<Ns, std::size_t>>> streams;
      for (std::size_t p = 0; p < count; ++p) {
        issued_[p] = issuedAt(view_, p);
        streams[DeviceView::streamKey(view_.op(view_.ops()[p]))].emplace_back(issued_[p], p);
      }
      for (auto& [key, list] : streams) {
        std::sort(list.begin(), list.end());
        for (std::size_t i = 0; i + 1 < list.size(); ++i) edges.emplace_back(list[i].second, list[i + 1].second);
      }
    }
    for (const OrderEdge& e : programOrderEdges(view_)) edges.emplace_back(e.from, e.to);
    std::sort(edges.begin(), edges.end());
    first_next_.assign(count + 1, 0);
    next_.reserve(edges.size());
    for (const auto& [from, to] : edges) {
      ++first_next_[from + 1];
      next_.push_back(to);
    }
    for (std::size_t p = 0; p < count; ++p) first_next_[p + 1] += first_next_[p];
  }

  const DeviceView& view_;
  std::vector<Ns> issued_;               // per op: issuedAt
  std::vector<std::size_t> first_next_;  // per op: where its successors start in next_
  std::vector<std::size_t> next_;        // the ops ordered right after each op, by op
};

// Whether a synchronize (`sync`, waiting for `waited`) also waits for work its thread queued behind
// the DtoH copy `copy` on the copy's stream (the next step's copy or kernel): a host about to read
// a result waits for it before queueing more behind it, or for an event recorded after the copy
// (a double-buffered loop), so this wait is for that work, not for the result. Such a
// synchronize before the copy of the step it waits for (a loop of copy in, kernel, synchronize,
// copy out) is the step's own wait, which blocking-sync-call's fix removes.
bool waitsForWorkQueuedBehind(const DeviceView& view, const AsyncDtoH& copy, const RuntimeCall& sync,
                              const std::vector<std::size_t>& waited) {
  const std::uint64_t copy_stream = DeviceView::streamKey(view.op(view.ops()[copy.position]));
  for (std::size_t p : waited) {
    if (p == copy.position || issuedAt(view, p) <= copy.start) continue;
    const GpuOp& op = view.op(view.ops()[p]);
    const auto launch = view.launchCall(op);
    if (!launch || DeviceView::streamKey(op) != copy_stream) continue;
    const RuntimeCall& issued = view.call(*launch);
    if (issued.pid == sync.pid && issued.tid == sync.tid) return true;
  }
  return false;
}

// The copy (its position), where the thread's previous blocking call (`previous`) was an
// asynchronous DtoH copy into pageable memory, else -1: the call returned only once its copy was
// done (pageable memory makes it synchronous), but the API promises no such thing, so the
// synchronize after it is what orders the host's read of the result (and is what orders it once
// the memory is pinned, pageable-memcpy's fix): it is not removable, though it finds the copy done.
// It brings that copy's result back, and is deferrable as any such synchronize (the lab's
// defer-read double-buffers it as it does a pinned one's): the fixed program's copy call still
// waits for its own stream, but the step no longer waits for what else the synchronize waited
// for (a device synchronize: other streams' and other threads' work; c2 g001089's main thread,
// 238-274 µs a step for a worker's kernels, 168 µs saved, missed on both recordings). Kept where
// the thread's next work is a synchronous call on the legacy stream: its barrier orders the
// thread's next work after the same blocking-stream work, so nothing is deferred (g000089's
// worker: 0 -> 181 µs claimed for 47 with it deferred).
std::int64_t followsPageableRead(const DeviceView& view, const std::vector<AsyncDtoH>& dtoh,
                                 std::size_t previous) {
  const Ns start = view.call(previous).start;
  for (auto copy = std::lower_bound(dtoh.begin(), dtoh.end(), AsyncDtoH{start, 0, 0});
       copy != dtoh.end() && copy->start == start; ++copy) {
    if (copy->call == previous) {
      return view.op(view.ops()[copy->position]).dst_kind == MemKind::kPageable
                 ? static_cast<std::int64_t>(copy->position)
                 : -1;
    }
  }
  return -1;
}

// Whether the host touched managed memory in [from, to): a CPU page fault of the process, or a
// migration to the host, which is how a host read of what the GPU wrote shows in a trace.
bool hostTouchesManaged(const UnifiedMemory& um, std::uint32_t pid, Ns from, Ns to) {
  const auto fault = std::lower_bound(um.cpu_faults.begin(), um.cpu_faults.end(), from,
                                      [](const UmCpuFault& f, Ns t) { return f.time < t; });
  for (auto f = fault; f != um.cpu_faults.end() && f->time < to; ++f) {
    if (f->pid == pid) return true;
  }
  const auto migration = std::lower_bound(um.migrations.begin(), um.migrations.end(), from,
                                          [](const UmMigration& m, Ns t) { return m.start < t; });
  for (auto m = migration; m != um.migrations.end() && m->start < to; ++m) {
    if (m->pid == pid && m->direction == CopyKind::kUvmDtoH) return true;
  }
  return false;
}

// Whether the work a synchronous call that only writes (a memset, a copy from host memory)
// prepares runs on other streams than the synchronize waited for: the thread's first asynchronous
// work call after it goes to none of their streams. A stream's next work after such a call reuses
// the buffers its earlier work used (the next iteration's input overwritten: the synchronize
// protects them); work for other streams takes a buffer of its own.
bool preparesOtherStreams(const DeviceView& view, const std::vector<std::size_t>& waited,
                          std::vector<WorkCall>::const_iterator call,
                          std::vector<WorkCall>::const_iterator end) {
  auto consumer = std::find_if(std::next(call), end, [](const WorkCall& w) { return !w.synchronous; });
  if (consumer == end || !consumer->stream) return false;
  for (std::size_t p : waited) {
    if (DeviceView::streamKey(view.op(view.ops()[p])) == *consumer->stream) return false;
  }
  return true;
}

// A result is deferred to the next step's wait only where there is a next step: the same
// synchronize call bringing a result of the same size back again in the thread (a loop). One the
// thread runs once (the end of a pipeline that then reads its output) has no later wait to take
// its place: the host needs it there. The result's size tells two such calls apart: a phase that
// brings a 12 MB result back once, then a loop that brings 4 KB back each step, both through
// cudaStreamSynchronize (g005106).
void keepSingleReads(const DeviceView& view, const HostTimeline& host,
                     const std::vector<std::int64_t>& read_copies, std::vector<SyncNeed>& needs) {
  // pid, tid, call name, the size of the copy it brings back
  using Site = std::tuple<std::uint32_t, std::uint32_t, std::string_view, std::uint64_t>;
  std::map<Site, std::vector<std::size_t>> sites;
  for (std::size_t b = 0; b < host.barriers.size(); ++b) {
    if (read_copies[b] < 0) continue;
    const RuntimeCall& call = view.call(host.barriers[b].call);
    const GpuOp& copy = view.op(view.ops()[static_cast<std::size_t>(read_copies[b])]);
    sites[{call.pid, call.tid, view.callName(host.barriers[b].call), copy.bytes}].push_back(b);
  }
  for (const auto& [site, barriers] : sites) {
    const std::size_t b = barriers.front();
    if (barriers.size() == 1 && needs[b] == SyncNeed::kDeferrable) needs[b] = SyncNeed::kKept;
  }
}

}  // namespace

bool legacyStreamOrders(const DeviceView& view, const GpuOp& legacy_op, const RuntimeCall& sync,
                        const std::vector<std::size_t>& waited) {
  for (std::size_t p : waited) {
    const GpuOp& op = view.op(view.ops()[p]);
    const auto launch = view.launchCall(op);
    if (launch) {
      const RuntimeCall& issued = view.call(*launch);
      if (issued.pid != sync.pid || issued.tid != sync.tid) continue;
    }
    if (op.pid != legacy_op.pid || op.context_id != legacy_op.context_id) return false;
    if (view.onLegacyDefaultStream(op)) continue;
    const Stream* stream = view.stream(op);
    if (stream == nullptr || stream->flag != StreamFlag::kDefault) return false;
  }
  return true;
}

std::vector<SyncNeed> syncNeeds(const DeviceView& view, const HostTimeline& host,
                                std::vector<std::int64_t>* read_copies) {
  std::vector<SyncNeed> needs(host.barriers.size(), SyncNeed::kNotASync);
  if (read_copies != nullptr) read_copies->assign(host.barriers.size(), -1);
  // Per barrier: the last asynchronous DtoH copy whose result it brings back (-1: none).
  std::vector<std::int64_t> reads(host.barriers.size(), -1);
  if (host.barriers.empty()) return needs;
  const std::map<ThreadKey, ThreadCalls> threads = callsByThread(view);
  ProgramOrder order(view);
  // Per stream: the issue time up to which the current thread's blocking calls so far waited for
  // its ops (barriers are grouped by thread, in start order).
  std::unordered_map<std::uint64_t, Ns> waited_up_to;
  for (std::size_t b = 0; b < host.barriers.size(); ++b) {
    const HostBarrier& barrier = host.barriers[b];
    if (barrier.previous < 0) waited_up_to.clear();
    // A synchronize whose every op the thread had already waited for orders nothing more.
    bool orders_nothing = !barrier.waited_for.empty();
    for (std::size_t p : barrier.waited_for) {
      const std::uint64_t stream = DeviceView::streamKey(view.op(view.ops()[p]));
      const auto up_to = waited_up_to.find(stream);
      const Ns issued = issuedAt(view, p);
      if (up_to == waited_up_to.end() || up_to->second < issued) {
        orders_nothing = false;
        waited_up_to[stream] = issued;
      }
    }
    if (!isExplicitSync(view.callKind(barrier.call))) continue;
    needs[b] = SyncNeed::kRemovable;
    const RuntimeCall& call = view.call(barrier.call);
    const auto t = threads.find({call.pid, call.tid});
    const std::int64_t pageable_read =
        t != threads.end() && barrier.previous >= 0
            ? followsPageableRead(view, t->second.async_dtoh,
                                  host.barriers[static_cast<std::size_t>(barrier.previous)].call)
            : -1;
    if (pageable_read < 0 && (orders_nothing || t == threads.end())) continue;
    const Ns since = barrier.previous >= 0
                         ? host.barriers[static_cast<std::size_t>(barrier.previous)].end
                         : std::numeric_limits<Ns>::min();
    const auto& dtoh = t->second.async_dtoh;
    // Only a copy the synchronize waited for can be what the host is about to read, and only
    // where it waits for no work the thread queued behind the copy (waitsForWorkQueuedBehind).
    std::int64_t read_copy = pageable_read;  // the last copy it brings back
    for (auto d = std::upper_bound(dtoh.begin(), dtoh.end(), AsyncDtoH{since, 0, 0});
         d != dtoh.end() && d->start < call.start; ++d) {
      if (order.orderedBefore(d->position, barrier.waited_for, call.start) &&
          !waitsForWorkQueuedBehind(view, *d, call, barrier.waited_for)) {
        read_copy = static_cast<std::int64_t>(d->position);
      }
    }
    reads[b] = read_copy;
    const auto& work = t->second.work_calls;
    const auto next = std::partition_point(work.begin(), work.end(),
                                           [&](const WorkCall& w) { return w.start < call.end; });
    // A synchronous copy on the legacy stream orders itself after blocking streams' work.
    const bool orders_sync_copy =
        next != work.end() && next->synchronous &&
        !(next->legacy_op != nullptr && legacyStreamOrders(view, *next->legacy_op, call, barrier.waited_for)) &&
        !(!next->reads_gpu_written && preparesOtherStreams(view, barrier.waited_for, next, work.end()));
    const Ns next_work = next != work.end() ? next->start : std::numeric_limits<Ns>::max();
    const bool host_reads_managed =
        hostTouchesManaged(view.trace().unified_memory, call.pid, call.end, next_work);
    const bool pageable_before_sync_call =
        pageable_read >= 0 && next != work.end() && next->synchronous && next->legacy_op != nullptr;
    if (orders_sync_copy || host_reads_managed || pageable_before_sync_call) {
      needs[b] = SyncNeed::kKept;
    } else if (read_copy >= 0) {
      needs[b] = SyncNeed::kDeferrable;
    }
  }
  keepSingleReads(view, host, reads, needs);
  if (read_copies != nullptr) *read_copies = std::move(reads);
  return needs;
}

HostTimeline deferredTimeline(const DeviceView& view, const HostTimeline& host,
                              const std::vector<SyncNeed>& needs,
                              const std::vector<std::int64_t>& read_copies) {
  HostTimeline deferred = host;
  std::map<ThreadKey, std::size_t> last;  // per thread: its latest deferrable synchronize
  for (std::size_t b = 0; b < host.barriers.size(); ++b) {
    if (needs[b] != SyncNeed::kDeferrable) continue;
    const RuntimeCall& call = view.call(host.barriers[b].call);
    const ThreadKey key{call.pid, call.tid};
    const auto previous = last.find(key);
    if (previous == last.end()) {
      deferred.barriers[b].waited_for.clear();
    } else if (previous->second < read_copies.size() && read_copies[previous->second] >= 0) {
      // The event recorded after the previous step's copy: that copy and what the program
      // ordered before it, not the rest of what the previous synchronize waited for.
      deferred.barriers[b].waited_for = {static_cast<std::size_t>(read_copies[previous->second])};
    } else {
      deferred.barriers[b].waited_for = host.barriers[previous->second].waited_for;
    }
    last[key] = b;
  }
  return deferred;
}

}  // namespace cuoverlap::diagnosis
