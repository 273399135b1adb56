#include "html_timeline_data.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "cuoverlap/communication.h"
#include "cuoverlap/gpu_metrics.h"
#include "cuoverlap/memory_usage.h"
#include "cuoverlap/names.h"
#include "cuoverlap/units.h"
#include "render_common.h"

namespace cuoverlap::html {

namespace {

// What the label column shows (13rem at 11.5px) without cutting.
constexpr std::size_t kThreadLabelChars = 30;

constexpr std::string_view kDigits = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz-_";

bool inWindow(Ns start, Ns end, Ns window_start, Ns window_end) {
  return end >= window_start && start <= window_end;
}

bool pidInScope(const Scope& scope, std::uint32_t pid) { return !scope.pid || *scope.pid == pid; }

// Appends items of one lane in start order as deltas from the previous item.
class LaneWriter {
 public:
  LaneWriter(TimelineLane& lane, Ns origin) : lane_(lane), previous_start_(origin) {}
  void interval(Ns start, Ns end) {
    lane_.data.addSigned(start - previous_start_);
    lane_.data.add(static_cast<std::uint64_t>(std::max<Ns>(0, end - start)));
    previous_start_ = start;
    ++lane_.items;
  }
  void correlation(std::uint32_t id) {
    lane_.data.addSigned(static_cast<std::int64_t>(id) - previous_correlation_);
    previous_correlation_ = id;
  }

