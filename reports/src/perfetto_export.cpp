#include "cuoverlap/perfetto_export.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <iterator>
#include <limits>
#include <functional>
#include <map>
#include <ostream>
#include <queue>
#include <set>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "cuoverlap/names.h"
#include "perfetto_diagnosis.h"
#include "render_common.h"
#include "trace_event_common.h"

namespace cuoverlap {
namespace {

using perfetto::kDevicePidBase;
using trace_event::fixedMicros;
using trace_event::jsonString;
using trace_event::kProgressItems;

// Synthetic host tracks: real tids are 24-bit (globalTid encoding), these lie above.
constexpr std::uint64_t kNvtxTrackBase = 1ull << 24;
constexpr std::uint64_t kNvtxStartEndBase = 2ull << 24;
// Process labels (commands) longer than this are cut.
constexpr std::size_t kLabelBytes = 200;

// A name as an event shows it: JSON text, and where it was shortened the index of the full
// name in otherData.names (else -1).
struct NameRef {
  std::string json;
  std::int64_t index = -1;
};

// Puts intervals (in start order) on the first track whose previous interval has ended.
// First fit: the lowest track whose last item has ended by `start`, else a new track. Items come
// in start order (the model's), so a track once free stays free until it is given out again:
// tracks move from a heap ordered by end (busy) to a heap ordered by index (free), O(log n) per
// item. Out-of-order input (only from hand-built traces) takes the linear scan, same answer.
class TrackAllocator {
 public:
  std::size_t place(Ns start, Ns end) {
    if (start < last_start_) return placeByScan(start, end);
    last_start_ = start;
    while (!busy_.empty() && busy_.top().first <= start) {
      free_.push(busy_.top().second);
      busy_.pop();
    }
    std::size_t track = ends_.size();
    if (free_.empty()) {
      ends_.push_back(end);
    } else {
      track = free_.top();
      free_.pop();
      ends_[track] = end;
    }
    busy_.push({end, track});
    return track;
  }

 private:
  std::size_t placeByScan(Ns start, Ns end) {
    std::size_t track = ends_.size();
    for (std::size_t i = 0; i < ends_.size(); ++i) {
      if (ends_[i] <= start) {
        track = i;
        break;
      }
    }
    if (track == ends_.size()) ends_.push_back(end);
    ends_[track] = end;
    // Rebuild the heaps from the ends, for the in-order items that follow.
    busy_ = {};
    free_ = {};
    for (std::size_t i = 0; i < ends_.size(); ++i) busy_.push({ends_[i], i});
    last_start_ = std::numeric_limits<Ns>::min();
    return track;
  }

  using EndAndTrack = std::pair<Ns, std::size_t>;
  std::vector<Ns> ends_;  // per track, the end of its last item
  std::priority_queue<EndAndTrack, std::vector<EndAndTrack>, std::greater<EndAndTrack>> busy_;
  std::priority_queue<std::size_t, std::vector<std::size_t>, std::greater<std::size_t>> free_;
  Ns last_start_ = std::numeric_limits<Ns>::min();
};

class PerfettoWriter {
 public:
  PerfettoWriter(const Trace& trace, std::ostream& out, const PerfettoExportOptions& options)
      : trace_(trace),
        options_(options),
        stream_(out, ",\n"),
        report_(analyzeTrace(trace, options.analysis)),
        selection_(trace, options.analysis.scope, report_) {
    names_.resize(trace.strings.size());
    origin_ = trace_event::traceOrigin(trace);
  }

  PerfettoExportStats write() {
    progress::phase("writing the Perfetto trace", trace_.ops.size() + trace_.runtime_calls.size());
    stream_.raw("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n");
    writeDeviceOps();
    writeDiagnosis();
    writeRuntimeCalls();
    writeNvtx();
    writeHostMetadata();
    stream_.raw(fmt::format("\n],\"otherData\":{{\"time_origin_ns\":{},\"source\":{},\"names\":[",
                            origin_, jsonString(trace_.path)));
    for (std::size_t i = 0; i < long_names_.size(); ++i) {
      stream_.raw(i == 0 ? "\n" : ",\n");
      stream_.raw(jsonString(trace_.str(long_names_[i])));
    }
    stream_.raw("]}}\n");
    stream_.flush();
    progress::done(trace_.ops.size() + trace_.runtime_calls.size());
    stats_.long_names = long_names_.size();
    return stats_;
  }

 private:
  // A timestamp relative to the origin, in microseconds.
  std::string micros(Ns ns) const { return fixedMicros(ns - origin_); }

