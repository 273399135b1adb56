// The in-memory trace model: plain structs filled by the reader (analyzer/src/reader*) from our
// traces and from Nsight Systems exports alike, and consumed by every analysis and renderer.
//
// Memory matters (10^7 ops must fit in <= 100 bytes per op), so GpuOp is kept at 64 bytes and
// strings are interned once in Trace::strings and referred to by StringId.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "trace_schema.h"

namespace cuoverlap {

using Ns = std::int64_t;            // nanoseconds, CUPTI/nsys timestamps
using StringId = std::uint32_t;     // index into Trace::strings
inline constexpr StringId kNoString = 0;  // Trace::strings[0] is always ""

using schema::CopyKind;
using schema::MemKind;
using schema::StreamFlag;
using schema::SyncType;

enum class OpKind : std::uint8_t { kKernel, kMemcpy, kMemset };

// Engine an op occupies, for per-engine utilization. kComm: communication kernels (NCCL
// collectives; the rule is in communication.h), which CommunicationKernels::engineOf assigns.
enum class Engine : std::uint8_t { kCompute, kH2D, kD2H, kD2D, kOtherCopy, kMemset, kComm };

namespace op_flag {
inline constexpr std::uint8_t kAsync = 1;       // memcpy/memset issued through an *Async API
inline constexpr std::uint8_t kAsyncKnown = 2;  // kAsync is meaningful (else unknown)
inline constexpr std::uint8_t kFromGraph = 4;   // launched as a CUDA graph node
}  // namespace op_flag

// A kernel, memcpy or memset executed on a device.
struct GpuOp {
  Ns start = 0;
  Ns end = 0;
  std::uint64_t bytes = 0;            // memcpy/memset size; 0 for kernels
  std::uint32_t correlation_id = 0;   // links to RuntimeCall::correlation_id; 0 = none
  std::uint32_t stream_id = 0;
  std::uint32_t context_id = 0;
  std::uint32_t pid = 0;
  StringId name = kNoString;          // kernels: demangled name (short name if absent)
  std::uint32_t grid_blocks = 0;      // kernels: gridX*gridY*gridZ (saturating)
  std::uint32_t shared_mem_bytes = 0; // kernels: static + dynamic shared memory per block
  std::uint16_t device_id = 0;
  std::uint16_t block_threads = 0;    // kernels: blockX*blockY*blockZ
  std::uint16_t registers_per_thread = 0;
  OpKind kind = OpKind::kKernel;
  CopyKind copy_kind = CopyKind::kUnknown;
  MemKind src_kind = MemKind::kUnknown;  // memcpy; memset: memory kind in src_kind
  MemKind dst_kind = MemKind::kUnknown;
  std::uint8_t flags = 0;             // op_flag bits