 private:
  TimelineLane& lane_;
  Ns previous_start_;
  std::int64_t previous_correlation_ = 0;
};

struct HostThread {
  std::vector<TimelineLane> nvtx;  // by depth
  TimelineLane api;
  std::vector<LaneWriter> nvtx_writers;
  std::unique_ptr<LaneWriter> api_writer;
};

// "rank 0 · pid 4242 · tid 4243" (the rank when the trace knows it), in the label column's
// kThreadLabelChars: a long thread id (Kineto's, pthread ids) keeps its last digits there; the
// lane's title has it whole.
void labelThread(TimelineLane& header, const Trace& trace, std::uint32_t pid, std::uint32_t tid) {
  std::string label;
  const auto process = std::lower_bound(
      trace.processes.begin(), trace.processes.end(), pid,
      [](const ProcessInfo& info, std::uint32_t value) { return info.pid < value; });
  if (process != trace.processes.end() && process->pid == pid && process->rank) {
    label = fmt::format("rank {} · ", *process->rank);
  }
  label += fmt::format("pid {} · tid ", pid);
  const std::string thread = std::to_string(tid);
  header.title = label + thread;
  std::size_t shown = 0;  // characters, not bytes ("·" is two)
  for (char c : label) shown += (static_cast<unsigned char>(c) & 0xC0) != 0x80 ? 1 : 0;
  if (shown + thread.size() <= kThreadLabelChars) {
    header.label = header.title;
  } else {
    const std::size_t room = kThreadLabelChars > shown + 2 ? kThreadLabelChars - shown - 1 : 1;
    header.label = label + "…" + thread.substr(thread.size() - std::min(room, thread.size()));
  }
}

// "idle 40.0 µs (sync-wait) after kernel k (stream 13); before memset 1.0 KiB (stream 7); call
// cudaStreamSynchronize (correlation 103)": the parts the gap has, none empty.
std::string gapTitle(const Trace& trace, const IdleGap& gap) {
  std::string title = fmt::format("idle {} ({})", units::formatDuration(gap.duration()), gapCauseName(gap.cause));
  const std::pair<const char*, std::string> parts[] = {{"after ", render::describeOp(&trace, gap.prev_op)},
                                                       {"before ", render::describeOp(&trace, gap.next_op)},
                                                       {"call ", render::describeCall(&trace, gap.call)}};
  const char* separator = " ";
  for (const auto& [what, text] : parts) {
    if (text.empty()) continue;
    title += separator;
    title += what + text;
    separator = "; ";
  }
  return title;
}

// NVTX levels and CUDA API calls of every host thread in scope, one header per thread.
void collectHost(const TraceReport& report, Ns start, Ns end, const HtmlOptions& options, TimelineData& data) {
  const Trace& trace = *report.trace;
  const std::size_t depths = static_cast<std::size_t>(std::max(options.max_nvtx_depth, 0));
  std::map<std::pair<std::uint32_t, std::uint32_t>, HostThread> threads;
  const auto threadOf = [&](std::uint32_t pid, std::uint32_t tid) -> HostThread& {
    HostThread& thread = threads[{pid, tid}];
    if (!thread.api_writer) {
      thread.nvtx.resize(depths);
      for (TimelineLane& lane : thread.nvtx) thread.nvtx_writers.emplace_back(lane, start);
      thread.api_writer = std::make_unique<LaneWriter>(thread.api, start);
    }
    return thread;
  };
  for (const NvtxRange& range : trace.nvtx) {
    if (range.event_type == static_cast<std::int32_t>(schema::NvtxEventType::kDomainCreate)) continue;
    if (!inWindow(range.start, range.end, start, end) || !pidInScope(report.scope, range.pid)) continue;
    const std::size_t depth = static_cast<std::size_t>(std::max(range.depth, 0));
    if (depth >= depths) continue;
    HostThread& thread = threadOf(range.pid, range.tid);
    thread.nvtx_writers[depth].interval(range.start, range.end);
    thread.nvtx[depth].data.add(data.names.ofString(range.text));
    ++data.ranges;
  }
  std::unordered_map<StringId, std::uint32_t> api_names;  // without the _vNNNN suffix
  for (const RuntimeCall& call : trace.runtime_calls) {
    if (!inWindow(call.start, call.end, start, end) || !pidInScope(report.scope, call.pid)) continue;
    HostThread& thread = threadOf(call.pid, call.tid);
    thread.api_writer->interval(call.start, call.end);
    auto name = api_names.find(call.name);
    if (name == api_names.end()) {
      name = api_names.emplace(call.name, data.names.ofText(std::string(render::apiName(trace.str(call.name))))).first;
    }
    thread.api.data.add(name->second);
    thread.api_writer->correlation(call.correlation_id);
    ++data.calls;
  }
  for (auto& [key, thread] : threads) {
    TimelineLane header;
    labelThread(header, trace, key.first, key.second);
    header.pid = key.first;
    data.lanes.push_back(std::move(header));
    for (std::size_t depth = 0; depth < thread.nvtx.size(); ++depth) {
      if (thread.nvtx[depth].items == 0) break;
      thread.nvtx[depth].kind = LaneKind::kNvtx;
      thread.nvtx[depth].label = depth == 0 ? "NVTX" : fmt::format("NVTX level {}", depth + 1);
      thread.nvtx[depth].pid = key.first;
      data.lanes.push_back(std::move(thread.nvtx[depth]));
    }
    if (thread.api.items == 0) continue;
    thread.api.kind = LaneKind::kApi;
    thread.api.label = "CUDA API";
    thread.api.pid = key.first;
    data.lanes.push_back(std::move(thread.api));
  }
}

// The label of an op: what its tooltip and bar say, without its times.
using OpLabel = std::tuple<std::uint32_t, int, int, std::uint64_t, std::uint32_t, std::uint32_t>;

class LabelTable {
 public:
  LabelTable(TimelineData& data, const CommunicationKernels& communication)
      : data_(data), communication_(communication) {}
  std::uint32_t of(const GpuOp& op) {
    const std::uint32_t name = nameOf(op);
    const bool kernel = op.kind == OpKind::kKernel;
    const OpLabel key{name, static_cast<int>(communication_.engineOf(op)), static_cast<int>(op.kind), op.bytes,
                      kernel ? op.grid_blocks : 0, kernel ? op.block_threads : 0};
    const auto [it, added] = index_.try_emplace(key, static_cast<std::uint32_t>(index_.size()));
    if (added) {
      data_.labels.add(name);
      data_.labels.add(static_cast<std::uint64_t>(std::get<1>(key)));
      data_.labels.add(static_cast<std::uint64_t>(std::get<2>(key)));
      data_.labels.add(std::get<3>(key));
      data_.labels.add(std::get<4>(key));
      data_.labels.add(std::get<5>(key));
    }
    return it->second;
  }

