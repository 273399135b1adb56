#include "diagnosis/stream_waits.h"

#include <algorithm>
#include <iterator>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include "diagnosis/api_names.h"
#include "diagnosis/lane_waits.h"
#include "diagnosis/median.h"

namespace cuoverlap::diagnosis {
namespace {

constexpr Ns kReleaseSlackNs = 5'000;

// When the event of `record` was submitted: as its call returned (cudaEventRecord is
// asynchronous; a call held in the driver, behind another thread's call to the legacy stream,
// submits it as it is let go). Empty without the record's call.
std::optional<Ns> recordSubmitted(const DeviceView& view, const CudaEventRecord& record) {
  GpuOp key;
  key.pid = record.pid;
  key.correlation_id = record.correlation_id;
  const auto call = view.launchCall(key);
  if (!call) return std::nullopt;
  return view.call(*call).end;
}

// Per op of `list` (one stream's positions, in stream order): when it was submitted
// (submittedAt), at least when the op before it was (a stream's ops are submitted in its order);
// an op without a launch call, with the op before it.
std::vector<Ns> submissions(const DeviceView& view, const std::vector<std::size_t>& list) {
  std::vector<Ns> out;
  out.reserve(list.size());
  Ns last = std::numeric_limits<Ns>::min();
  for (const std::size_t p : list) {
    const ScopedOp& scoped = view.ops()[p];
    if (const auto call = view.launchCall(view.op(scoped))) last = std::max(last, submittedAt(view, *call, scoped.start));
    out.push_back(last);
  }
  return out;
}

// The op of `list` (one stream's positions in stream order, `submitted` as submissions gives)
// that the event of `record` stands for: the last one submitted before the event was. A launch
// call of another thread held in the driver has its correlation id from when it began but
// submits its op as it returns (and a record call held so, its event): in the lab's g000315 the
// main thread recorded an event on the legacy stream 8 µs after its cudaMemcpy returned, while
// a worker's cudaMemcpyAsync onto that stream, begun 390 µs earlier, was held until 36 µs after
// the record; the event stood for the main thread's copy, not the worker's (g000188: a waiting
// stream's copy started 13 µs after the copy the event stood for ended, while the op the
// correlation ids named still ran). Without the record's call, the last op whose launch call
// began before it (correlation ids).
std::optional<std::size_t> recordedIn(const DeviceView& view, const CudaEventRecord& record,
                                      const std::vector<std::size_t>& list, const std::vector<Ns>& submitted) {
  std::size_t end = 0;
  if (const auto at = recordSubmitted(view, record)) {
    end = static_cast<std::size_t>(std::partition_point(submitted.begin(), submitted.end(),
                                                        [&](Ns t) { return t < *at; }) - submitted.begin());
  } else {
    end = static_cast<std::size_t>(std::partition_point(list.begin(), list.end(), [&](std::size_t p) {
      const GpuOp& op = view.op(view.ops()[p]);
      return op.correlation_id != 0 && op.correlation_id < record.correlation_id;
    }) - list.begin());
  }
  if (end == 0) return std::nullopt;
  return list[end - 1];
}

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
    const bool pageable = op.kind == OpKind::kMemcpy && (op.src_kind == MemKind::kPageable ||
                                                         op.dst_kind == MemKind::kPageable);
    const bool blocking = isHostBlocking(view_.callKind(*launch)) || pageable;
    Ns ready = blocking && call.end > scoped.start ? call.start : call.end;
    const auto& list = by_stream_.at({op.context_id, op.stream_id}).positions;
    const auto it = std::lower_bound(list.begin(), list.end(), position);
    if (it != list.begin()) ready = std::max(ready, view_.ops()[*std::prev(it)].end);
    return ready;
  }

  bool sameStream(std::size_t a, std::size_t b) const {
    return DeviceView::streamKey(view_.op(view_.ops()[a])) ==
           DeviceView::streamKey(view_.op(view_.ops()[b]));
  }

