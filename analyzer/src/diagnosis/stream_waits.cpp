#include "diagnosis/stream_waits.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <optional>

namespace cuoverlap::diagnosis {
namespace {

constexpr Ns kReleaseSlackNs = 5'000;

// Ops of the view indexed per stream and by end time, built once.
class OpIndex {
 public:
  explicit OpIndex(const DeviceView& view) : view_(view) {
    for (std::size_t pos = 0; pos < view.ops().size(); ++pos) {
      const GpuOp& op = view.op(view.ops()[pos]);
      PerStream& stream = by_stream_[{op.context_id, op.stream_id}];
      stream.positions.push_back(pos);
      if (auto call = view.launchCall(op)) stream.launches.emplace_back(view.call(*call).start, pos);
      by_end_.emplace_back(view.ops()[pos].end, pos);
    }
    std::sort(by_end_.begin(), by_end_.end());
    for (auto& [key, stream] : by_stream_) std::sort(stream.launches.begin(), stream.launches.end());
  }

  // The first op on the wait's stream whose launch call began at or after the wait call: one
  // binary search over the stream's launches (ops without a launch call cannot be matched).
  std::optional<std::size_t> releasedOp(const SyncEvent& wait) const {
    auto it = by_stream_.find({wait.context_id, wait.stream_id});
    if (it == by_stream_.end()) return std::nullopt;
    const auto& launches = it->second.launches;
    auto first = std::lower_bound(launches.begin(), launches.end(),
                                  std::make_pair(wait.start, std::size_t{0}));
    if (first == launches.end()) return std::nullopt;
    return first->second;
  }

  // Ops of other streams that ended in [X start - slack, X start], by end time.
  std::vector<std::size_t> releasingOps(std::size_t released) const {
    const ScopedOp x = view_.ops()[released];
    auto it = std::lower_bound(by_end_.begin(), by_end_.end(),
                               std::make_pair(x.start - kReleaseSlackNs, std::size_t{0}));
    std::vector<std::size_t> candidates;
    for (; it != by_end_.end() && it->first <= x.start; ++it) {
      if (!sameStream(it->second, released)) candidates.push_back(it->second);
    }
    return candidates;
  }

  // See StreamWait::ready.
  std::optional<Ns> readyTime(std::size_t position) const {
    const ScopedOp scoped = view_.ops()[position];
    const GpuOp& op = view_.op(scoped);
    const auto launch = view_.launchCall(op);
    if (!launch) return std::nullopt;
    const RuntimeCall& call = view_.call(*launch);
    Ns ready = call.end > scoped.start ? call.start : call.end;
    const auto& list = by_stream_.at({op.context_id, op.stream_id}).positions;
    const auto it = std::lower_bound(list.begin(), list.end(), position);
    if (it != list.begin()) ready = std::max(ready, view_.ops()[*std::prev(it)].end);
    return ready;
  }

  bool sameStream(std::size_t a, std::size_t b) const {
    return DeviceView::streamKey(view_.op(view_.ops()[a])) ==
           DeviceView::streamKey(view_.op(view_.ops()[b]));
  }

  // The last op on the record's stream launched before the record call. Ops of one stream run in
  // launch order and correlation ids grow with it, so the list is partitioned by the record's id.
  std::optional<std::size_t> recordedOp(const CudaEventRecord& record) const {
    auto it = by_stream_.find({record.context_id, record.stream_id});
    if (it == by_stream_.end()) return std::nullopt;
    const auto& list = it->second.positions;
    auto end = std::partition_point(list.begin(), list.end(), [&](std::size_t p) {
      const GpuOp& op = view_.op(view_.ops()[p]);
      return op.correlation_id != 0 && op.correlation_id < record.correlation_id;
    });
    if (end == list.begin()) return std::nullopt;
    return *std::prev(end);
  }

