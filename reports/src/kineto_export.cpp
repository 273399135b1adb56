#include "cuoverlap/kineto_export.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <iterator>
#include <map>
#include <ostream>
#include <set>
#include <unordered_map>

#include "render_common.h"
#include "trace_event_common.h"

namespace cuoverlap {
namespace {

using trace_event::jsonString;
using trace_event::kProgressItems;

constexpr std::string_view kGpuAnnotationDomain = "gpu_user_annotation";

// Kineto's spellings (libkineto cupti_strings.cpp): memcpyKindString, memoryKindString.
std::string_view copyKindText(CopyKind kind) {
  switch (kind) {
    case CopyKind::kHtoD: return "HtoD";
    case CopyKind::kDtoH: return "DtoH";
    case CopyKind::kHtoA: return "HtoA";
    case CopyKind::kAtoH: return "AtoH";
    case CopyKind::kAtoA: return "AtoA";
    case CopyKind::kAtoD: return "AtoD";
    case CopyKind::kDtoA: return "DtoA";
    case CopyKind::kDtoD: return "DtoD";
    case CopyKind::kHtoH: return "HtoH";
    case CopyKind::kPtoP: return "PtoP";
    default: return "<unknown>";
  }
}

std::string_view memKindText(MemKind kind) {
  switch (kind) {
    case MemKind::kPageable: return "Pageable";
    case MemKind::kPinned: return "Pinned";
    case MemKind::kDevice: return "Device";
    case MemKind::kArray: return "Array";
    case MemKind::kManaged: return "Managed";
    case MemKind::kDeviceStatic: return "Device Static";
    case MemKind::kManagedStatic: return "Managed Static";
    case MemKind::kUnknown: break;
  }
  return "Unknown";
}


class KinetoWriter {
 public:
  KinetoWriter(const Trace& trace, std::ostream& out, const KinetoSteps& steps)
      : trace_(trace), steps_(steps), stream_(out, ",\n  ", "\n  ") {
    origin_ = trace_event::traceOrigin(trace);
    for (const GpuOp& op : trace.ops) devices_.insert(op.device_id);
  }

  KinetoExportStats write() {
    progress::phase("writing the Kineto trace", trace_.ops.size() + trace_.runtime_calls.size());
    writeHeader();
    writeOps();
    writeCalls();
    writeRanges();
    writeSteps();
    writeMetadata();
    stream_.raw(fmt::format("\n  ],\n  \"traceName\": {}\n}}\n", jsonString(trace_.path)));
    stream_.flush();
    progress::done(trace_.ops.size() + trace_.runtime_calls.size());
    return stats_;
  }

 private:
  // Relative microseconds with exactly three decimals: integer arithmetic, no rounding.
  std::string micros(Ns ns) const { return duration(ns - origin_); }
  static std::string duration(Ns ns) {
    ns = std::max<Ns>(0, ns);
    return fmt::format("{}.{:03}", ns / 1000, ns % 1000);
  }

  void emit(const std::string& event) { stream_.event(event); }

  void writeHeader() {
    std::string header = "{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [";
    bool first = true;
    for (const Device& d : trace_.devices) {
      header += fmt::format(
          "{}\n    {{\"id\": {}, \"name\": {}, \"totalGlobalMem\": {}, \"computeMajor\": {}, "
          "\"computeMinor\": {}, \"maxThreadsPerMultiprocessor\": {}, \"regsPerMultiprocessor\": {}, "
          "\"sharedMemPerMultiprocessor\": {}, \"numSms\": {}}}",
          first ? "" : ",", d.device_id, jsonString(d.name), d.total_memory, d.compute_major,
          d.compute_minor, d.max_threads_per_sm, d.max_registers_per_sm, d.max_shared_mem_per_sm,
          d.sm_count);
      first = false;
    }
    header += "\n  ],\n";
    for (const ProcessInfo& p : trace_.processes) {
      if (!p.rank) continue;
      header += fmt::format("  \"distributedInfo\": {{\"backend\": \"nccl\", \"rank\": {}, \"world_size\": {}}},\n",
                             *p.rank, p.world_size.value_or(*p.rank + 1));
      break;
    }
    header += fmt::format("  \"displayTimeUnit\": \"ms\",\n  \"baseTimeNanoseconds\": {},\n  \"traceEvents\": [",
                           origin_);
    stream_.raw(header);
  }

  // A name as a JSON string, cut to kKinetoNameBytes.
  std::string eventName(std::string_view name) const {
    if (name.size() <= kKinetoNameBytes) return jsonString(name);
    ++stats_.names_cut;
    return jsonString(trace_event::capText(name, kKinetoNameBytes));
  }

