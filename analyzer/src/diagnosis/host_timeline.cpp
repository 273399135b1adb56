#include "diagnosis/host_timeline.h"

#include <algorithm>
#include <memory>
#include <limits>
#include <map>
#include <optional>
#include <tuple>
#include <unordered_map>

#include "diagnosis/api_names.h"
#include "diagnosis/stream_waits.h"

namespace cuoverlap::diagnosis {
namespace {

using StreamId = std::tuple<std::uint32_t, std::uint32_t, std::uint32_t>;  // pid, ctx, stream

// Resolving W costs one edge per stream for a device synchronize: beyond this many edges per op
// (many streams and many synchronizes) the timeline is dropped rather than made quadratic.
constexpr std::size_t kMaxEdgesPerOp = 8;
constexpr std::size_t kMinEdgeBudget = 100'000;

// The view's ops per stream in issue order (launch call start, else start), and each op's issue
// time; the launch call of every op that has one, by call index.
class IssueIndex {
 public:
  explicit IssueIndex(const DeviceView& view) {
    std::size_t position = 0;
    for (const ScopedOp& scoped : view.ops()) {
      const GpuOp& op = view.op(scoped);
      const auto launch = view.launchCall(op);
      const Ns issued = launch ? view.call(*launch).start : scoped.start;
      streams_[{op.pid, op.context_id, op.stream_id}].emplace_back(issued, position);
      if (launch) op_of_call_.emplace(*launch, position);
      ++position;
    }
    for (auto& [id, list] : streams_) std::sort(list.begin(), list.end());
  }

  std::optional<std::size_t> opOfCall(std::size_t call) const {
    auto it = op_of_call_.find(call);
    if (it == op_of_call_.end()) return std::nullopt;
    return it->second;
  }

  // The last op of `stream` issued before `time`.
  std::optional<std::size_t> lastBefore(const StreamId& stream, Ns time) const {
    auto it = streams_.find(stream);
    if (it == streams_.end()) return std::nullopt;
    return lastBefore(it->second, time);
  }

  // The last op issued before `time` on every stream of `pid`.
  std::vector<std::size_t> lastOfEachStream(std::uint32_t pid, Ns time) const {
    std::vector<std::size_t> last;
    for (auto it = streams_.lower_bound({pid, 0, 0});
         it != streams_.end() && std::get<0>(it->first) == pid; ++it) {
      if (const auto p = lastBefore(it->second, time)) last.push_back(*p);
    }
    return last;
  }

  // The last op of `stream` issued before `time` that `match` accepts.
  template <typename Match>
  std::optional<std::size_t> lastMatching(const StreamId& stream, Ns time, Match match) const {
    auto it = streams_.find(stream);
    if (it == streams_.end()) return std::nullopt;
    const auto& list = it->second;
    auto end = std::lower_bound(list.begin(), list.end(), std::make_pair(time, std::size_t{0}));
    while (end != list.begin()) {
      --end;
      if (match(end->second)) return end->second;
    }
    return std::nullopt;
  }

  // The last op of `stream` whose launch correlation id is below `correlation` (an event record):
  // correlation ids grow with issue order, so the list is partitioned by it.
  std::optional<std::size_t> lastBeforeCorrelation(const DeviceView& view, const StreamId& stream,
                                                   std::uint32_t correlation) const {
    auto it = streams_.find(stream);
    if (it == streams_.end()) return std::nullopt;
    const auto& list = it->second;
    auto end = std::partition_point(list.begin(), list.end(), [&](const auto& entry) {
      const std::uint32_t id = view.op(view.ops()[entry.second]).correlation_id;
      return id != 0 && id < correlation;
    });
    if (end == list.begin()) return std::nullopt;
    return std::prev(end)->second;
  }

 private:
  static std::optional<std::size_t> lastBefore(const std::vector<std::pair<Ns, std::size_t>>& list,
                                                Ns time) {
    auto end = std::lower_bound(list.begin(), list.end(), std::make_pair(time, std::size_t{0}));
    if (end == list.begin()) return std::nullopt;
    return std::prev(end)->second;
  }