  // The op of the record's stream that its event stands for (recordedIn).
  std::optional<std::size_t> recordedOp(const CudaEventRecord& record) const {
    auto it = by_stream_.find({record.context_id, record.stream_id});
    if (it == by_stream_.end()) return std::nullopt;
    const PerStream& stream = it->second;
    if (stream.submitted.size() != stream.positions.size()) stream.submitted = submissions(view_, stream.positions);
    return recordedIn(view_, record, stream.positions, stream.submitted);
  }

 private:
  struct PerStream {
    std::vector<std::size_t> positions;               // start order
    std::vector<std::pair<Ns, std::size_t>> launches;  // (launch call start, position)
    mutable std::vector<Ns> submitted;                 // per position: submissions, built on first use
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

namespace {

// The time from the end of the op a wait waited for to the start of the op it released, where the
// wait is what released it: that op was ready by then (StreamWait::ready) and no other op ended in
// between (an engine or SMs freed by another op may have held it instead), per engine pair.
EnginePairLags releaseSamples(const DeviceView& view, const std::vector<StreamWait>& waits) {
  const auto& ops = view.ops();
  EnginePairLags samples;
  for (const StreamWait& wait : waits) {
    if (wait.waited_for.size() != 1 || !wait.ready) continue;
    const ScopedOp y = ops[wait.waited_for.front()];
    const ScopedOp x = ops[wait.released];
    if (*wait.ready > y.end || x.start < y.end || view.opsEndingIn(y.end, x.start, true) != 0) continue;
    samples.add(view.op(y), view.op(x), x.start - y.end);
  }
  return samples;
}

// StreamWait::release_lag of every wait with a producer.
void setReleaseLags(const DeviceView& view, std::vector<StreamWait>& waits) {
  EnginePairLags samples = releaseSamples(view, waits);
  for (StreamWait& wait : waits) {
    if (wait.waited_for.empty()) continue;
    const GpuOp& from = view.op(view.ops()[wait.waited_for.back()]);
    const GpuOp& to = view.op(view.ops()[wait.released]);
    wait.release_lag = !samples.empty() ? samples.lag(from, to) : view.streamHandoff(engineOf(from), engineOf(to));
  }
}

}  // namespace

std::vector<OrderEdge> waitEdgesOnLanes(const DeviceView& view, const std::vector<StreamWait>& waits,
                                        const std::vector<std::uint64_t>& lane) {
  std::vector<OrderEdge> edges;
  if (waits.empty()) return edges;
  const auto& ops = view.ops();
  // Per lane: its ops in position order, and (launch call start, position).
  struct Lane {
    std::vector<std::size_t> positions;
    std::vector<std::pair<Ns, std::size_t>> launches;
    std::vector<Ns> submitted;  // submissions, built on first use
  };
  std::map<std::uint64_t, Lane> lanes;
  for (std::size_t p = 0; p < ops.size() && p < lane.size(); ++p) {
    const GpuOp& op = view.op(ops[p]);
    Lane& l = lanes[lane[p]];
    l.positions.push_back(p);
    if (auto call = view.launchCall(op)) l.launches.emplace_back(view.call(*call).start, p);
  }
  for (auto& [key, l] : lanes) std::sort(l.launches.begin(), l.launches.end());
  const EventRecords records(view.trace());
  EnginePairLags samples = releaseSamples(view, waits);
  for (const StreamWait& wait : waits) {
    if (!wait.exact) {
      for (std::size_t y : wait.waited_for) edges.push_back({y, wait.released, wait.release_lag});
      continue;
    }
    const CudaEventRecord* record = records.recordBefore(*wait.wait);
    const auto from_lane = record ? lanes.find(DeviceView::streamKey(record->pid, record->context_id, record->stream_id))
                                  : lanes.end();
    const auto to_lane = lanes.find(DeviceView::streamKey(wait.wait->pid, wait.wait->context_id, wait.wait->stream_id));
    if (from_lane == lanes.end() || to_lane == lanes.end() || from_lane == to_lane) continue;
    Lane& from_list = from_lane->second;
    if (from_list.submitted.size() != from_list.positions.size()) {
      from_list.submitted = submissions(view, from_list.positions);
    }
    const std::optional<std::size_t> y = recordedIn(view, *record, from_list.positions, from_list.submitted);
    const auto& launched = to_lane->second.launches;
    const auto x = std::lower_bound(launched.begin(), launched.end(),
                                    std::make_pair(wait.wait->start, std::size_t{0}));
    if (!y || x == launched.end()) continue;
    const std::size_t from = *y;
    const std::size_t to = x->second;
    const GpuOp& from_op = view.op(ops[from]);
    const GpuOp& to_op = view.op(ops[to]);
    Ns lag = wait.release_lag;
    const bool same_engines = !wait.waited_for.empty() &&
                              engineOf(view.op(ops[wait.waited_for.back()])) == engineOf(from_op) &&
                              engineOf(view.op(ops[wait.released])) == engineOf(to_op);
    if (!same_engines) {
      lag = !samples.empty() ? samples.lag(from_op, to_op)
                             : view.streamHandoff(engineOf(from_op), engineOf(to_op));
    }
    edges.push_back({from, to, lag});
  }
  return edges;
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
  setReleaseLags(view, waits);
  return waits;
}

namespace {

// K must end before C' starts: positions in view.ops().
struct ReusePair {
  std::size_t reader = 0;
  std::size_t next_copy = 0;
};

// Stream order and the kept waits as a graph over ops, searched from a reader to its next copy.
class OrderGraph {
 public:
  OrderGraph(const DeviceView& view, const std::vector<StreamWait>& waits)
      : view_(view), waits_(waits), next_(view.ops().size(), kNone), edges_(view.ops().size()),
        seen_(view.ops().size(), 0) {
    std::map<std::uint64_t, std::size_t> last;
    for (std::size_t p = 0; p < view.ops().size(); ++p) {
      auto [it, added] = last.try_emplace(DeviceView::streamKey(view.op(view.ops()[p])), p);
      if (!added) {
        next_[it->second] = p;
        it->second = p;
      }
    }
    for (std::size_t w = 0; w < waits.size(); ++w) {
      for (std::size_t y : waits[w].waited_for) edges_[y].push_back(w);
    }
  }