  std::string opName(const GpuOp& op) const {
    if (op.kind == OpKind::kKernel) return eventName(trace_.str(op.name));
    if (op.kind == OpKind::kMemcpy) {
      return fmt::format("\"Memcpy {} ({} -> {})\"", copyKindText(op.copy_kind),
                         memKindText(op.src_kind), memKindText(op.dst_kind));
    }
    return fmt::format("\"Memset ({})\"", memKindText(op.src_kind));
  }

  std::string opArgs(const GpuOp& op, std::size_t index) const {
    std::string args = fmt::format("\"device\": {}, \"context\": {}, \"stream\": {}, \"correlation\": {}",
                                   op.device_id, op.context_id, op.stream_id, op.correlation_id);
    if (op.kind == OpKind::kKernel) {
      const KernelDims dims = kernelDimsOf(trace_, index);
      fmt::format_to(std::back_inserter(args),
                     ", \"registers per thread\": {}, \"shared memory\": {}, \"grid\": [{}], "
                     "\"block\": [{}]",
                     op.registers_per_thread, op.shared_mem_bytes, fmt::join(dims.grid, ", "),
                     fmt::join(dims.block, ", "));
    } else {
      const Ns dur = op.duration();
      fmt::format_to(std::back_inserter(args), ", \"bytes\": {}, \"memory bandwidth (GB/s)\": {}", op.bytes,
                     dur > 0 ? fmt::format("{:.6g}", static_cast<double>(op.bytes) / static_cast<double>(dur))
                             : std::string("\"N/A\""));
    }
    return args;
  }

  static std::string_view category(OpKind kind) {
    return kind == OpKind::kKernel ? "kernel" : kind == OpKind::kMemcpy ? "gpu_memcpy" : "gpu_memset";
  }

  void writeOps() {
    indexCalls();
    for (std::size_t i = 0; i < trace_.ops.size(); ++i) {
      if ((i & kProgressItems) == 0) progress::done(i);
      const GpuOp& op = trace_.ops[i];
      streams_.insert({op.device_id, op.stream_id});
      emit(fmt::format("{{\"ph\": \"X\", \"cat\": \"{}\", \"name\": {}, \"pid\": {}, \"tid\": {}, "
                       "\"ts\": {}, \"dur\": {}, \"args\": {{{}}}}}",
                       category(op.kind), opName(op), op.device_id, op.stream_id, micros(op.start),
                       duration(op.duration()), opArgs(op, i)));
      ++stats_.ops;
      writeFlow(op);
    }
  }

  static std::uint64_t key(std::uint32_t pid, std::uint32_t correlation_id) {
    return (static_cast<std::uint64_t>(pid) << 32) | correlation_id;
  }

  void indexCalls() {
    for (std::size_t i = 0; i < trace_.runtime_calls.size(); ++i) {
      const RuntimeCall& call = trace_.runtime_calls[i];
      if (call.correlation_id != 0) calls_.emplace(key(call.pid, call.correlation_id), i);
    }
  }

  // Flow ids are numbered here: correlation ids repeat across processes.
  void writeFlow(const GpuOp& op) {
    if (op.correlation_id == 0) return;
    const auto it = calls_.find(key(op.pid, op.correlation_id));
    if (it == calls_.end()) return;
    const RuntimeCall& call = trace_.runtime_calls[it->second];
    const std::uint64_t id = ++stats_.flows;
    emit(fmt::format("{{\"ph\": \"s\", \"id\": {}, \"pid\": {}, \"tid\": {}, \"ts\": {}, \"cat\": \"ac2g\", "
                     "\"name\": \"ac2g\"}}",
                     id, call.pid, call.tid, micros(call.start)));
    emit(fmt::format("{{\"ph\": \"f\", \"id\": {}, \"pid\": {}, \"tid\": {}, \"ts\": {}, \"cat\": \"ac2g\", "
                     "\"name\": \"ac2g\", \"bp\": \"e\"}}",
                     id, op.device_id, op.stream_id, micros(op.start)));
  }

  void writeCalls() {
    std::size_t index = 0;
    for (const RuntimeCall& call : trace_.runtime_calls) {
      if ((index++ & kProgressItems) == 0) progress::done(trace_.ops.size() + index);
      threads_.insert({call.pid, call.tid});
      emit(fmt::format("{{\"ph\": \"X\", \"cat\": \"{}\", \"name\": {}, \"pid\": {}, \"tid\": {}, "
                       "\"ts\": {}, \"dur\": {}, \"args\": {{\"correlation\": {}}}}}",
                       call.is_driver ? "cuda_driver" : "cuda_runtime",
                       eventName(render::apiName(trace_.str(call.name))), call.pid, call.tid,
                       micros(call.start), duration(call.end - call.start), call.correlation_id));
      ++stats_.calls;
    }
  }