  Ns duration() const { return end - start; }
  bool isCopy() const { return kind == OpKind::kMemcpy; }
};

// A kernel's grid (blocks) and block (threads) in x, y, z as launched. GpuOp keeps only their
// products (what the metrics use); the dimensions of kernels that are not 1-D live in
// Trace::kernel_dims (24 bytes each), so the common 1-D launch costs nothing per op and a trace of
// only 2-D kernels stays within the memory budget above (64 + 24 bytes per op).
struct KernelDims {
  std::array<std::uint32_t, 3> grid{1, 1, 1};
  std::array<std::uint16_t, 3> block{1, 1, 1};  // at most 1024 threads per block
  bool oneDimensional() const { return grid[1] == 1 && grid[2] == 1 && block[1] == 1 && block[2] == 1; }
};

// An entry of Trace::kernel_dims: the dimensions of the kernel at Trace::ops[op].
struct OpDims {
  std::uint32_t op = 0;
  KernelDims dims;
};

// The engine an op occupies: kernels -> compute, memsets -> memset, copies by direction
// (HtoD/HtoA -> h2d, DtoH/AtoH -> d2h, DtoD/AtoA/AtoD/DtoA -> d2d, anything else -> other copy).
// Never kComm: telling communication kernels apart needs their names (CommunicationKernels).
inline Engine engineOf(const GpuOp& op) {  // inline: a call per op in most passes
  switch (op.kind) {
    case OpKind::kKernel: return Engine::kCompute;
    case OpKind::kMemset: return Engine::kMemset;
    case OpKind::kMemcpy: break;
  }
  switch (op.copy_kind) {
    case CopyKind::kHtoD:
    case CopyKind::kHtoA:
    case CopyKind::kUvmHtoD: return Engine::kH2D;
    case CopyKind::kDtoH:
    case CopyKind::kAtoH:
    case CopyKind::kUvmDtoH: return Engine::kD2H;
    case CopyKind::kDtoD:
    case CopyKind::kAtoA:
    case CopyKind::kAtoD:
    case CopyKind::kDtoA:
    case CopyKind::kUvmDtoD: return Engine::kD2D;
    default: return Engine::kOtherCopy;
  }
}

// The queue an engine's ops wait in on the device, 0 to kEngineSlots - 1: 0 the SMs (compute and
// communication kernels), 1 HtoD, 2 DtoH, 3 other copies (DtoD and the rest), 4 memsets.
inline constexpr std::size_t kEngineSlots = 5;
std::uint8_t engineSlot(Engine engine);

// A CUDA runtime (or driver) API call on a host thread.
struct RuntimeCall {
  Ns start = 0;
  Ns end = 0;
  std::uint32_t correlation_id = 0;
  std::uint32_t pid = 0;
  std::uint32_t tid = 0;
  StringId name = kNoString;   // as CUPTI/nsys report it, e.g. "cudaMemcpyAsync_v3020"
  std::int32_t return_value = 0;
  bool is_driver = false;
};

// The host thread a call ran on, as one key: (pid, tid).
inline std::uint64_t threadKey(const RuntimeCall& call) {
  return (static_cast<std::uint64_t>(call.pid) << 32) | call.tid;
}

// A synchronization record (CUPTI_ACTIVITY_KIND_SYNCHRONIZATION).
struct SyncEvent {
  Ns start = 0;
  Ns end = 0;
  std::uint32_t correlation_id = 0;
  std::uint32_t stream_id = 0;        // 0xFFFFFFFF for context/event syncs
  std::uint32_t context_id = 0;
  std::uint32_t pid = 0;
  std::uint64_t event_id = 0;
  std::uint16_t device_id = 0;
  SyncType type = SyncType::kUnknown;
};

// A cudaEventRecord as our collector writes it (CUPTI_ACTIVITY_KIND_CUDA_EVENT; nsys exports have
// none): the stream the event was recorded on and the record call's correlation id, which tell
// exactly which op a cudaStreamWaitEvent on the same event waited for.
struct CudaEventRecord {
  std::uint32_t correlation_id = 0;
  std::uint32_t stream_id = 0;
  std::uint32_t context_id = 0;
  std::uint32_t pid = 0;
  std::uint64_t event_id = 0;
  std::uint16_t device_id = 0;
};

// An NVTX range (push/pop or start/end) or mark (start == end).
struct NvtxRange {
  Ns start = 0;
  Ns end = 0;
  StringId text = kNoString;
  StringId domain = kNoString;
  std::uint32_t pid = 0;
  std::uint32_t tid = 0;
  std::int32_t event_type = 0;        // schema::NvtxEventType
  std::int32_t depth = 0;             // nesting depth for push/pop ranges (0 = outermost)
};

// Unified (managed) memory, from CUPTI's unified-memory counters (our collector) or an nsys
// export: what the driver did on demand, outside any stream. Migrations are kept apart from
// Trace::ops (docs/metrics.md, "Unified memory"): they have no stream, no API call and no
// engine queue of their own, so the overlap metrics and the copy findings do not count them.
struct UmPageFaultGroup {  // CUDA_UM_GPU_PAGE_FAULT_EVENTS: the driver servicing faults on a page
  Ns start = 0;
  Ns end = 0;                         // when the driver queued the replay of the faulting accesses
  std::uint64_t address = 0;          // the faulting page's virtual address
  std::uint32_t faults = 0;           // page faults grouped in this record (numberOfPageFaults)
  std::uint32_t pid = 0;
  std::uint16_t device_id = 0;
  schema::UmAccessType access = schema::UmAccessType::kUnknown;
};

struct UmCpuFault {  // CUDA_UM_CPU_PAGE_FAULT_EVENTS
  Ns time = 0;
  std::uint64_t address = 0;
  std::uint32_t pid = 0;
};

struct UmMigration {  // CUPTI_ACTIVITY_KIND_MEMCPY rows with copyKind 11, 12 or 13
  Ns start = 0;
  Ns end = 0;
  std::uint64_t bytes = 0;
  std::uint64_t address = 0;          // virtualAddress; 0 when unknown
  std::uint32_t pid = 0;
  std::uint16_t device_id = 0;        // the GPU end (deviceId)
  CopyKind direction = CopyKind::kUvmHtoD;
  schema::UmMigrationCause cause = schema::UmMigrationCause::kUnknown;
};

struct UmThrashing {  // CUOVERLAP_UM_THRASHING_EVENTS (our collector only)
  Ns time = 0;
  std::uint64_t address = 0;
  std::uint64_t bytes = 0;
  std::uint64_t devices = 0;          // bit d: device d fought for the region
  std::uint32_t pid = 0;
  bool remote_map = false;            // the driver mapped the region remotely instead of moving it
};

// Each vector sorted by start (time).
struct UnifiedMemory {
  std::vector<UmPageFaultGroup> gpu_faults;
  std::vector<UmCpuFault> cpu_faults;
  std::vector<UmMigration> migrations;
  std::vector<UmThrashing> thrashing;
  bool empty() const {
    return gpu_faults.empty() && cpu_faults.empty() && migrations.empty() && thrashing.empty();
  }
};

// A fault group of device `device` that the driver served for a GPU page fault (not an explicit
// prefetch: access type "prefetch").
inline bool servedFault(const UmPageFaultGroup& f, std::uint16_t device) {
  return f.device_id == device && f.access != schema::UmAccessType::kPrefetch;
}

// A migration to device `device` that the driver made for a fault (not an explicit prefetch:
// cause "user").
inline bool faultMigration(const UmMigration& m, std::uint16_t device) {
  return m.device_id == device && m.direction == CopyKind::kUvmHtoD &&
         m.cause != schema::UmMigrationCause::kUser;
}

// GPU metrics sampled over time: GPU_METRICS as our collector writes it (CUOVERLAP_GPU_METRICS, experimental)
// (CUPTI PM sampling) or nsys's `--gpu-metrics-devices` exports it. A sample's value covers the
// GPU time from its timestamp to the series' next sample (at most interval_ns later: a longer gap
// is samples lost). Names carry the unit ("DRAM Read [bytes]": bytes in the sample; "... [%...]":
// its average).
struct GpuMetricSeries {
  std::uint16_t device_id = 0;  // GPU_METRICS.typeId
  std::string name;             // TARGET_INFO_GPU_METRICS.metricName
  std::vector<Ns> times;        // sample starts, sorted
  std::vector<double> values;
};

struct GpuMetrics {
  std::vector<GpuMetricSeries> series;  // sorted by (device, name)
  Ns interval = 0;  // the sampling interval: the session's, else the series' median spacing
  bool empty() const { return series.empty(); }
};

// How a stream came to be, where the trace tells (our collector's CUOVERLAP_STREAM_ORIGIN,
// docs/schema.md): CUPTI flags a per-thread default stream and a created blocking stream alike
// (StreamFlag::kDefault). kUnknown without the table (nsys exports, older traces).
enum class StreamOrigin : std::uint8_t {
  kUnknown = 0,
  kCreated = 1,    // by cudaStreamCreate* / cuStreamCreate*
  kPerThread = 2,  // a per-thread default stream (cudaStreamPerThread, --default-stream per-thread)
  kContext = 3,    // the context's own: the legacy NULL stream and the driver's internal streams
};

struct Stream {
  std::uint32_t stream_id = 0;
  std::uint32_t context_id = 0;
  std::uint32_t pid = 0;
  std::int32_t priority = 0;
  StreamFlag flag = StreamFlag::kUnknown;
  StreamOrigin origin = StreamOrigin::kUnknown;
};

struct Context {
  std::uint32_t context_id = 0;
  std::uint32_t pid = 0;
  std::uint16_t device_id = 0;
  std::optional<std::uint32_t> null_stream_id;  // the legacy default stream
};

struct Device {
  std::uint16_t device_id = 0;
  std::string name;
  std::int32_t sm_count = 0;
  std::int32_t compute_major = 0;
  std::int32_t compute_minor = 0;
  std::uint64_t total_memory = 0;
  std::int32_t async_engines = 0;
  std::int32_t concurrent_kernels = -1;  // -1 unknown
  std::int32_t max_threads_per_sm = 0;   // maxWarpsPerSm * threadsPerWarp
  std::int32_t max_blocks_per_sm = 0;
  std::int32_t max_registers_per_sm = 0;
  std::int64_t max_shared_mem_per_sm = 0;
  std::int32_t pcie_generation = 0;       // the host link's maximum (our traces); 0 unknown
  std::int32_t pcie_width = 0;            // lanes; 0 unknown
  std::uint64_t l2_bytes = 0;             // the L2 cache's size; 0 unknown
};

// One traced process: what the launcher told it (rank variables) and how it was started. Filled
// from our session table (one set of rows per process), from nsys's process tables, or from a
// Kineto trace's distributedInfo; ranks stay empty when nothing set them.
struct ProcessInfo {
  std::uint32_t pid = 0;
  std::string command;
  std::string host;
  std::optional<std::int32_t> rank;        // RANK, OMPI_COMM_WORLD_RANK, PMI_RANK, SLURM_PROCID
  std::optional<std::int32_t> local_rank;  // LOCAL_RANK, OMPI_COMM_WORLD_LOCAL_RANK, SLURM_LOCALID
  std::optional<std::int32_t> world_size;  // WORLD_SIZE, OMPI_COMM_WORLD_SIZE, PMI_SIZE, SLURM_NTASKS
};

enum class TraceSource : std::uint8_t { kCuoverlap, kNsys, kKineto };

struct TraceIndex;  // trace_index.cpp: lookups over a Trace, built on first use
namespace diagnosis {
class CallIndex;  // diagnosis/call_index.cpp: the runtime calls and sync records by process
}

// Holds the TraceIndex and the CallIndex of one Trace. A copy starts empty (the copy's vectors are new), a move
// keeps it (the vectors move with their storage).
class TraceIndexCache {
 public:
  TraceIndexCache() = default;
  TraceIndexCache(const TraceIndexCache&) {}
  TraceIndexCache& operator=(const TraceIndexCache&) {
    index.reset();
    calls.reset();
    return *this;
  }
  TraceIndexCache(TraceIndexCache&&) noexcept = default;
  TraceIndexCache& operator=(TraceIndexCache&&) noexcept = default;
  ~TraceIndexCache() = default;