  std::map<StreamId, std::vector<std::pair<Ns, std::size_t>>> streams_;
  std::unordered_map<std::size_t, std::size_t> op_of_call_;
};

// The synchronization record of each call (by process and correlation id) and the event records
// per (process, event), built once.
class SyncLookup {
 public:
  explicit SyncLookup(const DeviceView& view) {
    for (const SyncEvent* sync : view.syncs()) by_call_.emplace(key(sync->pid, sync->correlation_id), sync);
    for (const CudaEventRecord& record : view.trace().event_records) {  // by correlation id
      records_[{record.pid, record.event_id}].push_back(&record);
    }
  }

  const SyncEvent* recordOf(const RuntimeCall& call) const {
    auto it = by_call_.find(key(call.pid, call.correlation_id));
    return it == by_call_.end() ? nullptr : it->second;
  }

  // The last record of the synchronized event before the synchronize.
  const CudaEventRecord* recordBefore(const SyncEvent& sync) const {
    auto it = records_.find({sync.pid, sync.event_id});
    if (it == records_.end()) return nullptr;
    const auto& list = it->second;
    auto end = std::partition_point(list.begin(), list.end(), [&](const CudaEventRecord* r) {
      return r->correlation_id < sync.correlation_id;
    });
    return end == list.begin() ? nullptr : *std::prev(end);
  }

