#include "cuoverlap/perfetto_export.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

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
#include "render_common.h"

namespace cuoverlap {
namespace {

// Device processes get pids above any real one (Linux pids stay below 2^22).
constexpr std::uint64_t kDevicePidBase = 1'000'000'000;
// Synthetic host tracks: real tids are 24-bit (globalTid encoding), these lie above.
constexpr std::uint64_t kNvtxTrackBase = 1ull << 24;
constexpr std::uint64_t kNvtxStartEndBase = 2ull << 24;
constexpr std::size_t kFlushBytes = 1 << 20;

// Microseconds with exactly three decimals: integer arithmetic, no rounding.
std::string fixedMicros(Ns ns) {
  const char* sign = ns < 0 ? "-" : "";
  const Ns magnitude = ns < 0 ? -ns : ns;
  return fmt::format("{}{}.{:03}", sign, magnitude / 1000, magnitude % 1000);
}

std::string jsonString(std::string_view text) {
  return nlohmann::json(std::string(text)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

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
  PerfettoWriter(const Trace& trace, std::ostream& out) : trace_(trace), out_(out) {
    names_.resize(trace.strings.size());
    origin_ = timeOrigin();
  }

  PerfettoExportStats write() {
    buffer_ = "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n";
    writeDeviceOps();
    writeRuntimeCalls();
    writeNvtx();
    writeHostMetadata();
    buffer_ += fmt::format("\n],\"otherData\":{{\"time_origin_ns\":{},\"source\":{}}}}}\n",
                           origin_, jsonString(trace_.path));
    out_ << buffer_;
    return stats_;
  }

 private:
  Ns timeOrigin() const {
    Ns origin = std::numeric_limits<Ns>::max();
    for (const GpuOp& op : trace_.ops) origin = std::min(origin, op.start);
    for (const RuntimeCall& call : trace_.runtime_calls) origin = std::min(origin, call.start);
    for (const NvtxRange& range : trace_.nvtx) origin = std::min(origin, range.start);
    return origin == std::numeric_limits<Ns>::max() ? 0 : origin;
  }

  // A timestamp relative to the origin, in microseconds.
  std::string micros(Ns ns) const { return fixedMicros(ns - origin_); }

  const std::string& name(StringId id) {
    if (id >= names_.size()) id = kNoString;
    if (names_[id].empty()) names_[id] = jsonString(trace_.str(id));
    return names_[id];
  }

  void emit(const std::string& event) {
    if (!first_event_) buffer_ += ",\n";
    first_event_ = false;
    buffer_ += event;
    if (buffer_.size() >= kFlushBytes) {
      out_ << buffer_;
      buffer_.clear();
    }
  }

  void emitMetadata(std::uint64_t pid, std::optional<std::uint64_t> tid, std::string_view kind,
                    const std::string& label, std::uint64_t sort_index) {
    const std::string tid_field = tid ? fmt::format(",\"tid\":{}", *tid) : std::string();
    emit(fmt::format("{{\"ph\":\"M\",\"name\":\"{}_name\",\"pid\":{}{},\"args\":{{\"name\":{}}}}}",
                     kind, pid, tid_field, jsonString(label)));
    emit(fmt::format("{{\"ph\":\"M\",\"name\":\"{}_sort_index\",\"pid\":{}{},\"args\":{{\"sort_index\":{}}}}}",
                     kind, pid, tid_field, sort_index));
  }

  std::string opArgs(const GpuOp& op) {
    std::string args = fmt::format("\"correlation_id\":{},\"stream\":{}", op.correlation_id, op.stream_id);
    if (op.kind == OpKind::kKernel) {
      fmt::format_to(std::back_inserter(args),
                     ",\"grid_blocks\":{},\"block_threads\":{},\"registers_per_thread\":{},"
                     "\"shared_mem_bytes\":{}",
                     op.grid_blocks, op.block_threads, op.registers_per_thread, op.shared_mem_bytes);
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
    if (op.kind == OpKind::kKernel) return name(op.name);
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
                   static_cast<std::uint64_t>(op.stream_id) * 64 + track);
    }
    return it->second;
  }

  void writeDeviceProcesses() {
    std::set<std::uint16_t> devices;
    for (const GpuOp& op : trace_.ops) devices.insert(op.device_id);
    for (std::uint16_t device : devices) {
      std::string label = fmt::format("GPU {}", device);
      for (const Device& info : trace_.devices) {
        if (info.device_id == device && !info.name.empty()) label += ": " + info.name;
      }
      emitMetadata(kDevicePidBase + device, std::nullopt, "process", label, device);
    }
  }

  void writeDeviceOps() {
    writeDeviceProcesses();
    std::map<std::tuple<std::uint16_t, std::uint32_t, std::uint32_t, std::uint32_t>, TrackAllocator> tracks;
    for (const GpuOp& op : trace_.ops) {
      const std::size_t track =
          tracks[{op.device_id, op.pid, op.context_id, op.stream_id}].place(op.start, op.end);
      const std::uint64_t tid = streamThread(op, track);
      const std::uint64_t pid = kDevicePidBase + op.device_id;
      emit(fmt::format("{{\"ph\":\"X\",\"cat\":\"{}\",\"name\":{},\"pid\":{},\"tid\":{},\"ts\":{},"
                       "\"dur\":{},\"args\":{{{}}}}}",
                       opKindName(op.kind), opName(op), pid, tid, micros(op.start),
                       fixedMicros(std::max<Ns>(0, op.duration())), opArgs(op)));
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
    for (const RuntimeCall& call : trace_.runtime_calls) {
      host_threads_.insert({call.pid, call.tid});
      emit(fmt::format("{{\"ph\":\"X\",\"cat\":\"cuda_api\",\"name\":{},\"pid\":{},\"tid\":{},"
                       "\"ts\":{},\"dur\":{},\"args\":{{\"correlation_id\":{},\"return_value\":{},"
                       "\"driver\":{}}}}}",
                       name(call.name), call.pid, call.tid, micros(call.start),
                       fixedMicros(std::max<Ns>(0, call.end - call.start)),
                       call.correlation_id, call.return_value, call.is_driver));
      ++stats_.calls;
    }
  }

  void writeNvtx() {
    std::map<std::uint32_t, TrackAllocator> start_end_tracks;  // per pid
    for (const NvtxRange& range : trace_.nvtx) {
      const auto type = static_cast<schema::NvtxEventType>(range.event_type);
      if (type == schema::NvtxEventType::kDomainCreate) continue;
      std::uint64_t tid = kNvtxTrackBase + range.tid;
      if (type == schema::NvtxEventType::kStartEndRange) {
        tid = kNvtxStartEndBase + start_end_tracks[range.pid].place(range.start, range.end);
      }
      nvtx_tracks_.insert({range.pid, tid, range.tid});
      if (range.end > range.start) {
        emit(fmt::format("{{\"ph\":\"X\",\"cat\":\"nvtx\",\"name\":{},\"pid\":{},\"tid\":{},"
                         "\"ts\":{},\"dur\":{}}}",
                         name(range.text), range.pid, tid, micros(range.start),
                         fixedMicros(range.end - range.start)));
      } else {
        emit(fmt::format("{{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"nvtx\",\"name\":{},\"pid\":{},"
                         "\"tid\":{},\"ts\":{}}}",
                         name(range.text), range.pid, tid, micros(range.start)));
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
    for (const auto& [pid, track, tid] : nvtx_tracks_) {
      pids.insert(pid);
      const std::string label = track >= kNvtxStartEndBase
                                    ? fmt::format("NVTX start/end {}", track - kNvtxStartEndBase)
                                    : fmt::format("NVTX thread {}", tid);
      emitMetadata(pid, track, "thread", label, track);
    }
    for (std::uint32_t pid : pids) emitMetadata(pid, std::nullopt, "process", fmt::format("process {}", pid), pid);
  }

  const Trace& trace_;
  std::ostream& out_;
  std::string buffer_;
  bool first_event_ = true;
  Ns origin_ = 0;
  std::vector<std::string> names_;  // JSON-quoted strings, by StringId, filled on first use
  std::unordered_map<std::uint64_t, std::size_t> calls_by_correlation_;
  std::map<std::tuple<std::uint16_t, std::uint32_t, std::uint32_t, std::uint32_t, std::size_t>, std::uint64_t>
      stream_threads_;
  std::set<std::pair<std::uint32_t, std::uint32_t>> host_threads_;
  std::set<std::tuple<std::uint32_t, std::uint64_t, std::uint32_t>> nvtx_tracks_;
  PerfettoExportStats stats_;
};

}  // namespace

PerfettoExportStats writePerfettoTrace(const Trace& trace, std::ostream& out) {
  return PerfettoWriter(trace, out).write();
}

}  // namespace cuoverlap