  // Names are shortened for display once per string; the full text of a shortened one goes to
  // otherData.names once.
  const NameRef& name(StringId id) {
    if (id >= names_.size()) id = kNoString;
    NameRef& ref = names_[id];
    if (ref.json.empty()) {
      const std::string_view text = trace_.str(id);
      const std::string shown = trace_event::displayName(text);
      ref.json = jsonString(shown);
      if (shown.size() != text.size()) {
        ref.index = static_cast<std::int64_t>(long_names_.size());
        long_names_.push_back(id);
      }
    }
    return ref;
  }

  static std::string nameIndexArg(const NameRef& ref) {
    return ref.index < 0 ? std::string() : fmt::format(",\"name_index\":{}", ref.index);
  }

  void emit(const std::string& event) { stream_.event(event); }

  void emitMetadata(std::uint64_t pid, std::optional<std::uint64_t> tid, std::string_view kind,
                    const std::string& label, std::int64_t sort_index) {
    const std::string tid_field = tid ? fmt::format(",\"tid\":{}", *tid) : std::string();
    emit(fmt::format("{{\"ph\":\"M\",\"name\":\"{}_name\",\"pid\":{}{},\"args\":{{\"name\":{}}}}}",
                     kind, pid, tid_field, jsonString(label)));
    emit(fmt::format("{{\"ph\":\"M\",\"name\":\"{}_sort_index\",\"pid\":{}{},\"args\":{{\"sort_index\":{}}}}}",
                     kind, pid, tid_field, sort_index));
  }

  std::string opArgs(const GpuOp& op, std::size_t index) {
    std::string args = fmt::format("\"correlation_id\":{},\"stream\":{}", op.correlation_id, op.stream_id);
    if (op.kind == OpKind::kKernel) {
      const KernelDims dims = kernelDimsOf(trace_, index);
      fmt::format_to(std::back_inserter(args),
                     ",\"grid\":[{}],\"block\":[{}],\"grid_blocks\":{},\"block_threads\":{},"
                     "\"registers_per_thread\":{},\"shared_mem_bytes\":{}{}",
                     fmt::join(dims.grid, ","), fmt::join(dims.block, ","), op.grid_blocks,
                     op.block_threads, op.registers_per_thread, op.shared_mem_bytes,
                     nameIndexArg(name(op.name)));
    } else {
      fmt::format_to(std::back_inserter(args), ",\"bytes\":{}", op.bytes);
    }
    if (op.kind == OpKind::kMemcpy) {
      fmt::format_to(std::back_inserter(args), ",\"copy_kind\":\"{}\",\"src_kind\":\"{}\",\"dst_kind\":\"{}\"",
                     copyKindName(op.copy_kind), memKindName(op.src_kind), memKindName(op.dst_kind));
    }
    return args;
  }

  std::string opName(const GpuOp& op) {
    if (op.kind == OpKind::kKernel) return name(op.name).json;
    if (op.kind == OpKind::kMemcpy) return fmt::format("\"memcpy {}\"", copyKindName(op.copy_kind));
    return "\"memset\"";
  }

  // The thread of (stream, overlap track) in a device process, named on first use.
  std::uint64_t streamThread(const GpuOp& op, std::size_t track) {
    const auto key = std::make_tuple(op.device_id, op.pid, op.context_id, op.stream_id, track);
    auto [it, inserted] = stream_threads_.emplace(key, stream_threads_.size() + 1);
    if (inserted) {
      std::string label = render::streamLabel(trace_, op.pid, op.context_id, op.stream_id);
      if (track > 0) label += fmt::format(" · overlap {}", track);
      emitMetadata(kDevicePidBase + op.device_id, it->second, "thread", label,
                   static_cast<std::int64_t>(op.stream_id) * 64 + static_cast<std::int64_t>(track));
    }
    return it->second;
  }

  void writeDeviceProcesses() {
    for (const GpuOp& op : trace_.ops) {
      if (selection_.keepOp(op)) devices_.insert(op.device_id);
    }
    for (const DeviceReport& device : report_.devices) devices_.insert(device.metrics.device_id);
    for (std::uint16_t device : devices_) {
      std::string label = fmt::format("GPU {}", device);
      for (const Device& info : trace_.devices) {
        if (info.device_id == device && !info.name.empty()) label += ": " + info.name;
      }
      emitMetadata(kDevicePidBase + device, std::nullopt, "process", trace_event::capText(label, kLabelBytes),
                   device);
    }
  }