  void writeRanges() {
    const std::uint16_t first_device = devices_.empty() ? 0 : *devices_.begin();
    for (const NvtxRange& range : trace_.nvtx) {
      if (range.event_type == static_cast<std::int32_t>(schema::NvtxEventType::kDomainCreate)) continue;
      const bool on_gpu = trace_.str(range.domain) == kGpuAnnotationDomain;
      const std::uint32_t pid = on_gpu ? first_device : range.pid;
      if (!on_gpu) threads_.insert({range.pid, range.tid});
      if (range.end > range.start || on_gpu) {
        emit(fmt::format("{{\"ph\": \"X\", \"cat\": \"{}\", \"name\": {}, \"pid\": {}, \"tid\": {}, "
                         "\"ts\": {}, \"dur\": {}}}",
                         on_gpu ? "gpu_user_annotation" : "user_annotation",
                         eventName(trace_.str(range.text)), pid, range.tid, micros(range.start),
                         duration(range.end - range.start)));
      } else {
        emit(fmt::format("{{\"ph\": \"i\", \"s\": \"t\", \"cat\": \"user_annotation\", \"name\": {}, "
                         "\"pid\": {}, \"tid\": {}, \"ts\": {}}}",
                         jsonString(trace_.str(range.text)), pid, range.tid, micros(range.start)));
      }
      ++stats_.ranges;
    }
  }

  // The host thread with the most API calls: the one that ran the loop.
  std::pair<std::uint32_t, std::uint32_t> loopThread() const {
    std::map<std::pair<std::uint32_t, std::uint32_t>, std::uint64_t> calls;
    for (const RuntimeCall& call : trace_.runtime_calls) ++calls[{call.pid, call.tid}];
    std::pair<std::uint32_t, std::uint32_t> best{0, 0};
    std::uint64_t most = 0;
    for (const auto& entry : calls) {
      if (entry.second > most) most = entry.second, best = entry.first;
    }
    return best;
  }

  void writeSteps() {
    if (steps_.starts.empty()) return;
    const auto [pid, tid] = loopThread();
    threads_.insert({pid, tid});
    for (std::size_t i = 0; i < steps_.starts.size(); ++i) {
      const Ns start = steps_.starts[i];
      const Ns end = i + 1 < steps_.starts.size() ? steps_.starts[i + 1] : steps_.end;
      emit(fmt::format("{{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#{}\", "
                       "\"pid\": {}, \"tid\": {}, \"ts\": {}, \"dur\": {}}}",
                       steps_.first_number + i, pid, tid, micros(start), duration(end - start)));
      ++stats_.steps;
    }
  }

  void metadata(std::string_view kind, std::uint64_t pid, std::uint64_t tid, std::string_view arg,
                const std::string& value) {
    emit(fmt::format("{{\"name\": \"{}\", \"ph\": \"M\", \"ts\": 0.000, \"pid\": {}, \"tid\": {}, "
                     "\"args\": {{\"{}\": {}}}}}",
                     kind, pid, tid, arg, value));
  }

  void writeMetadata() {
    for (std::uint16_t device : devices_) {
      metadata("process_name", device, 0, "name", jsonString(fmt::format("GPU {}", device)));
      metadata("process_labels", device, 0, "labels", jsonString(fmt::format("GPU {}", device)));
      metadata("process_sort_index", device, 0, "sort_index", fmt::format("{}", 0x1000000 + device));
    }
    for (const auto& [device, stream] : streams_) {
      metadata("thread_name", device, stream, "name", jsonString(fmt::format("stream {}", stream)));
      metadata("thread_sort_index", device, stream, "sort_index", fmt::format("{}", stream));
    }
    std::map<std::uint32_t, std::string> commands;
    for (const ProcessInfo& p : trace_.processes) commands[p.pid] = p.command;
    std::set<std::uint32_t> pids;
    for (const auto& [pid, tid] : threads_) {
      pids.insert(pid);
      metadata("thread_name", pid, tid, "name", jsonString(fmt::format("thread {}", tid)));
    }
    for (std::uint32_t pid : pids) {
      const std::string& command = commands[pid];
      metadata("process_name", pid, 0, "name", jsonString(command.empty() ? fmt::format("process {}", pid) : command));
    }
  }

  const Trace& trace_;
  const KinetoSteps& steps_;
  trace_event::EventStream stream_;
  Ns origin_ = 0;
  std::set<std::uint16_t> devices_;
  std::set<std::pair<std::uint16_t, std::uint32_t>> streams_;
  std::set<std::pair<std::uint32_t, std::uint32_t>> threads_;
  std::unordered_map<std::uint64_t, std::size_t> calls_;
  mutable KinetoExportStats stats_;  // eventName() counts the names it cuts
};

}  // namespace

KinetoExportStats writeKinetoTrace(const Trace& trace, std::ostream& out, const KinetoSteps& steps) {
  return KinetoWriter(trace, out, steps).write();
}

}  // namespace cuoverlap
