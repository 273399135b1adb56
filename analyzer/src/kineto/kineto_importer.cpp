#include "kineto_importer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/core.h>

#include <algorithm>
#include <cstdio>
#include <limits>
#include <map>
#include <unordered_map>

#include "cuoverlap/error.h"
#include "event_names.h"
#include "numbers.h"
#include "reader_internal.h"
#include "trace_parser.h"

namespace cuoverlap::kineto {
namespace {

constexpr Ns kTimestampLimit = Ns{1} << 62;

template <typename T>
T clampTo(std::int64_t value) {
  if (value < 0) return 0;
  return static_cast<std::uint64_t>(value) > std::numeric_limits<T>::max()
             ? std::numeric_limits<T>::max()
             : static_cast<T>(value);
}

// Turns RawEvents into model entries as they stream by; finish() resolves what only the whole
// file tells (the time base, which process launched each op, ranks).
class ModelBuilder : public EventSink {
 public:
  ModelBuilder(const std::string& path, Trace& trace)
      : path_(path), trace_(trace), interner_(trace) {}

  void event(const RawEvent& e) override {
    const std::string_view ph = e.get(Field::kPh);
    const std::optional<Ns> ts = timestamp(e, Field::kTs);
    if (ph == "M") return metadataEvent(e);
    if (ph != "X" || !ts) return;
    const EventKind kind = eventKindOf(e.get(Field::kCat), e.get(Field::kName));
    if (kind == EventKind::kOther) return;
    const Ns dur = std::max<Ns>(0, timestamp(e, Field::kDur).value_or(0));
    const Interval span{*ts, *ts + dur};  // each below 2^62: the sum fits
    if (span.end >= kTimestampLimit) badEvent(e, "ts + dur is beyond 2^62 ns");
    switch (kind) {
      case EventKind::kKernel:
      case EventKind::kMemcpy:
      case EventKind::kMemset: return addOp(e, kind, span);
      case EventKind::kRuntime:
      case EventKind::kDriver: return addCall(e, kind == EventKind::kDriver, span);
      case EventKind::kSync: return addSync(e, span);
      case EventKind::kAnnotation:
      case EventKind::kGpuAnnotation: return addRange(e, kind == EventKind::kGpuAnnotation, span);
      case EventKind::kOther: return;
    }
  }

  void device(const RawDevice& raw) override {
    if (raw.id < 0) return;
    Device device;
    device.device_id = clampTo<std::uint16_t>(raw.id);
    device.name = raw.name;
    device.sm_count = clampTo<std::int32_t>(raw.sm_count);
    device.compute_major = clampTo<std::int32_t>(raw.compute_major);
    device.compute_minor = clampTo<std::int32_t>(raw.compute_minor);
    device.total_memory = clampTo<std::uint64_t>(raw.total_memory);
    device.max_threads_per_sm = clampTo<std::int32_t>(raw.max_threads_per_sm);
    device.max_registers_per_sm = clampTo<std::int32_t>(raw.registers_per_sm);
    device.max_shared_mem_per_sm = std::max<std::int64_t>(0, raw.shared_mem_per_sm);
    trace_.devices.push_back(device);
  }

  void metadata(std::string_view key, std::string_view value, bool) override {
    if (key == "baseTimeNanoseconds") {
      base_ns_ = parseInteger(value);
      if (!base_ns_ || *base_ns_ < 0 || *base_ns_ >= kTimestampLimit) {
        throw UserError(fmt::format("{}: baseTimeNanoseconds is not a valid time: '{}'", path_, value));
      }
    } else if (key == "distributedInfo.rank") {
      rank_ = parseInteger(value);
    } else if (key == "distributedInfo.world_size") {
      world_size_ = parseInteger(value);
    }
  }

  void finish() {
    applyTimeBase();
    const std::uint32_t main_pid = mainHostPid();
    assignOpProcesses(main_pid);
    addProcesses(main_pid);
    std::sort(trace_.devices.begin(), trace_.devices.end(),
              [](const Device& a, const Device& b) { return a.device_id < b.device_id; });
  }

 private:
  struct Interval {
    Ns start;
    Ns end;
  };

  [[noreturn]] void badEvent(const RawEvent& e, std::string_view what) const {
    throw UserError(fmt::format("{}: traceEvents[{}] ({} \"{}\"): {}", path_, e.index,
                                e.get(Field::kCat), e.get(Field::kName), what));
  }

  std::optional<Ns> timestamp(const RawEvent& e, Field field) const {
    if (!e.has(field)) return std::nullopt;
    const std::string_view text = e.get(field);
    const std::optional<Ns> ns = e.isString(field) ? std::nullopt : microsToNs(text);
    if (!ns) {
      badEvent(e, fmt::format("{} is not a finite number of microseconds: '{}'",
                              field == Field::kTs ? "ts" : "dur", text));
    }
    return ns;
  }

  std::optional<std::int64_t> integer(const RawEvent& e, Field field) const {
    return e.has(field) ? parseInteger(e.get(field)) : std::nullopt;
  }

