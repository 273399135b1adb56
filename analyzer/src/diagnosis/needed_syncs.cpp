// Explicit synchronizes the host needs (needed_syncs.h).
#include "diagnosis/needed_syncs.h"

#include <algorithm>
#include <limits>
#include <map>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "diagnosis/api_names.h"

namespace cuoverlap::diagnosis {
namespace {

using ThreadKey = std::pair<std::uint32_t, std::uint32_t>;  // (pid, tid)

// A call that issues work: a launch, copy or memset.
struct WorkCall {
  Ns start = 0;
  bool synchronous = false;            // cudaMemcpy, cudaMemset
  const GpuOp* legacy_op = nullptr;    // its op, when that ran on the legacy default stream
  bool operator<(const WorkCall& other) const { return start < other.start; }
};

struct ThreadCalls {
  std::vector<Ns> async_dtoh;        // starts of async DtoH copy calls, sorted
  std::vector<WorkCall> work_calls;  // sorted by start
};

std::map<ThreadKey, ThreadCalls> callsByThread(const DeviceView& view) {
  std::map<ThreadKey, ThreadCalls> threads;
  std::unordered_map<std::size_t, const GpuOp*> legacy_op_of_call;
  for (const ScopedOp& scoped : view.ops()) {
    const GpuOp& op = view.op(scoped);
    const auto launch = view.launchCall(op);
    if (!launch) continue;
    if (view.onLegacyDefaultStream(op)) legacy_op_of_call.emplace(*launch, &op);
    if (engineOf(op) != Engine::kD2H || view.callKind(*launch) != ApiKind::kMemcpyAsync) continue;
    const RuntimeCall& c = view.call(*launch);
    threads[{c.pid, c.tid}].async_dtoh.push_back(c.start);
  }
  for (std::size_t call : view.calls()) {
    const ApiKind kind = view.callKind(call);
    const bool sync = kind == ApiKind::kMemcpySync || kind == ApiKind::kMemsetSync;
    if (!sync && kind != ApiKind::kMemcpyAsync && kind != ApiKind::kMemsetAsync &&
        kind != ApiKind::kLaunch) {
      continue;
    }
    const RuntimeCall& c = view.call(call);
    const auto legacy = legacy_op_of_call.find(call);
    threads[{c.pid, c.tid}].work_calls.push_back(
        {c.start, sync, legacy != legacy_op_of_call.end() ? legacy->second : nullptr});
  }
  for (auto& [key, t] : threads) {
    std::sort(t.async_dtoh.begin(), t.async_dtoh.end());
    std::sort(t.work_calls.begin(), t.work_calls.end());
  }
  return threads;
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

// Whether work on the legacy default stream issued after the synchronize would wait for all of
// `waited` anyway: each op ran on the legacy stream or on a blocking stream of the same context
// (legacy-stream work waits for those implicitly), so the synchronize orders nothing it does not.
// Work other host threads issued is left out: nothing but timing orders it before this thread's
// call, so a correct program cannot rely on the synchronize for it (a device synchronize waits
// for it by chance).
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

// A result is deferred to the next step's wait only where there is a next step: the same
// synchronize call bringing a result back again in the thread (a loop). One the thread runs once
// (the end of a pipeline that then reads its output) has no later wait to take its place: the
// host needs it there.
void keepSingleReads(const DeviceView& view, const HostTimeline& host, const std::vector<bool>& reads,
                     std::vector<SyncNeed>& needs) {
  using Site = std::tuple<std::uint32_t, std::uint32_t, std::string_view>;  // pid, tid, call name
  std::map<Site, std::vector<std::size_t>> sites;
  for (std::size_t b = 0; b < host.barriers.size(); ++b) {
    if (!reads[b]) continue;
    const RuntimeCall& call = view.call(host.barriers[b].call);
    sites[{call.pid, call.tid, view.callName(host.barriers[b].call)}].push_back(b);
  }
  for (const auto& [site, barriers] : sites) {
    const std::size_t b = barriers.front();
    if (barriers.size() == 1 && needs[b] == SyncNeed::kDeferrable) needs[b] = SyncNeed::kKept;
  }
}

}  // namespace

std::vector<SyncNeed> syncNeeds(const DeviceView& view, const HostTimeline& host) {
  std::vector<SyncNeed> needs(host.barriers.size(), SyncNeed::kNotASync);
  std::vector<bool> reads(host.barriers.size(), false);  // brings an async DtoH copy's result back
  const std::map<ThreadKey, ThreadCalls> threads = callsByThread(view);
  for (std::size_t b = 0; b < host.barriers.size(); ++b) {
    const HostBarrier& barrier = host.barriers[b];
    if (!isExplicitSync(view.callKind(barrier.call))) continue;
    needs[b] = SyncNeed::kRemovable;
    const RuntimeCall& call = view.call(barrier.call);
    const auto t = threads.find({call.pid, call.tid});
    if (t == threads.end()) continue;
    const Ns since = barrier.previous >= 0
                         ? host.barriers[static_cast<std::size_t>(barrier.previous)].end
                         : std::numeric_limits<Ns>::min();
    const auto& dtoh = t->second.async_dtoh;
    const auto first = std::upper_bound(dtoh.begin(), dtoh.end(), since);
    const bool brings_back = first != dtoh.end() && *first < call.start;
    reads[b] = brings_back;
    const auto& work = t->second.work_calls;
    const auto next = std::lower_bound(work.begin(), work.end(), WorkCall{call.end});
    // A synchronous copy on the legacy stream orders itself after blocking streams' work.
    const bool orders_sync_copy =
        next != work.end() && next->synchronous &&
        !(next->legacy_op != nullptr && legacyStreamOrders(view, *next->legacy_op, call, barrier.waited_for));
    const Ns next_work = next != work.end() ? next->start : std::numeric_limits<Ns>::max();
    const bool host_reads_managed =
        hostTouchesManaged(view.trace().unified_memory, call.pid, call.end, next_work);
    if (orders_sync_copy || host_reads_managed) {
      needs[b] = SyncNeed::kKept;
    } else if (brings_back) {
      needs[b] = SyncNeed::kDeferrable;
    }
  }
  keepSingleReads(view, host, reads, needs);
  return needs;
}

HostTimeline deferredTimeline(const DeviceView& view, const HostTimeline& host,
                              const std::vector<SyncNeed>& needs) {
  HostTimeline deferred = host;
  std::map<ThreadKey, std::size_t> last;  // per thread: its latest deferrable synchronize
  for (std::size_t b = 0; b < host.barriers.size(); ++b) {
    if (needs[b] != SyncNeed::kDeferrable) continue;
    const RuntimeCall& call = view.call(host.barriers[b].call);
    const ThreadKey key{call.pid, call.tid};
    const auto previous = last.find(key);
    if (previous == last.end()) {
      deferred.barriers[b].waited_for.clear();
    } else {
      deferred.barriers[b].waited_for = host.barriers[previous->second].waited_for;
    }
    last[key] = b;
  }
  return deferred;
}

}  // namespace cuoverlap::diagnosis