 private:
  struct PerStream {
    std::vector<std::size_t> positions;               // start order
    std::vector<std::pair<Ns, std::size_t>> launches;  // (launch call start, position)
  };
  const DeviceView& view_;
  std::map<std::pair<std::uint32_t, std::uint32_t>, PerStream> by_stream_;
  std::vector<std::pair<Ns, std::size_t>> by_end_;
};

// The trace's event records per (pid, event id), each list in correlation order.
class EventRecords {
 public:
  explicit EventRecords(const Trace& trace) {
    for (const CudaEventRecord& record : trace.event_records) {
      by_event_[{record.pid, record.event_id}].push_back(&record);
    }
  }

  const CudaEventRecord* recordBefore(const SyncEvent& wait) const {
    auto it = by_event_.find({wait.pid, wait.event_id});
    if (it == by_event_.end()) return nullptr;
    const auto& list = it->second;
    auto end = std::partition_point(list.begin(), list.end(), [&](const CudaEventRecord* r) {
      return r->correlation_id < wait.correlation_id;
    });
    return end == list.begin() ? nullptr : *std::prev(end);
  }

 private:
  std::map<std::pair<std::uint32_t, std::uint64_t>, std::vector<const CudaEventRecord*>> by_event_;
};

std::vector<std::size_t> waitedForOps(const OpIndex& index, const EventRecords* records,
                                      const SyncEvent& wait, std::size_t released) {
  if (!records) return index.releasingOps(released);
  const CudaEventRecord* record = records->recordBefore(wait);
  if (!record) return {};
  const std::optional<std::size_t> y = index.recordedOp(*record);
  if (!y || index.sameStream(*y, released)) return {};
  return {*y};
}

// Whether `producer` commonly produces data that `consumer` reads.
bool feeds(Engine producer, Engine consumer) {
  switch (producer) {
    case Engine::kH2D:
    case Engine::kD2D:
    case Engine::kOtherCopy:
    case Engine::kMemset: return consumer == Engine::kCompute;
    case Engine::kCompute:
    case Engine::kComm: return consumer != Engine::kH2D;  // kernels do not produce host data
    case Engine::kD2H: return false;
  }
  return false;
}

}  // namespace

bool waitIsRealDependency(const DeviceView& view, const StreamWait& wait) {
  const Engine waiting = engineOf(view.op(view.ops()[wait.released]));
  return std::any_of(wait.waited_for.begin(), wait.waited_for.end(), [&](std::size_t c) {
    const Engine waited_for = engineOf(view.op(view.ops()[c]));
    return waiting == waited_for || feeds(waited_for, waiting);
  });
}

std::vector<StreamWait> streamWaits(const DeviceView& view) {
  std::vector<StreamWait> waits;
  // The op index costs ~40 bytes an op: build it only when there is a wait to resolve.
  const bool any_wait = std::any_of(view.syncs().begin(), view.syncs().end(), [&](const SyncEvent* s) {
    return s->type == SyncType::kStreamWaitEvent && s->device_id == view.deviceId();
  });
  if (!any_wait) return waits;
  const OpIndex index(view);
  std::optional<EventRecords> records;
  if (!view.trace().event_records.empty()) records.emplace(view.trace());
  for (const SyncEvent* wait : view.syncs()) {
    if (wait->type != SyncType::kStreamWaitEvent || wait->device_id != view.deviceId()) continue;
    const auto x = index.releasedOp(*wait);
    if (!x) continue;
    StreamWait resolved;
    resolved.wait = wait;
    resolved.released = *x;
    resolved.exact = records.has_value();
    resolved.ready = index.readyTime(*x);
    resolved.waited_for = waitedForOps(index, records ? &*records : nullptr, *wait, *x);
    waits.push_back(std::move(resolved));
  }
  return waits;
}

std::vector<OrderEdge> waitEdges(const std::vector<StreamWait>& waits) {
  std::vector<OrderEdge> edges;
  for (const StreamWait& wait : waits) {
    for (std::size_t y : wait.waited_for) edges.push_back({y, wait.released});
  }
  return edges;
}

}  // namespace cuoverlap::diagnosis
