// event-wait-serialization: a cudaStreamWaitEvent that held back an op which could have run
// concurrently with the op it waited for. For each stream-wait-event record (synchronization
// data) on stream S, X is the first op of S launched after the wait was issued. The wait was
// binding when X was ready (launch returned, previous op of S done) at least 10 µs before it
// started. Y, the op the wait waited for, is exact when the trace records CUDA events (our
// collector's CUPTI_ACTIVITY_KIND_CUDA_EVENT): R is the latest cudaEventRecord of the wait's
// event (same process) whose correlation id is below the wait's, and Y is the last op of R's
// stream (same context) whose launch call's correlation id is below R's; without such R or Y the
// wait has no producer and is skipped. Traces without event records (nsys exports) fall back to
// timestamps: an op Y of another stream ended at most 5 µs before X started (the event's
// release); when several ended within those 5 µs, the wait counts only when none of them could
// explain it. It serialized when X and Y use different engines and Y does not feed X in the usual
// data flow (copy-in -> kernel -> kernel -> copy-out): a kernel waiting for its input copy is a
// real dependency; a copy-in waiting for a kernel, or a copy waiting for a copy of another
// direction, is not (a trace cannot tell a buffer-reuse hazard from an unnecessary wait; more
// buffers remove the hazard too).
// Cost: the union over such waits of [X ready, X start): waits of several streams that held their
// ops back at the same time count once.
// Needs: synchronization records with stream ids, launch calls; CUDA event records for the exact Y.
#include <algorithm>
#include <iterator>
#include <map>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include "diagnosis/finding_builder.h"
#include "diagnosis/rules/rules.h"

namespace cuoverlap::diagnosis {
namespace {

constexpr Ns kReleaseSlackNs = 5'000;

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

// Ops of the view indexed per stream (by start) and by end time, built once per rule run.
class OpIndex {
 public:
  explicit OpIndex(const DeviceView& view) : view_(view) {
    for (std::size_t pos = 0; pos < view.ops().size(); ++pos) {
      const GpuOp& op = view.op(view.ops()[pos]);
      by_stream_[{op.context_id, op.stream_id}].push_back(pos);
      by_end_.emplace_back(view.ops()[pos].end, pos);
    }
    std::sort(by_end_.begin(), by_end_.end());
  }

  // Position of the first op on the wait's stream launched at or after the wait call.
  std::optional<std::size_t> releasedOp(const SyncEvent& wait) const {
    auto it = by_stream_.find({wait.context_id, wait.stream_id});
    if (it == by_stream_.end()) return std::nullopt;
    const auto& list = it->second;
    auto first = std::lower_bound(list.begin(), list.end(), wait.start, [&](std::size_t p, Ns t) {
      return view_.ops()[p].start < t;
    });
    for (; first != list.end(); ++first) {
      const auto call = view_.launchCall(view_.op(view_.ops()[*first]));
      if (call && view_.call(*call).start >= wait.start) return *first;
    }
    return std::nullopt;
  }

  // Positions of the ops of other streams that ended in [start - slack, start], by end time:
  // the candidates for the op whose event released the wait.
  std::vector<std::size_t> releasingOps(std::size_t released) const {
    const ScopedOp& x = view_.ops()[released];
    const std::uint64_t stream = DeviceView::streamKey(view_.op(x));
    auto it = std::lower_bound(by_end_.begin(), by_end_.end(),
                               std::make_pair(x.start - kReleaseSlackNs, std::size_t{0}));
    std::vector<std::size_t> candidates;
    for (; it != by_end_.end() && it->first <= x.start; ++it) {
      if (DeviceView::streamKey(view_.op(view_.ops()[it->second])) != stream) {
        candidates.push_back(it->second);
      }
    }
    return candidates;
  }

  bool sameStream(std::size_t a, std::size_t b) const {
    return DeviceView::streamKey(view_.op(view_.ops()[a])) ==
           DeviceView::streamKey(view_.op(view_.ops()[b]));
  }