  std::shared_ptr<TraceIndex> index;
  std::shared_ptr<diagnosis::CallIndex> calls;
};

// One loaded trace file. Vectors are sorted by start time by the reader.
// What a kernel, copy or memset touched (CUOVERLAP_OP_BUFFERS: our collector records them from
// the driver's launch, copy and memset calls; nsys exports have none). A copy reads [address,
// address + bytes) of its source and writes that of its destination, a memset writes its range; a
// kernel argument points into the allocation [address, address + bytes), which the kernel may read
// or write. Matched to its op by (pid, correlation id).
struct OpBuffer {
  std::uint32_t pid = 0;
  std::uint32_t correlation_id = 0;
  std::uint64_t address = 0;
  std::uint64_t bytes = 0;
  schema::BufferAccess access = schema::BufferAccess::kKernelArgument;

  bool writes() const { return access != schema::BufferAccess::kRead; }
};

// An allocation or free of device, pinned-host or managed memory (CUDA_GPU_MEMORY_USAGE_EVENTS:
// our collector records every one, CUPTI's MEMORY2 records; nsys with --cuda-memory-usage=true),
// matched to its API call by (pid, correlation id); 0 where the row names none.
struct MemoryEvent {
  Ns time = 0;
  std::uint32_t pid = 0;
  std::uint32_t correlation_id = 0;
  std::uint64_t address = 0;
  std::uint64_t bytes = 0;
  MemKind kind = MemKind::kUnknown;
  std::uint16_t device_id = 0;
  bool allocation = true;  // false: a free
};

struct Trace {
  std::string path;
  TraceSource source = TraceSource::kNsys;
  std::vector<std::string> strings{std::string()};  // interned; strings[0] == ""
  std::vector<GpuOp> ops;
  std::vector<OpDims> kernel_dims;  // kernels launched with a 2-D/3-D grid or block, by op index
  std::vector<RuntimeCall> runtime_calls;
  std::vector<SyncEvent> syncs;
  std::vector<CudaEventRecord> event_records;  // sorted by correlation id
  std::vector<NvtxRange> nvtx;
  UnifiedMemory unified_memory;
  GpuMetrics gpu_metrics;
  std::vector<OpBuffer> op_buffers;  // sorted by (pid, correlation id); empty when not recorded
  std::vector<MemoryEvent> memory_events;  // sorted by time; empty when not recorded
  std::vector<Stream> streams;
  std::vector<Context> contexts;
  std::vector<Device> devices;
  std::vector<std::pair<std::string, std::string>> session;  // CUOVERLAP_SESSION rows
  std::vector<ProcessInfo> processes;  // sorted by pid; may be empty when the source has none
  // About the input itself, shown by every report: e.g. an unfinished recording.
  std::vector<std::string> warnings;
  // Cache behind trace_index.h; each index is rebuilt when its vector is reallocated or resized.
  mutable TraceIndexCache index_cache;

