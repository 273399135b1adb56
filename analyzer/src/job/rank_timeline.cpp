// The per-rank summary of a trace: one rank per process with GPU ops in scope, on the device where
// it ran most ops. Its metrics are computeDeviceMetrics over that process and device alone; its
// collectives are its communication kernels (communication.h) grouped by stream, each with what
// the rank did in the window before it (CollectiveWindow: compute, idle and HtoD time between the
// start of the previous collective of that stream and this one's start), which is what
// rank-straggler's reason compares between ranks, and its exposed pieces (no compute kernel of the
// rank beside it), which tell how much of a wait for a late peer was exposed.
//
// Cost: one pass over the trace's ops per rank, plus unions of the rank's compute, HtoD and all
// ops (16 bytes per disjoint busy interval) while the windows are measured; kept afterwards:
// O(collectives).
#include <algorithm>
#include <map>
#include <unordered_map>

#include "cuoverlap/communication.h"
#include "cuoverlap/intervals.h"
#include "cuoverlap/job.h"
#include "cuoverlap/metrics.h"
#include "cuoverlap/trace_index.h"

namespace cuoverlap {
namespace {

// A union of intervals with prefix sums: the covered length inside any window by binary search.
class CoveredTime {
 public:
  explicit CoveredTime(std::vector<Interval> intervals) : union_(unionOf(std::move(intervals))) {
    prefix_.reserve(union_.size() + 1);
    prefix_.push_back(0);
    for (const Interval& iv : union_) prefix_.push_back(prefix_.back() + iv.length());
  }

  Ns within(Ns from, Ns to) const {
    if (to <= from) return 0;
    return coveredBefore(to) - coveredBefore(from);
  }

  // The parts of [from, to) outside the union, as offsets from `from`.
  std::vector<Interval> uncoveredOffsets(Ns from, Ns to) const {
    std::vector<Interval> out;
    auto it = std::upper_bound(union_.begin(), union_.end(), from,
                               [](Ns t, const Interval& iv) { return t < iv.end; });
    Ns at = from;
    for (; it != union_.end() && it->start < to && at < to; ++it) {
      if (it->start > at) out.push_back({at - from, it->start - from});
      at = std::max(at, it->end);
    }
    if (at < to) out.push_back({at - from, to - from});
    return out;
  }

 private:
  Ns coveredBefore(Ns time) const {
    auto it = std::upper_bound(union_.begin(), union_.end(), time,
                               [](Ns t, const Interval& iv) { return t < iv.start; });
    const std::size_t full = static_cast<std::size_t>(it - union_.begin());
    if (full == 0) return 0;
    const Interval& last = union_[full - 1];
    return prefix_[full - 1] + std::min(time, last.end) - last.start;
  }