  // Whether `from` reaches `to` along stream order and the waits not in `dropped`, through ops
  // that started no later than `to`.
  bool reaches(std::size_t from, std::size_t to, const std::vector<bool>& dropped) {
    ++stamp_;
    const Ns limit = view_.ops()[to].start;
    std::vector<std::size_t> stack{from};
    seen_[from] = stamp_;
    while (!stack.empty()) {
      const std::size_t p = stack.back();
      stack.pop_back();
      if (p == to) return true;
      auto visit = [&](std::size_t q) {
        if (seen_[q] == stamp_ || view_.ops()[q].start > limit) return;
        seen_[q] = stamp_;
        stack.push_back(q);
      };
      if (next_[p] != kNone) visit(next_[p]);
      for (std::size_t w : edges_[p]) {
        if (!dropped[w]) visit(waits_[w].released);
      }
    }
    return false;
  }

 private:
  static constexpr std::size_t kNone = static_cast<std::size_t>(-1);
  const DeviceView& view_;
  const std::vector<StreamWait>& waits_;
  std::vector<std::size_t> next_;
  std::vector<std::vector<std::size_t>> edges_;  // per op: the waits that waited for it
  std::vector<std::uint32_t> seen_;
  std::uint32_t stamp_ = 0;
};

// A kernel that waited for an HtoD copy of another stream, and that stream's next HtoD copy.
std::vector<ReusePair> reusePairs(const DeviceView& view, const std::vector<StreamWait>& waits) {
  std::map<std::uint64_t, std::vector<std::size_t>> copies_in;  // per stream, in start order
  for (std::size_t p = 0; p < view.ops().size(); ++p) {
    const GpuOp& op = view.op(view.ops()[p]);
    if (engineOf(op) == Engine::kH2D) copies_in[DeviceView::streamKey(op)].push_back(p);
  }
  std::vector<ReusePair> pairs;
  for (const StreamWait& wait : waits) {
    if (engineOf(view.op(view.ops()[wait.released])) != Engine::kCompute) continue;
    for (std::size_t y : wait.waited_for) {
      const GpuOp& copy = view.op(view.ops()[y]);
      if (engineOf(copy) != Engine::kH2D) continue;
      const auto& list = copies_in[DeviceView::streamKey(copy)];
      const auto next = std::upper_bound(list.begin(), list.end(), y);
      if (next != list.end()) pairs.push_back({wait.released, *next});
    }
  }
  std::sort(pairs.begin(), pairs.end(), [&](const ReusePair& a, const ReusePair& b) {
    return view.ops()[a.reader].start < view.ops()[b.reader].start;
  });
  return pairs;
}

}  // namespace

std::vector<bool> guardsBufferReuse(const DeviceView& view, const std::vector<StreamWait>& waits,
                                    const std::vector<bool>& droppable) {
  std::vector<bool> guards(waits.size(), false);
  const std::vector<ReusePair> pairs = reusePairs(view, waits);
  if (pairs.empty()) return guards;
  // Only a wait whose X started between a pair's reader and next copy can be on its path: the
  // pairs by reader start, searched back from X's start over the longest pair.
  const auto& ops = view.ops();
  Ns longest = 0;
  for (const ReusePair& pair : pairs) {
    longest = std::max(longest, ops[pair.next_copy].start - ops[pair.reader].start);
  }
  OrderGraph graph(view, waits);
  const std::vector<bool> none(waits.size(), false);
  std::vector<bool> dropped(waits.size(), false);
  for (std::size_t w = 0; w < waits.size(); ++w) {
    if (!droppable[w]) continue;
    dropped[w] = true;
    const Ns x_start = ops[waits[w].released].start;
    auto it = std::upper_bound(pairs.begin(), pairs.end(), x_start,
                               [&](Ns t, const ReusePair& p) { return t < ops[p.reader].start; });
    while (it != pairs.begin()) {
      const ReusePair& pair = *--it;
      if (ops[pair.reader].start < x_start - longest) break;
      if (ops[pair.next_copy].start < x_start) continue;
      if (graph.reaches(pair.reader, pair.next_copy, none) &&
          !graph.reaches(pair.reader, pair.next_copy, dropped)) {
        guards[w] = true;
        dropped[w] = false;
        break;
      }
    }
  }
  // The waits of one event on one stream are one call site run again (a loop's body): the fix
  // edits the code, so a call site that guards a reuse once stays in every iteration.
  std::set<std::tuple<std::uint32_t, std::uint64_t, std::uint32_t, std::uint32_t>> sites;
  auto site = [&](const StreamWait& wait) {
    return std::make_tuple(wait.wait->pid, wait.wait->event_id, wait.wait->context_id,
                           wait.wait->stream_id);
  };
  for (std::size_t w = 0; w < waits.size(); ++w) {
    if (guards[w]) sites.insert(site(waits[w]));
  }
  for (std::size_t w = 0; w < waits.size(); ++w) {
    if (droppable[w] && sites.count(site(waits[w])) > 0) guards[w] = true;
  }
  return guards;
}

std::vector<OrderEdge> waitEdges(const std::vector<StreamWait>& waits) {
  std::vector<OrderEdge> edges;
  for (const StreamWait& wait : waits) {
    for (std::size_t y : wait.waited_for) edges.push_back({y, wait.released, wait.release_lag});
  }
  return edges;
}

CallSite callSite(const StreamWait& wait) {
  return CallSite{wait.wait->pid, wait.wait->event_id, wait.wait->context_id, wait.wait->stream_id};
}

std::vector<bool> roundsOfHeldSites(const std::vector<StreamWait>& waits,
                                    const std::vector<bool>& eligible,
                                    const std::vector<bool>& held) {
  std::set<CallSite> held_sites;
  for (std::size_t w = 0; w < waits.size(); ++w) {
    if (eligible[w] && held[w]) held_sites.insert(callSite(waits[w]));
  }
  std::vector<bool> counts(waits.size(), false);
  for (std::size_t w = 0; w < waits.size(); ++w) {
    counts[w] = eligible[w] && (held[w] || held_sites.count(callSite(waits[w])) > 0);
  }
  return counts;
}

}  // namespace cuoverlap::diagnosis