 private:
  static std::uint64_t key(std::uint32_t pid, std::uint32_t correlation) {
    return (static_cast<std::uint64_t>(pid) << 32) | correlation;
  }
  std::unordered_map<std::uint64_t, const SyncEvent*> by_call_;
  std::map<std::pair<std::uint32_t, std::uint64_t>, std::vector<const CudaEventRecord*>> records_;
};

// The op an event synchronize waited for: the last op of the stream its event was last recorded
// on before the synchronize (our collector's CUDA event records); none without records.
std::optional<std::size_t> eventOp(const DeviceView& view, const IssueIndex& index,
                                   const SyncLookup& syncs, const SyncEvent& sync) {
  const CudaEventRecord* record = syncs.recordBefore(sync);
  if (record == nullptr) return std::nullopt;
  return index.lastBeforeCorrelation(view, {record->pid, record->context_id, record->stream_id},
                                     record->correlation_id);
}

// W of a blocking call, or nothing when the call is no barrier of this view.
std::optional<std::vector<std::size_t>> waitedFor(const DeviceView& view, const IssueIndex& index,
                                                  const SyncLookup& syncs, std::size_t call_index,
                                                  bool pageable_copy) {
  const RuntimeCall& call = view.call(call_index);
  const ApiKind kind = view.callKind(call_index);
  if (pageable_copy || kind == ApiKind::kMemcpySync || kind == ApiKind::kMemsetSync) {
    const auto op = index.opOfCall(call_index);
    if (!op) return std::nullopt;
    return std::vector<std::size_t>{*op};
  }
  // An allocation or free call synchronizes the device implicitly (cudaFree, cudaFreeHost): a
  // barrier that waits for what the process had issued; one that returned before that ended
  // waited for none. A pinned host allocation (cudaMallocHost pinning pages) and a device
  // allocation (cudaMalloc, cuMemAlloc) only hold their thread for their own time: barriers that
  // wait for nothing. Of the lab corpus's 85 cudaMalloc calls that began with GPU work in flight,
  // 68 returned before it ended (2-200 µs calls with up to 5.5 ms of work left); the other 17
  // returned 5 µs to 4.6 ms after it, 12 of them more than 20 µs after: their own time. On the lab corpus's traces, of the 10
  // cudaMallocHost calls that began with GPU work in flight one returned in 74 µs with 2.8 ms of
  // copies still to run, and the others took longer than the work left (up to 9 µs of it, or
  // 1.2-2.4 ms of pinning); none of the 93 cudaFree and 14 cudaFreeHost calls that began with
  // work in flight returned before it ended.
  if (kind == ApiKind::kAllocation) {
    const std::string_view base = view.callName(call_index);
    if (isPinnedHostAllocation(base) || isDeviceAllocation(base)) return std::vector<std::size_t>{};
    return index.lastOfEachStream(call.pid, call.start);
  }
  if (!isExplicitSync(kind)) return std::nullopt;
  const SyncEvent* sync = syncs.recordOf(call);
  if (kind == ApiKind::kStreamSync && sync != nullptr) {
    const auto op = index.lastBefore({call.pid, sync->context_id, sync->stream_id}, call.start);
    return op ? std::vector<std::size_t>{*op} : std::vector<std::size_t>{};
  }
  if (kind == ApiKind::kEventSync) {
    const auto op = sync ? eventOp(view, index, syncs, *sync) : std::nullopt;
    return op ? std::vector<std::size_t>{*op} : std::vector<std::size_t>{};
  }
  return index.lastOfEachStream(call.pid, call.start);  // device synchronize
}

// Whether an explicit synchronize waited for every op of `waited` that the trace shows ending after
// it returned: those ops were launched by the synchronizing thread itself, which program order
// puts before the call, so the call returned only once they ended (CUDA's semantics), and the
// recorded end is off by the error of the device clock's conversion to the host's (a few
// microseconds, seen in whole runs of a lab trace). An op another thread launched may have been
// submitted after the call began and is no proof.
bool waitedInOrder(const DeviceView& view, std::size_t call_index,
                   const std::vector<std::size_t>& waited) {
  if (!isExplicitSync(view.callKind(call_index))) return false;
  const RuntimeCall& call = view.call(call_index);
  for (std::size_t p : waited) {
    const ScopedOp& scoped = view.ops()[p];
    if (scoped.end <= call.end) continue;
    const auto launch = view.launchCall(view.op(scoped));
    if (!launch) return false;
    const RuntimeCall& issued = view.call(*launch);
    if (issued.pid != call.pid || issued.tid != call.tid || issued.end > call.start) return false;
  }
  return true;
}

// The last barrier in [first, last) of one thread's (start-ordered) barriers that returned by
// `time`, or -1.
std::int64_t lastOfThread(const HostTimeline& timeline, std::pair<std::size_t, std::size_t> range,
                          Ns time) {
  const auto first = timeline.barriers.begin() + static_cast<std::ptrdiff_t>(range.first);
  const auto last = timeline.barriers.begin() + static_cast<std::ptrdiff_t>(range.second);
  auto after = std::partition_point(first, last, [&](const HostBarrier& b) { return b.end <= time; });
  return after == first ? -1 : std::prev(after) - timeline.barriers.begin();
}

std::int64_t lastOfProcess(const std::vector<std::pair<Ns, std::int64_t>>& by_end, Ns time) {
  auto after = std::upper_bound(by_end.begin(), by_end.end(),
                                std::make_pair(time, std::numeric_limits<std::int64_t>::max()));
  return after == by_end.begin() ? -1 : std::prev(after)->second;
}

// An op a stream wait released started this soon after the op it waited for ended (on an H100
// 6-13 µs from a DtoH copy to an HtoD one); one that started later was held by something else
// (its engine, or the host still staging it).
constexpr Ns kWaitReleasedNs = 20'000;
// A staged copy whose call returned at most this long before its op ended staged until its last
// chunk (lab g000117: 8 µs before; 5 µs to 1 ms score alike).
constexpr Ns kStagedReturnNs = 20'000;

// Per op a stream wait released (its X): when the last op it waited for ended.
std::unordered_map<std::size_t, Ns> waitReleases(const DeviceView& view) {
  std::unordered_map<std::size_t, Ns> released;
  for (const StreamWait& wait : streamWaits(view)) {
    for (std::size_t y : wait.waited_for) {
      auto [it, added] = released.emplace(wait.released, view.ops()[y].end);
      if (!added) it->second = std::max(it->second, view.ops()[y].end);
    }
  }
  return released;
}

// Whether a staged copy's call was held by a stream wait on its own op: the op the wait waited
// for ended inside the call, and the op started as the wait released it, before the call returned.
bool heldByWait(const DeviceView& view, const std::unordered_map<std::size_t, Ns>& released,
                std::size_t op, const RuntimeCall& call) {
  const auto it = released.find(op);
  if (it == released.end()) return false;
  const ScopedOp& scoped = view.ops()[op];
  return it->second > call.start && it->second <= scoped.start &&
         scoped.start <= it->second + kWaitReleasedNs && scoped.start < call.end;
}

}  // namespace

HostTimeline buildHostTimeline(const DeviceView& view,
                               const std::vector<std::size_t>& pageable_copy_calls,
                               bool stream_held_staging) {
  HostTimeline timeline;
  if (!view.hasRuntimeData() || view.empty()) return timeline;
  const IssueIndex index(view);
  const SyncLookup syncs(view);
  // Built at the first staged copy that needs it (most traces have none, many no stream wait).
  std::optional<std::unordered_map<std::size_t, Ns>> wait_released;
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::vector<HostBarrier>> by_thread;
  std::size_t edges = 0;
  const std::size_t budget = std::max(kMinEdgeBudget, kMaxEdgesPerOp * view.ops().size());
  for (std::size_t call_index : view.calls()) {
    const bool pageable = std::binary_search(pageable_copy_calls.begin(),
                                             pageable_copy_calls.end(), call_index);
    auto waited = waitedFor(view, index, syncs, call_index, pageable);
    if (!waited) continue;
    const RuntimeCall& call = view.call(call_index);
    HostBarrier barrier{call_index, call.start, call.end, 0, std::move(*waited), -1};
    Ns w = std::numeric_limits<Ns>::min();
    for (std::size_t p : barrier.waited_for) w = std::max(w, view.ops()[p].end);
    // A call that returned before W ended waited for something else: a pageable HtoD copy
    // returns once the host has staged the data, before the DMA from the staging buffer ends.
    // cudaMemcpy first synchronizes its stream (CUDA's API synchronization behavior): it waited
    // for the stream's previous op; cudaMemcpyAsync staged at once.
    // A synchronize that waited for them in program order returned as they ended.
    bool returned_at_w = w > call.end && waitedInOrder(view, call_index, barrier.waited_for);
    // A synchronous memset returns as its op begins (its op, ~1 µs, ends after the call by the
    // trace's clocks): it slept until the work its op follows had ended. That work, where it was
    // issued before the call began (as for a synchronize) and ended inside the call, is its W: its
    // stream's previous op and, on the legacy stream, each blocking stream's last op of its
    // context; the call's own time is what came after. Without such work the call's time is all
    // its own (the driver's before it submits the op). Before, it was all its own time in both
    // cases: g000180's worker held a cudaMemset 510 µs on the legacy stream behind another
    // thread's kernels on a blocking stream, returning 48 µs after they ended, and a what-if that
    // ends those kernels sooner kept the 510 µs. A memset whose op began only after the call
    // returned (the device still busy with a copy submitted before it) waited the same way for
    // the work that ended inside the call: g000190's worker held a 3.2 MiB cudaMemset 2.8 ms on
    // the legacy stream behind other threads' staged copies in two of its five kept runs,
    // returning 58-67 µs before its op began, and in the other three 2-12 µs after it ended; the
    // first kept the whole call as its own time, so pinning the copies saved it nothing there.
    if (w > call.end && view.callKind(call_index) == ApiKind::kMemsetSync &&
        barrier.waited_for.size() == 1 && view.ops()[barrier.waited_for.front()].start > call.start) {
      const Ns op_start = std::min(view.ops()[barrier.waited_for.front()].start, call.end);
      const GpuOp& op = view.op(view.ops()[barrier.waited_for.front()]);
      const auto ended_inside = [&](std::size_t p) {
        return view.ops()[p].end > call.start && view.ops()[p].end <= op_start;
      };
      std::vector<std::size_t> before;
      if (const auto previous = index.lastBefore({op.pid, op.context_id, op.stream_id}, call.start);
          previous && ended_inside(*previous)) {
        before.push_back(*previous);
      }
      if (view.onLegacyDefaultStream(op)) {
        for (const std::size_t p : index.lastOfEachStream(op.pid, call.start)) {
          const GpuOp& other = view.op(view.ops()[p]);
          const Stream* stream = view.stream(other);
          if (other.context_id == op.context_id && !view.onLegacyDefaultStream(other) &&
              stream != nullptr && stream->flag == StreamFlag::kDefault && ended_inside(p)) {
            before.push_back(p);
          }
        }
      }
      if (!before.empty()) {
        barrier.waited_for = std::move(before);
        w = std::numeric_limits<Ns>::min();
        for (std::size_t p : barrier.waited_for) w = std::max(w, view.ops()[p].end);
      }
    }
    if (w > call.end && !returned_at_w && isExplicitSync(view.callKind(call_index))) {
      // A synchronize waits for the work issued before it began: an op of another thread that
      // ended after it returned was submitted after that (its launch call held in the driver),
      // and the call still waited for the rest of W.
      const auto issued_after = [&](std::size_t p) {
        return view.ops()[p].end > call.end && !waitedInOrder(view, call_index, {p});
      };
      barrier.waited_for.erase(std::remove_if(barrier.waited_for.begin(), barrier.waited_for.end(), issued_after),
                               barrier.waited_for.end());
      w = std::numeric_limits<Ns>::min();
      for (std::size_t p : barrier.waited_for) w = std::max(w, view.ops()[p].end);
      returned_at_w = w > call.end;
    } else if (w > call.end && !returned_at_w) {
      barrier.waited_for.clear();
      // A staged copy (pageable host memory) is staged only once its stream's previous staged
      // copy the same way has left the driver's staging buffer: a call that began while that copy
      // was held (behind a stream wait) waited for it to end, then staged its own data.
      if (pageable && view.callKind(call_index) != ApiKind::kMemcpySync) {
        barrier.staged = true;
        const std::size_t own_op = *index.opOfCall(call_index);
        const GpuOp& op = view.op(view.ops()[own_op]);
        const auto same_way = [&](std::size_t p) {
          const GpuOp& other = view.op(view.ops()[p]);
          return other.kind == OpKind::kMemcpy && other.src_kind == op.src_kind &&
                 other.dst_kind == op.dst_kind;
        };
        // Another thread's copy there is contention between threads (legacy_threads.h), not this.
        const auto byThisThread = [&](std::size_t p) {
          const auto launch = view.launchCall(view.op(view.ops()[p]));
          return launch && view.call(*launch).tid == call.tid && view.call(*launch).pid == call.pid;
        };
        const auto previous =
            index.lastMatching({op.pid, op.context_id, op.stream_id}, call.start, same_way);
        const auto heldByAWait = [&] {
          if (!wait_released) wait_released = waitReleases(view);
          return heldByWait(view, *wait_released, own_op, call);
        };
        // With `stream_held_staging` (the asynchronous fix's what-if, asynchronous_fix.h), the
        // same where its own stream's previous op (any kind), issued before the call began,
        // ended inside it, its copy starting as that op ended (kWaitReleasedNs) and the call
        // returning with the copy's last chunk (kStagedReturnNs): the driver stages a copy too
        // large for its staging buffers only as their DMA drains, and the DMA waited for the
        // stream. Lab g000117: a worker's 5.9 MB upload on a blocking stream called 14.3 ms
        // before it ran, 8 µs after its stream's kernel that the legacy stream's barrier had held
        // (behind a cudaMemset of the worker's own, behind another thread's kernel); with the
        // memsets asynchronous the call returned 0.5 ms after that kernel, where the host
        // timeline had kept 14.3 ms of the call's own time (claim 1.25 ms, saved 5.45).
        const auto heldByStream = [&] {
          if (!stream_held_staging) return false;
          const auto before = index.lastBefore({op.pid, op.context_id, op.stream_id}, call.start);
          if (!before || *before == own_op) return false;
          const Ns ended = view.ops()[*before].end;
          const ScopedOp& scoped = view.ops()[own_op];
          return ended > call.start && ended <= scoped.start &&
                 scoped.start <= ended + kWaitReleasedNs && scoped.start < call.end &&
                 scoped.end >= call.end - kStagedReturnNs;
        };
        if (previous && byThisThread(*previous) && view.ops()[*previous].end > call.start &&
            view.ops()[*previous].end <= call.end) {
          barrier.waited_for.push_back(*previous);
          w = view.ops()[*previous].end;
        } else if (heldByAWait() || heldByStream()) {
          // Its own op was held by a stream wait when the call began and started inside it: the
          // call staged as the wait released the DMA, so it waited for that copy (W), returning
          // with its end (g000260's 5.7 MB uploads returned 2-8 µs before theirs ended: the
          // clocks' disagreement), and a what-if without the wait returns it sooner.
          barrier.waited_for.push_back(own_op);
          w = view.ops()[own_op].end;
          returned_at_w = true;
        }
      }
      if (view.callKind(call_index) == ApiKind::kMemcpySync) {
        const GpuOp& op = view.op(view.ops()[*index.opOfCall(call_index)]);
        const auto previous = index.lastBefore({op.pid, op.context_id, op.stream_id}, call.start);
        if (previous && view.ops()[*previous].end <= call.end) {
          barrier.waited_for.push_back(*previous);
          w = view.ops()[*previous].end;
        }
      }
    }
    barrier.own = returned_at_w ? 0
                  : std::max<Ns>(0, w > call.start && w <= call.end ? call.end - w
                                                                    : call.end - call.start);
    edges += barrier.waited_for.size() + 1;
    if (edges > budget) return {};
    by_thread[{call.pid, call.tid}].push_back(std::move(barrier));
  }
  // Threads one after another, each in start order, with its previous barrier linked.
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::pair<std::size_t, std::size_t>> range;
  for (auto& [thread, list] : by_thread) {
    const std::size_t first = timeline.barriers.size();
    for (std::size_t i = 0; i < list.size(); ++i) {
      list[i].previous = i == 0 ? -1 : static_cast<std::int64_t>(first + i - 1);
      timeline.barriers.push_back(std::move(list[i]));
    }
    range[thread] = {first, timeline.barriers.size()};
  }
  // A thread without blocking calls of its own (PyTorch's autograd thread launching backward
  // while the main thread waits in backward()) is driven by the others: its launches follow the
  // process's last blocking call.
  std::map<std::uint32_t, std::vector<std::pair<Ns, std::int64_t>>> by_process;  // (end, barrier)
  for (std::size_t b = 0; b < timeline.barriers.size(); ++b) {
    const RuntimeCall& call = view.call(timeline.barriers[b].call);
    by_process[call.pid].emplace_back(call.end, static_cast<std::int64_t>(b));
  }
  for (auto& [pid, list] : by_process) std::sort(list.begin(), list.end());
  timeline.barrier_of.assign(view.ops().size(), -1);
  std::size_t position = 0;
  for (const ScopedOp& scoped : view.ops()) {
    const std::size_t at = position++;
    const auto launch = view.launchCall(view.op(scoped));
    if (!launch) continue;
    const RuntimeCall& call = view.call(*launch);
    // By the time the op was released (its call returned, or it started): an op that started
    // after its own blocking call returned (a staged pageable copy) follows that call.
    const Ns released = std::max(call.start, std::min(call.end, scoped.start));
    timeline.barrier_of[at] = range.count({call.pid, call.tid})
                                  ? lastOfThread(timeline, range.at({call.pid, call.tid}), released)
                                  : lastOfProcess(by_process[call.pid], released);
  }
  return timeline;
}

std::vector<std::size_t> pageableCopyCalls(const DeviceView& view) {
  std::vector<std::size_t> calls;
  for (const std::uint32_t pos : view.pageableCopyPositions()) {
    if (const auto launch = view.launchCall(view.op(view.ops()[pos]))) calls.push_back(*launch);
  }
  std::sort(calls.begin(), calls.end());
  return calls;
}

const HostTimeline& buildHostTimeline(const DeviceView& view) {
  if (!view.host_timeline_) {
    view.host_timeline_ = std::make_shared<const HostTimeline>(buildHostTimeline(view, pageableCopyCalls(view)));
  }
  return *view.host_timeline_;
}

}  // namespace cuoverlap::diagnosis