  // The analysis tracks above each device's streams.
  void writeDiagnosis() {
    for (std::uint16_t device : devices_) {
      emitMetadata(kDevicePidBase + device, perfetto::gapsTid(device), "thread", "idle gaps", -2);
      emitMetadata(kDevicePidBase + device, perfetto::findingsTid(device), "thread", "findings", -1);
    }
    const perfetto::DiagnosisCounts counts = perfetto::writeDiagnosisTracks(
        trace_, report_, options_.analysis, selection_, [this](Ns ns) { return micros(ns); },
        [this](const std::string& event) { emit(event); });
    stats_.gaps = counts.gaps;
    stats_.findings = counts.findings;
    stats_.unified_memory = perfetto::writeUnifiedMemoryTracks(
        trace_, report_, selection_, [this](Ns ns) { return micros(ns); },
        [this](const std::string& event) { emit(event); });
    stats_.gpu_metrics = perfetto::writeGpuMetricTracks(
        trace_, report_, selection_, [this](Ns ns) { return micros(ns); },
        [this](const std::string& event) { emit(event); });
    stats_.memory_usage = perfetto::writeMemoryUsageTracks(
        trace_, report_, selection_, [this](Ns ns) { return micros(ns); },
        [this](const std::string& event) { emit(event); });
  }

  void writeDeviceOps() {
    writeDeviceProcesses();
    std::map<std::tuple<std::uint16_t, std::uint32_t, std::uint32_t, std::uint32_t>, TrackAllocator> tracks;
    for (std::size_t i = 0; i < trace_.ops.size(); ++i) {
      if ((i & kProgressItems) == 0) progress::done(i);
      const GpuOp& op = trace_.ops[i];
      if (!selection_.keepOp(op)) continue;
      const std::size_t track =
          tracks[{op.device_id, op.pid, op.context_id, op.stream_id}].place(op.start, op.end);
      const std::uint64_t tid = streamThread(op, track);
      const std::uint64_t pid = kDevicePidBase + op.device_id;
      emit(fmt::format("{{\"ph\":\"X\",\"cat\":\"{}\",\"name\":{},\"pid\":{},\"tid\":{},\"ts\":{},"
                       "\"dur\":{},\"args\":{{{}}}}}",
                       opKindName(op.kind), opName(op), pid, tid, micros(op.start),
                       fixedMicros(std::max<Ns>(0, op.duration())), opArgs(op, i)));
      ++stats_.ops;
      writeFlow(op, pid, tid);
    }
  }

  void writeFlow(const GpuOp& op, std::uint64_t pid, std::uint64_t tid) {
    if (op.correlation_id == 0) return;
    if (calls_by_correlation_.empty()) indexCalls();
    const auto it = calls_by_correlation_.find(correlationKey(op.pid, op.correlation_id));
    if (it == calls_by_correlation_.end()) return;
    const RuntimeCall& call = trace_.runtime_calls[it->second];
    if (!selection_.keepHost(call.pid, call.start, call.end)) return;
    const std::uint64_t id = ++stats_.flows;
    emit(fmt::format("{{\"ph\":\"s\",\"cat\":\"launch\",\"name\":\"launch\",\"id\":{},\"pid\":{},"
                     "\"tid\":{},\"ts\":{}}}",
                     id, call.pid, call.tid, micros(call.start)));
    emit(fmt::format("{{\"ph\":\"f\",\"bp\":\"e\",\"cat\":\"launch\",\"name\":\"launch\",\"id\":{},"
                     "\"pid\":{},\"tid\":{},\"ts\":{}}}",
                     id, pid, tid, micros(op.start)));
  }

  static std::uint64_t correlationKey(std::uint32_t pid, std::uint32_t correlation_id) {
    return (static_cast<std::uint64_t>(pid) << 32) | correlation_id;
  }

  void indexCalls() {
    calls_by_correlation_.reserve(trace_.runtime_calls.size());
    for (std::size_t i = 0; i < trace_.runtime_calls.size(); ++i) {
      const RuntimeCall& call = trace_.runtime_calls[i];
      if (call.correlation_id != 0) {
        calls_by_correlation_.emplace(correlationKey(call.pid, call.correlation_id), i);
      }
    }
  }

  void writeRuntimeCalls() {
    std::size_t index = 0;
    for (const RuntimeCall& call : trace_.runtime_calls) {
      if ((index++ & kProgressItems) == 0) progress::done(trace_.ops.size() + index);
      if (!selection_.keepHost(call.pid, call.start, call.end)) continue;
      host_threads_.insert({call.pid, call.tid});
      const NameRef& call_name = name(call.name);
      emit(fmt::format("{{\"ph\":\"X\",\"cat\":\"cuda_api\",\"name\":{},\"pid\":{},\"tid\":{},"
                       "\"ts\":{},\"dur\":{},\"args\":{{\"correlation_id\":{},\"return_value\":{},"
                       "\"driver\":{}{}}}}}",
                       call_name.json, call.pid, call.tid, micros(call.start),
                       fixedMicros(std::max<Ns>(0, call.end - call.start)),
                       call.correlation_id, call.return_value, call.is_driver, nameIndexArg(call_name)));
      ++stats_.calls;
    }
  }