  // Position of the last op on the record's stream launched before the record call: the op the
  // event captured. Ops of one stream run in launch order, and correlation ids grow with launch
  // order, so the stream's list is partitioned by "correlation id below the record's".
  std::optional<std::size_t> recordedOp(const CudaEventRecord& record) const {
    auto it = by_stream_.find({record.context_id, record.stream_id});
    if (it == by_stream_.end()) return std::nullopt;
    const auto& list = it->second;
    auto end = std::partition_point(list.begin(), list.end(), [&](std::size_t p) {
      const GpuOp& op = view_.op(view_.ops()[p]);
      return op.correlation_id != 0 && op.correlation_id < record.correlation_id;
    });
    if (end == list.begin()) return std::nullopt;
    return *std::prev(end);
  }

 private:
  const DeviceView& view_;
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::vector<std::size_t>> by_stream_;
  std::vector<std::pair<Ns, std::size_t>> by_end_;
};

// The event records of the trace per (pid, event id), each list in correlation order.
class EventRecords {
 public:
  explicit EventRecords(const Trace& trace) {
    for (const CudaEventRecord& record : trace.event_records) {
      by_event_[{record.pid, record.event_id}].push_back(&record);
    }
  }

  // The latest record of the wait's event issued before the wait, if any.
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

// Positions of the ops the wait may have waited for: the recorded op when the trace has event
// records (none when the record or its op is unknown), else the ops that ended just before X.
std::vector<std::size_t> waitedForOps(const OpIndex& index, const EventRecords* records,
                                      const SyncEvent& wait, std::size_t released) {
  if (!records) return index.releasingOps(released);
  const CudaEventRecord* record = records->recordBefore(wait);
  if (!record) return {};
  const std::optional<std::size_t> y = index.recordedOp(*record);
  // An event recorded on the waiting stream itself orders nothing that stream order did not.
  if (!y || index.sameStream(*y, released)) return {};
  return {*y};
}

}  // namespace

std::optional<Finding> findEventWaitSerialization(const DeviceView& view) {
  // The op index costs 24 bytes an op: build it only when there is a wait to explain.
  const bool any_wait = std::any_of(view.syncs().begin(), view.syncs().end(), [&](const SyncEvent* s) {
    return s->type == SyncType::kStreamWaitEvent && s->device_id == view.deviceId();
  });
  if (!any_wait) return std::nullopt;
  FindingBuilder builder(view, "event-wait-serialization", Severity::kWarning);
  const OpIndex index(view);
  std::optional<EventRecords> records;
  if (!view.trace().event_records.empty()) records.emplace(view.trace());
  for (const SyncEvent* wait : view.syncs()) {
    if (wait->type != SyncType::kStreamWaitEvent || wait->device_id != view.deviceId()) continue;
    const auto x = index.releasedOp(*wait);
    if (!x) continue;
    const auto ready = view.readyTime(*x);
    const ScopedOp& released = view.ops()[*x];
    if (!ready || released.start - *ready < kMinimumCostNs) continue;
    // When several ops ended together, any of them may have recorded the event: the wait is
    // explained by a real dependency when one of them plausibly feeds the waiting op.
    const std::vector<std::size_t> candidates =
        waitedForOps(index, records ? &*records : nullptr, *wait, *x);
    const Engine waiting = engineOf(view.op(released));
    const bool explained = std::any_of(candidates.begin(), candidates.end(), [&](std::size_t c) {
      const Engine waited_for = engineOf(view.op(view.ops()[c]));
      return waiting == waited_for || feeds(waited_for, waiting);
    });
    if (candidates.empty() || explained) continue;
    const std::optional<std::size_t> y = candidates.back();
    builder.add(Interval{*ready, released.start},
                evidenceForOp(view, view.op(released),
                              fmt::format("{} waited for {} on stream {}",
                                          describeOp(view, view.op(released)),
                                          describeOp(view, view.op(view.ops()[*y])),
                                          view.op(view.ops()[*y]).stream_id)));
  }
  return builder.build(
      fmt::format("{} cudaStreamWaitEvent dependencies serialized work that could have overlapped",
                  builder.count()),
      "Wait only on the events the stream's work really depends on (record one event per "
      "produced buffer, after the op that produces it), so unrelated copies and kernels overlap");
}

}  // namespace cuoverlap::diagnosis