  // The integer in `field`, else in `fallback`, else `otherwise`; -1 (no stream) wraps to 0xFFFFFFFF.
  std::uint32_t u32(const RawEvent& e, Field field, Field fallback, std::uint32_t otherwise) const {
    std::optional<std::int64_t> v = integer(e, field);
    if (!v) v = integer(e, fallback);
    return v ? static_cast<std::uint32_t>(*v) : otherwise;
  }
  std::uint32_t u32(const RawEvent& e, Field field, std::uint32_t otherwise = 0) const {
    return u32(e, field, field, otherwise);
  }

  void addOp(const RawEvent& e, EventKind kind, Interval span) {
    GpuOp op;
    op.start = span.start;
    op.end = span.end;
    const std::uint32_t pid_as_device = u32(e, Field::kPid);
    op.device_id = clampTo<std::uint16_t>(u32(e, Field::kDevice, Field::kInDevice, pid_as_device));
    op.context_id = u32(e, Field::kContext, Field::kInContext, 0);
    op.stream_id = u32(e, Field::kStream, Field::kTid, 0);
    op.correlation_id = u32(e, Field::kCorrelation);
    op.bytes = clampTo<std::uint64_t>(integer(e, Field::kBytes).value_or(0));
    if (kind == EventKind::kKernel) {
      op.kind = OpKind::kKernel;
      op.name = interner_.intern(e.get(Field::kName));
      op.registers_per_thread = clampTo<std::uint16_t>(integer(e, Field::kRegisters).value_or(0));
      op.shared_mem_bytes = clampTo<std::uint32_t>(integer(e, Field::kSharedMemory).value_or(0));
      if (e.has_grid) op.grid_blocks = static_cast<std::uint32_t>(e.grid_blocks);
      if (e.has_block) op.block_threads = clampTo<std::uint16_t>(static_cast<std::int64_t>(e.block_threads));
      op.bytes = 0;
      KernelDims dims;
      dims.grid = e.grid;
      for (int i = 0; i < 3; ++i) dims.block[i] = clampTo<std::uint16_t>(static_cast<std::int64_t>(e.block[i]));
      addKernelDims(trace_, dims);
    } else if (kind == EventKind::kMemcpy) {
      op.kind = OpKind::kMemcpy;
      const CopyName copy = parseMemcpyName(e.get(Field::kName));
      op.copy_kind = copy.kind;
      op.src_kind = copy.src;
      op.dst_kind = copy.dst;
    } else {
      op.kind = OpKind::kMemset;
      op.src_kind = parseMemsetName(e.get(Field::kName));
    }
    trace_.ops.push_back(op);
  }

  void addCall(const RawEvent& e, bool driver, Interval span) {
    RuntimeCall call;
    call.start = span.start;
    call.end = span.end;
    call.pid = u32(e, Field::kPid);
    call.tid = u32(e, Field::kTid);
    call.correlation_id = u32(e, Field::kCorrelation);
    call.name = interner_.intern(e.get(Field::kName));
    call.is_driver = driver;
    trace_.runtime_calls.push_back(call);
  }

  void addSync(const RawEvent& e, Interval span) {
    SyncEvent sync;
    sync.start = span.start;
    sync.end = span.end;
    sync.stream_id = u32(e, Field::kStream, Field::kTid, 0xFFFFFFFFu);
    sync.context_id = u32(e, Field::kContext);
    sync.device_id = clampTo<std::uint16_t>(u32(e, Field::kDevice, Field::kPid, 0));
    sync.correlation_id = u32(e, Field::kCorrelation);
    sync.type = syncTypeOf(e.get(Field::kSyncKind).empty() ? e.get(Field::kName) : e.get(Field::kSyncKind));
    trace_.syncs.push_back(sync);
  }

  void addRange(const RawEvent& e, bool on_gpu, Interval span) {
    NvtxRange range;
    range.start = span.start;
    range.end = span.end;
    range.text = interner_.intern(e.get(Field::kName));
    range.tid = u32(e, Field::kTid);
    if (on_gpu) {
      if (gpu_domain_ == kNoString) gpu_domain_ = interner_.intern(kGpuAnnotationDomain);
      range.domain = gpu_domain_;
      range.event_type = static_cast<std::int32_t>(schema::NvtxEventType::kStartEndRange);
      gpu_ranges_.push_back(trace_.nvtx.size());
    } else {
      range.pid = u32(e, Field::kPid);
      range.event_type = static_cast<std::int32_t>(schema::NvtxEventType::kPushPopRange);
    }
    trace_.nvtx.push_back(range);
  }

  void metadataEvent(const RawEvent& e) {
    if (e.get(Field::kName) != "process_name" || !e.has(Field::kArgName)) return;
    if (const auto pid = integer(e, Field::kPid)) process_names_[*pid] = std::string(e.get(Field::kArgName));
  }

  void applyTimeBase();
  std::uint32_t mainHostPid() const;
  void assignOpProcesses(std::uint32_t main_pid);
  void addProcesses(std::uint32_t main_pid);