  std::vector<Interval> union_;
  std::vector<Ns> prefix_;
};

// The rank's metrics: those of `report` (the same options over the trace's only process, so the
// same ops) when it has the device and is no --range sum, else computed for the rank's scope.
DeviceMetrics metricsOf(const Trace& trace, const Scope& scope, std::uint16_t device,
                        const TraceReport* report) {
  if (report != nullptr && !report->range_summary) {
    for (const DeviceReport& d : report->devices) {
      if (d.metrics.device_id == device) return d.metrics;
    }
  }
  return computeDeviceMetrics(trace, scope, device);
}

// Each process with ops in scope (ascending pid) and the device where it ran the most of them (the
// lowest id on ties): one pass over the ops, counting per (process, device) pair (65536 devices of
// one kernel each: bench_shapes' "many devices").
std::vector<std::pair<std::uint32_t, std::uint16_t>> busiestDevicePerProcess(const Trace& trace,
                                                                             const Scope& scope) {
  struct Count {
    std::uint32_t pid;
    std::uint16_t device;
    std::uint64_t ops;
  };
  std::vector<Count> counts;
  std::unordered_map<std::uint64_t, std::size_t> position;  // (pid, device) -> index in counts
  std::size_t at = 0;  // the pair of the op before: most ops continue it
  for (const GpuOp& op : trace.ops) {
    if (!opInScope(op, scope)) continue;
    if (at >= counts.size() || counts[at].pid != op.pid || counts[at].device != op.device_id) {
      const std::uint64_t key = (static_cast<std::uint64_t>(op.pid) << 16) | op.device_id;
      at = position.try_emplace(key, counts.size()).first->second;
      if (at == counts.size()) counts.push_back({op.pid, op.device_id, 0});
    }
    ++counts[at].ops;
  }
  std::sort(counts.begin(), counts.end(), [](const Count& a, const Count& b) {
    return a.pid != b.pid ? a.pid < b.pid : a.device < b.device;
  });
  std::vector<std::pair<std::uint32_t, std::uint16_t>> busiest;
  for (std::size_t k = 0, best = 0; k < counts.size(); ++k) {
    if (k == 0 || counts[k].pid != counts[k - 1].pid) {
      best = k;
      busiest.emplace_back(counts[k].pid, counts[k].device);
    } else if (counts[k].ops > counts[best].ops) {
      best = k;
      busiest.back().second = counts[k].device;
    }
  }
  return busiest;
}

void fillCollectives(const Trace& trace, const Scope& scope, RankTimeline& rank) {
  const CommunicationKernels communication(trace);
  if (communication.noneInTrace()) return;
  const std::vector<std::uint32_t>& on_device = opsOnDevice(trace, rank.device_id);
  // Most traces run no collective: then there is nothing to measure windows for.
  const bool any = std::any_of(on_device.begin(), on_device.end(), [&](std::uint32_t i) {
    return communication.isCommunication(trace.ops[i]) && opInScope(trace.ops[i], scope);
  });
  if (!any) return;
  std::vector<Interval> compute, all, h2d;
  std::map<std::pair<std::uint32_t, std::uint32_t>, RankStream> streams;
  for (std::uint32_t i : on_device) {
    const GpuOp& op = trace.ops[i];
    if (!opInScope(op, scope)) continue;
    const Interval iv{clippedStart(op, scope), clippedEnd(op, scope)};
    all.push_back(iv);
    const Engine engine = communication.engineOf(op);
    if (engine == Engine::kCompute) compute.push_back(iv);
    if (engine == Engine::kH2D) h2d.push_back(iv);
    if (engine != Engine::kComm) continue;
    RankStream& stream = streams[{op.context_id, op.stream_id}];
    stream.context_id = op.context_id;
    stream.stream_id = op.stream_id;
    // Types are short ("ReduceScatter bf16"), so most stay in std::string's inline buffer.
    std::string type = describeCollective(trace.str(op.name)).substr(0, 40);
    stream.collectives.push_back({iv.start, iv.end, std::move(type), {}, {}});
  }
  const Ns first = all.empty() ? 0 : all.front().start;
  const CoveredTime compute_time(std::move(compute)), busy_time(std::move(all)), h2d_time(std::move(h2d));
  for (auto& [key, stream] : streams) {
    Ns from = first;
    for (RankCollective& c : stream.collectives) {
      c.before = {compute_time.within(from, c.start),
                  (c.start - from) - busy_time.within(from, c.start), h2d_time.within(from, c.start)};
      c.exposed = compute_time.uncoveredOffsets(c.start, c.end);
      from = c.start;
    }
    stream.count = stream.collectives.size();
    stream.first = stream.collectives.front();
    rank.streams.push_back(std::move(stream));
  }
  std::sort(rank.streams.begin(), rank.streams.end(), [](const RankStream& a, const RankStream& b) {
    return a.collectives.front().start < b.collectives.front().start;
  });
}

// Our traces name the recording host in their session table; nsys exports do not.
std::string sessionHost(const Trace& trace) {
  for (const auto& [key, value] : trace.session) {
    if (key == schema::session_key::kHost) return value;
  }
  return {};
}

}  // namespace

std::vector<RankTimeline> rankTimelines(const Trace& trace, const AnalysisOptions& options,
                                        std::size_t file_index, const TraceReport* report) {
  std::vector<RankTimeline> ranks;
  const auto processes = busiestDevicePerProcess(trace, options.scope);
  for (const auto& [pid, device] : processes) {
    Scope scope = options.scope;
    scope.pid = pid;
    scope.device = device;
    RankTimeline rank;
    rank.path = trace.path;
    rank.file_index = file_index;
    rank.pid = pid;
    rank.device_id = device;
    auto info = std::lower_bound(trace.processes.begin(), trace.processes.end(), pid,
                                 [](const ProcessInfo& p, std::uint32_t id) { return p.pid < id; });
    if (info != trace.processes.end() && info->pid == pid) {
      rank.rank = info->rank;
      rank.world_size = info->world_size;
      rank.host = info->host;
    }
    if (rank.host.empty()) rank.host = sessionHost(trace);
    rank.metrics = metricsOf(trace, scope, device, processes.size() == 1 ? report : nullptr);
    fillCollectives(trace, scope, rank);
    ranks.push_back(std::move(rank));
  }
  return ranks;
}

}  // namespace cuoverlap