  void writeNvtx() {
    std::map<std::uint32_t, TrackAllocator> start_end_tracks;  // per pid
    for (const NvtxRange& range : trace_.nvtx) {
      const auto type = static_cast<schema::NvtxEventType>(range.event_type);
      if (type == schema::NvtxEventType::kDomainCreate) continue;
      if (!selection_.keepHost(range.pid, range.start, range.end)) continue;
      std::uint64_t tid = kNvtxTrackBase + range.tid;
      if (type == schema::NvtxEventType::kStartEndRange) {
        const std::size_t track = start_end_tracks[range.pid].place(range.start, range.end);
        // Numbered across processes: a tid must not appear under two pids.
        tid = start_end_tids_.emplace(std::make_pair(range.pid, track), kNvtxStartEndBase + start_end_tids_.size())
                  .first->second;
        nvtx_tracks_.insert({range.pid, tid, static_cast<std::uint32_t>(track)});
      } else {
        nvtx_tracks_.insert({range.pid, tid, range.tid});
      }
      const NameRef& text = name(range.text);
      const std::string args = text.index < 0 ? std::string()
                                              : fmt::format(",\"args\":{{\"name_index\":{}}}", text.index);
      if (range.end > range.start) {
        emit(fmt::format("{{\"ph\":\"X\",\"cat\":\"nvtx\",\"name\":{},\"pid\":{},\"tid\":{},"
                         "\"ts\":{},\"dur\":{}{}}}",
                         text.json, range.pid, tid, micros(range.start),
                         fixedMicros(range.end - range.start), args));
      } else {
        emit(fmt::format("{{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"nvtx\",\"name\":{},\"pid\":{},"
                         "\"tid\":{},\"ts\":{}{}}}",
                         text.json, range.pid, tid, micros(range.start), args));
      }
      ++stats_.nvtx;
    }
  }

  void writeHostMetadata() {
    std::set<std::uint32_t> pids;
    for (const auto& [pid, tid] : host_threads_) {
      pids.insert(pid);
      emitMetadata(pid, tid, "thread", fmt::format("thread {}", tid), tid);
    }
    for (const auto& [pid, track, tid] : nvtx_tracks_) {  // tid: the host tid, or the start/end track index
      pids.insert(pid);
      const std::string label = track >= kNvtxStartEndBase
                                    ? fmt::format("NVTX start/end {}", tid)
                                    : fmt::format("NVTX thread {}", tid);
      emitMetadata(pid, track, "thread", label, track);
    }
    for (std::uint32_t pid : pids) emitMetadata(pid, std::nullopt, "process", processLabel(pid), pid);
  }

  // "rank 1 · python train.py" from Trace::processes; "process 111" when the trace has nothing.
  std::string processLabel(std::uint32_t pid) const {
    const auto it = std::lower_bound(trace_.processes.begin(), trace_.processes.end(), pid,
                                     [](const ProcessInfo& p, std::uint32_t id) { return p.pid < id; });
    if (it == trace_.processes.end() || it->pid != pid) return fmt::format("process {}", pid);
    std::string label = trace_event::capText(it->command, kLabelBytes);
    if (label.empty()) label = fmt::format("process {}", pid);
    if (it->rank) label = fmt::format("rank {} · {}", *it->rank, label);
    if (!it->host.empty()) label += " @ " + trace_event::capText(it->host, kLabelBytes);
    return label;
  }

  const Trace& trace_;
  const PerfettoExportOptions& options_;
  trace_event::EventStream stream_;
  const TraceReport report_;
  const perfetto::ExportSelection selection_;
  Ns origin_ = 0;
  std::vector<NameRef> names_;        // by StringId, filled on first use
  std::vector<StringId> long_names_;  // otherData.names: the full text of shortened names
  std::set<std::uint16_t> devices_;   // devices with a process in the export
  std::unordered_map<std::uint64_t, std::size_t> calls_by_correlation_;
  std::map<std::tuple<std::uint16_t, std::uint32_t, std::uint32_t, std::uint32_t, std::size_t>, std::uint64_t>
      stream_threads_;
  std::set<std::pair<std::uint32_t, std::uint32_t>> host_threads_;
  std::set<std::tuple<std::uint32_t, std::uint64_t, std::uint32_t>> nvtx_tracks_;
  std::map<std::pair<std::uint32_t, std::size_t>, std::uint64_t> start_end_tids_;  // (pid, track)
  PerfettoExportStats stats_;
};

}  // namespace

PerfettoExportStats writePerfettoTrace(const Trace& trace, std::ostream& out,
                                       const PerfettoExportOptions& options) {
  return PerfettoWriter(trace, out, options).write();
}

}  // namespace cuoverlap