  std::string_view str(StringId id) const {
    return id < strings.size() ? std::string_view(strings[id]) : std::string_view();
  }
};

// Trace::op_buffers' sort key: an op buffer's (pid, correlation id), an op's to find its rows.
inline std::uint64_t opBufferKey(std::uint32_t pid, std::uint32_t correlation_id) {
  return (std::uint64_t{pid} << 32) | correlation_id;
}

// The buffers recorded for `op` (none: not recorded, or an op no recorded call launched, such as
// a graph's kernels).
inline std::pair<const OpBuffer*, const OpBuffer*> opBuffersOf(const Trace& trace, const GpuOp& op) {
  const OpBuffer* first = trace.op_buffers.data();
  const OpBuffer* last = first + trace.op_buffers.size();
  if (op.correlation_id == 0) return {last, last};
  const std::uint64_t wanted = opBufferKey(op.pid, op.correlation_id);
  first = std::lower_bound(first, last, wanted, [](const OpBuffer& b, std::uint64_t key) {
    return opBufferKey(b.pid, b.correlation_id) < key;
  });
  last = std::upper_bound(first, last, wanted, [](std::uint64_t key, const OpBuffer& b) {
    return key < opBufferKey(b.pid, b.correlation_id);
  });
  return {first, last};
}

// The size of the largest buffer recorded for `op` (0: none recorded).
inline std::uint64_t largestOpBuffer(const Trace& trace, const GpuOp& op) {
  const auto [first, last] = opBuffersOf(trace, op);
  std::uint64_t bytes = 0;
  for (const OpBuffer* b = first; b != last; ++b) bytes = std::max(bytes, b->bytes);
  return bytes;
}

// The grid and block of trace.ops[op_index]: from Trace::kernel_dims, else (grid_blocks, 1, 1) x
// (block_threads, 1, 1), a kernel launched in 1-D.
inline KernelDims kernelDimsOf(const Trace& trace, std::size_t op_index) {
  const auto& table = trace.kernel_dims;
  const auto it = std::lower_bound(table.begin(), table.end(), op_index,
                                   [](const OpDims& d, std::size_t i) { return std::size_t{d.op} < i; });
  if (it != table.end() && it->op == op_index) return it->dims;
  KernelDims dims;
  dims.grid[0] = trace.ops[op_index].grid_blocks;
  dims.block[0] = trace.ops[op_index].block_threads;
  return dims;
}

// For readers: records the dimensions of the kernel about to be appended to trace.ops when it is
// not 1-D.
inline void addKernelDims(Trace& trace, const KernelDims& dims) {
  if (dims.oneDimensional() || trace.ops.size() > UINT32_MAX) return;
  trace.kernel_dims.push_back({static_cast<std::uint32_t>(trace.ops.size()), dims});
}

}  // namespace cuoverlap