  // Communication kernels (NCCL) count as their own engine, as in the metrics.
  Engine engineOf(const GpuOp& op) const { return communication_.engineOf(op); }

 private:
  std::uint32_t nameOf(const GpuOp& op) {
    if (op.kind == OpKind::kKernel) return data_.names.ofString(op.name);
    if (op.kind == OpKind::kMemset) return data_.names.ofText("memset");
    const MemKind memory = op.copy_kind == CopyKind::kDtoH ? op.dst_kind : op.src_kind;
    return data_.names.ofText(fmt::format("memcpy {} {}", copyKindName(op.copy_kind), memKindName(memory)));
  }
  TimelineData& data_;
  const CommunicationKernels& communication_;
  std::map<OpLabel, std::uint32_t> index_;
};

// The union of one engine's ops, emitted as its intervals close (ops come in start order).
struct EngineUnion {
  TimelineLane lane;
  std::unique_ptr<LaneWriter> writer;
  Ns start = 0;
  Ns end = 0;
  bool open = false;
  void add(Ns op_start, Ns op_end) {
    if (open && op_start <= end) {
      end = std::max(end, op_end);
      return;
    }
    close();
    start = op_start;
    end = op_end;
    open = true;
  }
  void close() {
    if (open) writer->interval(start, end);
    open = false;
  }
};

std::string deviceLabel(const DeviceReport& device) {
  if (device.metrics.name.empty()) return fmt::format("device {}", device.metrics.device_id);
  return fmt::format("device {}: {}", device.metrics.device_id, device.metrics.name);
}

void packGaps(const Trace& trace, const DeviceReport& device, Ns origin, TimelineData& data, TimelineLane& header) {
  for (const IdleGap& gap : device.gaps.largest) {
    header.gaps.addSigned(gap.start - origin);
    header.gaps.add(static_cast<std::uint64_t>(std::max<Ns>(0, gap.duration())));
    header.gaps.add(data.names.ofText(std::string(gapCauseName(gap.cause))));
    header.gaps.add(data.names.ofText(gapTitle(trace, gap)));
  }
}

// Two lanes under a device's engines when it has unified-memory activity in the window: the GPU
// page-fault groups (the driver servicing faults) and the migrations, each as the union of its
// records (engine -1: no engine's colour or legend).
void collectUnifiedMemory(const TraceReport& report, std::uint16_t device_id, Ns start, Ns end,
                          TimelineData& data) {
  const UnifiedMemory& um = report.trace->unified_memory;
  EngineUnion faults, migrations;
  faults.writer = std::make_unique<LaneWriter>(faults.lane, start);
  migrations.writer = std::make_unique<LaneWriter>(migrations.lane, start);
  for (const UmPageFaultGroup& f : um.gpu_faults) {
    if (f.device_id == device_id && pidInScope(report.scope, f.pid) &&
        inWindow(f.start, f.end, start, end)) {
      faults.add(f.start, f.end);
    }
  }
  for (const UmMigration& m : um.migrations) {
    if (m.device_id == device_id && pidInScope(report.scope, m.pid) &&
        inWindow(m.start, m.end, start, end)) {
      migrations.add(m.start, m.end);
    }
  }
  for (auto* lane : {&faults, &migrations}) {
    lane->close();
    if (lane->lane.items == 0) continue;
    lane->lane.kind = LaneKind::kEngine;
    lane->lane.label =
        lane == &faults ? "unified memory: GPU page faults" : "unified memory: migrations";
    data.lanes.push_back(std::move(lane->lane));
  }
}

// One lane per GPU metric of the device with samples in the window (GPU_METRICS: docs/metrics.md,
// "GPU metrics"): each sample a bar whose height is its value against the lane's largest, bytes as
// GB/s over the sample's span.
void collectGpuMetrics(const TraceReport& report, std::uint16_t device_id, Ns start, Ns end, TimelineData& data) {
  const GpuMetrics& gm = report.trace->gpu_metrics;
  for (const GpuMetricSeries& s : gm.series) {
    if (s.device_id != device_id || s.times.empty()) continue;
    const bool bytes = isByteMetric(s.name);
    const auto spanOf = [&](std::size_t i) { return sampleSpan(s, i, gm.interval); };
    const auto valueOf = [&](std::size_t i) {
      const Ns span = spanOf(i);
      return bytes ? (span > 0 ? s.values[i] / static_cast<double>(span) : 0.0) : s.values[i];
    };
    const std::size_t first = static_cast<std::size_t>(
        std::lower_bound(s.times.begin(), s.times.end(), start) - s.times.begin());
    std::size_t i0 = first > 0 && s.times[first - 1] + spanOf(first - 1) > start ? first - 1 : first;
    double largest = 0;
    for (std::size_t i = i0; i < s.times.size() && s.times[i] < end; ++i) largest = std::max(largest, valueOf(i));
    if (largest <= 0) continue;
    TimelineLane lane;
    lane.kind = LaneKind::kCounter;
    const std::size_t open = s.name.rfind(" [");
    lane.label = "GPU metric: " + (open == std::string::npos ? s.name : s.name.substr(0, open));
    lane.counter_unit = bytes ? "GB/s" : open == std::string::npos ? "" : s.name.substr(open + 2, s.name.size() - open - 3);
    lane.counter_max = largest;
    LaneWriter writer(lane, start);
    for (std::size_t i = i0; i < s.times.size() && s.times[i] < end; ++i) {
      writer.interval(s.times[i], s.times[i] + spanOf(i));
      lane.data.add(static_cast<std::uint64_t>(std::lround(std::max(0.0, valueOf(i)) / largest * 1000.0)));
    }
    data.lanes.push_back(std::move(lane));
  }
}

// The device memory allocated (Trace::memory_events), a lane of the device when its allocations or
// frees are recorded: each step a bar from its allocation or free to the next, its height the MiB
// allocated then against the window's most.
void collectMemoryInUse(const TraceReport& report, std::uint16_t device_id, Ns start, Ns end, TimelineData& data) {
  const std::vector<MemoryInUse> steps = deviceMemoryInUse(*report.trace, device_id);
  const auto first = std::upper_bound(steps.begin(), steps.end(), start,
                                      [](Ns t, const MemoryInUse& s) { return t < s.time; });
  // The step in force at the window's start, then those inside it.
  const auto from = first == steps.begin() ? first : std::prev(first);
  std::uint64_t largest = 0;
  for (auto it = from; it != steps.end() && it->time < end; ++it) largest = std::max(largest, it->bytes);
  if (largest == 0) return;
  TimelineLane lane;
  lane.kind = LaneKind::kCounter;
  lane.label = "device memory allocated";
  lane.counter_unit = "MiB";
  lane.counter_max = static_cast<double>(largest) / (1 << 20);
  LaneWriter writer(lane, start);
  for (auto it = from; it != steps.end() && it->time < end; ++it) {
    const Ns until = std::next(it) != steps.end() ? std::min(std::next(it)->time, end) : end;
    writer.interval(std::max(it->time, start), until);
    lane.data.add(static_cast<std::uint64_t>(std::llround(static_cast<double>(it->bytes) / largest * 1000.0)));
  }
  data.lanes.push_back(std::move(lane));
}

void collectDevice(const TraceReport& report, const DeviceReport& device, Ns start, Ns end,
                   LabelTable& labels, TimelineData& data) {
  const Trace& trace = *report.trace;
  const std::uint16_t device_id = device.metrics.device_id;
  using StreamKey = std::tuple<std::uint32_t, std::uint32_t, std::uint32_t>;  // pid, context, stream
  std::map<StreamKey, std::pair<TimelineLane, std::unique_ptr<LaneWriter>>> streams;
  std::vector<EngineUnion> engines(engineNames().size());
  for (std::size_t e = 0; e < engines.size(); ++e) {
    engines[e].writer = std::make_unique<LaneWriter>(engines[e].lane, start);
  }
  for (const GpuOp& op : trace.ops) {
    if (op.device_id != device_id || !inWindow(op.start, op.end, start, end)) continue;
    if (!pidInScope(report.scope, op.pid)) continue;
    auto& [lane, writer] = streams[{op.pid, op.context_id, op.stream_id}];
    if (!writer) {
      lane.kind = LaneKind::kStream;
      lane.pid = op.pid;
      lane.label = render::streamLabel(trace, op.pid, op.context_id, op.stream_id);
      writer = std::make_unique<LaneWriter>(lane, start);
    }
    writer->interval(op.start, op.end);
    lane.data.add(labels.of(op));
    writer->correlation(op.correlation_id);
    // Any engine engineNames() knows gets a lane; a value beyond it only colours the stream lane.
    const auto engine = static_cast<std::size_t>(labels.engineOf(op));
    if (engine < engines.size()) engines[engine].add(op.start, op.end);
    ++data.ops;
  }
  TimelineLane header;
  header.label = deviceLabel(device);
  packGaps(trace, device, start, data, header);
  data.lanes.push_back(std::move(header));
  for (std::size_t e = 0; e < engines.size(); ++e) {
    engines[e].close();
    if (engines[e].lane.items == 0) continue;
    engines[e].lane.kind = LaneKind::kEngine;
    engines[e].lane.engine = static_cast<int>(e);
    engines[e].lane.label = fmt::format("{} engine", engineName(static_cast<Engine>(e)));
    data.lanes.push_back(std::move(engines[e].lane));
  }
  collectUnifiedMemory(report, device_id, start, end, data);
  collectGpuMetrics(report, device_id, start, end, data);
  collectMemoryInUse(report, device_id, start, end, data);
  for (auto& entry : streams) data.lanes.push_back(std::move(entry.second.first));
}

}  // namespace

std::vector<std::string_view> engineNames() {
  std::vector<std::string_view> names;
  for (int engine = 0; engine < 64; ++engine) {
    const std::string_view name = engineName(static_cast<Engine>(engine));
    if (name == "unknown") break;
    names.push_back(name);
  }
  return names;
}

void NumberPacker::add(std::uint64_t value) {
  while (value >= 32) {
    text_ += kDigits[32 + (value & 31)];
    value >>= 5;
  }
  text_ += kDigits[value];
}

std::uint32_t NameTable::intern(std::string_view text) {
  const auto [it, added] = index_.try_emplace(text, static_cast<std::uint32_t>(names_.size()));
  if (added) names_.push_back(text);
  return it->second;
}

std::uint32_t NameTable::ofString(StringId id) {
  if (id >= by_id_.size()) return 0;
  if (by_id_[id] == kUnset) by_id_[id] = intern(trace_.str(id));
  return by_id_[id];
}

std::uint32_t NameTable::ofText(std::string text) {
  const auto found = index_.find(text);
  if (found != index_.end()) return found->second;
  owned_.push_back(std::move(text));
  return intern(owned_.back());
}

TimelineData collectTimeline(const TraceReport& report, Ns start, Ns end, const HtmlOptions& options) {
  TimelineData data(*report.trace);
  collectHost(report, start, end, options, data);
  const CommunicationKernels communication(*report.trace);
  LabelTable labels(data, communication);
  for (const DeviceReport& device : report.devices) collectDevice(report, device, start, end, labels, data);
  return data;
}

}  // namespace cuoverlap::html