  const std::string& path_;
  Trace& trace_;
  reader::StringInterner interner_;
  std::optional<std::int64_t> base_ns_;
  std::optional<std::int64_t> rank_;
  std::optional<std::int64_t> world_size_;
  std::map<std::int64_t, std::string> process_names_;
  StringId gpu_domain_ = kNoString;
  std::vector<std::size_t> gpu_ranges_;  // indices into trace_.nvtx of GPU annotations
};

void ModelBuilder::applyTimeBase() {
  if (!base_ns_ || *base_ns_ == 0) return;
  const Ns base = *base_ns_;
  auto shift = [&](Ns& t) {
    t += base;  // |t| < 2^62 and 0 <= base < 2^62: no overflow in 64 bits
    if (t >= kTimestampLimit) {
      throw UserError(fmt::format("{}: a timestamp plus baseTimeNanoseconds exceeds 2^62 ns", path_));
    }
  };
  for (GpuOp& op : trace_.ops) { shift(op.start); shift(op.end); }
  for (RuntimeCall& call : trace_.runtime_calls) { shift(call.start); shift(call.end); }
  for (SyncEvent& sync : trace_.syncs) { shift(sync.start); shift(sync.end); }
  for (NvtxRange& range : trace_.nvtx) { shift(range.start); shift(range.end); }
}

// The process that made most runtime calls (a Kineto file normally holds one).
std::uint32_t ModelBuilder::mainHostPid() const {
  std::unordered_map<std::uint32_t, std::size_t> calls;
  for (const RuntimeCall& call : trace_.runtime_calls) ++calls[call.pid];
  std::uint32_t best = 0;
  std::size_t most = 0;
  for (const auto& [pid, n] : calls) {
    if (n > most || (n == most && pid < best)) { best = pid; most = n; }
  }
  if (most > 0) return best;
  for (const NvtxRange& range : trace_.nvtx) {
    const bool on_gpu = gpu_domain_ != kNoString && range.domain == gpu_domain_;
    if (!on_gpu) return range.pid;
  }
  return 0;
}

void ModelBuilder::assignOpProcesses(std::uint32_t main_pid) {
  std::unordered_map<std::uint32_t, const RuntimeCall*> by_correlation;
  by_correlation.reserve(trace_.runtime_calls.size());
  for (const RuntimeCall& call : trace_.runtime_calls) {
    if (call.correlation_id != 0) by_correlation.emplace(call.correlation_id, &call);
  }
  for (GpuOp& op : trace_.ops) {
    op.pid = main_pid;
    auto it = op.correlation_id == 0 ? by_correlation.end() : by_correlation.find(op.correlation_id);
    if (it == by_correlation.end()) continue;
    op.pid = it->second->pid;
    if (isGraphLaunch(trace_.str(it->second->name))) op.flags |= op_flag::kFromGraph;
  }
  for (SyncEvent& sync : trace_.syncs) {
    auto it = by_correlation.find(sync.correlation_id);
    sync.pid = it == by_correlation.end() ? main_pid : it->second->pid;
  }
  for (std::size_t index : gpu_ranges_) trace_.nvtx[index].pid = main_pid;
}

void ModelBuilder::addProcesses(std::uint32_t main_pid) {
  std::map<std::uint32_t, ProcessInfo> processes;
  for (const RuntimeCall& call : trace_.runtime_calls) processes[call.pid].pid = call.pid;
  for (const NvtxRange& range : trace_.nvtx) processes[range.pid].pid = range.pid;
  if (processes.empty() && (rank_ || world_size_)) processes[main_pid].pid = main_pid;
  for (auto& [pid, info] : processes) {
    auto name = process_names_.find(pid);
    if (name != process_names_.end()) info.command = name->second;
    if (pid == main_pid) {
      if (rank_) info.rank = static_cast<std::int32_t>(*rank_);
      if (world_size_) info.world_size = static_cast<std::int32_t>(*world_size_);
    }
    trace_.processes.push_back(info);
  }
}

}  // namespace

// O_NONBLOCK: a FIFO swapped in after the caller's regular-file check must not block the open.
bool looksLikeJson(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return false;
  struct stat st {};
  unsigned char head[64] = {};
  ssize_t read_bytes = 0;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) read_bytes = ::pread(fd, head, sizeof head, 0);
  ::close(fd);
  const std::size_t n = read_bytes > 0 ? static_cast<std::size_t>(read_bytes) : 0;
  if (n >= 2 && head[0] == 0x1f && head[1] == 0x8b) return true;
  const bool bom = n >= 3 && head[0] == 0xEF && head[1] == 0xBB && head[2] == 0xBF;
  for (std::size_t i = bom ? 3 : 0; i < n; ++i) {
    if (head[i] == ' ' || head[i] == '\t' || head[i] == '\n' || head[i] == '\r') continue;
    return head[i] == '{' || head[i] == '[';
  }
  return false;
}

void importTrace(const std::string& path, Trace& trace) {
  ModelBuilder builder(path, trace);
  parseTraceFile(path, builder);
  builder.finish();
}

}  // namespace cuoverlap::kineto
