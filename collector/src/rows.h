// Plain rows produced from CUPTI activity records: the boundary between the CUPTI adapter (the
// only code that includes cupti.h) and the SQLite writer, which knows nothing about CUPTI.
// Times are CUPTI nanoseconds; string pointers are owned by CUPTI and valid only while the row is
// being written (the writer copies them into StringIds).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace cuoverlap::collector {

struct KernelRow {
  std::uint64_t start = 0, end = 0;
  std::uint32_t device_id = 0, context_id = 0, stream_id = 0, correlation_id = 0;
  const char* name = nullptr;  // mangled when the compiler mangled it
  std::int32_t grid[3] = {0, 0, 0}, block[3] = {0, 0, 0};
  std::uint32_t registers_per_thread = 0;
  std::int32_t static_shared = 0, dynamic_shared = 0;
  std::uint32_t local_per_thread = 0;
  std::uint64_t local_total = 0;
  std::int64_t grid_id = 0;
  std::uint32_t shared_executed = 0;
  std::uint64_t graph_node_id = 0;
  std::uint32_t graph_id = 0;
  std::uint8_t launch_type = 0, cache_config = 0, shmem_limit_config = 0;
};

// MEMCPY and MEMCPY2 (peer) records; memory kinds already renumbered to the nsys enum.
struct MemcpyRow {
  std::uint64_t start = 0, end = 0, bytes = 0;
  std::uint32_t device_id = 0, context_id = 0, stream_id = 0, correlation_id = 0;
  std::uint8_t copy_kind = 0, src_kind = 0, dst_kind = 0;
  bool async = false;
  bool peer = false;  // src/dst device and context ids below are meaningful
  std::uint32_t src_device = 0, src_context = 0, dst_device = 0, dst_context = 0;
  std::uint64_t graph_node_id = 0;
  std::uint32_t graph_id = 0;
};

struct MemsetRow {
  std::uint64_t start = 0, end = 0, bytes = 0;
  std::uint32_t device_id = 0, context_id = 0, stream_id = 0, correlation_id = 0;
  std::uint32_t value = 0;
  std::uint8_t mem_kind = 0;  // nsys enum
  bool async = false;
  std::uint64_t graph_node_id = 0;
  std::uint32_t graph_id = 0;
};

enum class ApiKind : std::uint8_t { kRuntime = 0, kDriver = 1 };  // = nsys eventClass

struct ApiRow {
  std::uint64_t start = 0, end = 0;
  ApiKind kind = ApiKind::kRuntime;
  std::uint32_t callback_id = 0, process_id = 0, thread_id = 0, correlation_id = 0;
  std::uint32_t return_value = 0;
  const char* name = nullptr;  // e.g. "cudaMemcpyAsync_v3020"; null when CUPTI does not know it
};

struct SyncRow {
  std::uint64_t start = 0, end = 0;
  std::uint32_t context_id = 0, stream_id = 0, correlation_id = 0, event_id = 0;
  std::uint8_t sync_type = 0;  // nsys = CUPTI numbering
};

struct CudaEventRow {
  std::uint64_t device_timestamp = 0, sync_id = 0;
  std::uint32_t device_id = 0, context_id = 0, stream_id = 0, correlation_id = 0, event_id = 0;
};

struct StreamRow {
  std::uint32_t context_id = 0, stream_id = 0, priority = 0, flag = 0;
  // The API call the record is associated with: a created stream's cudaStreamCreate*, a
  // per-thread default stream's first use (docs/collector.md, "Per-thread default streams").
  std::uint32_t correlation_id = 0;
};

struct ContextRow {
  std::uint32_t context_id = 0, device_id = 0, null_stream_id = 0;
};

struct DeviceRow {
  std::uint32_t id = 0;
  const char* name = nullptr;
  std::uint64_t global_memory_bytes = 0, memory_bandwidth = 0;
  std::uint32_t l2_cache = 0, clock_khz = 0, sm_count = 0, threads_per_warp = 0;
  std::uint32_t async_engines = 0;  // numMemcpyEngines, replaced by asyncEngineCount when known
  std::uint32_t max_warps_per_sm = 0, max_blocks_per_sm = 0, max_shmem_per_sm = 0;
  std::uint32_t max_registers_per_sm = 0, max_registers_per_block = 0;
  std::uint32_t max_shmem_per_block = 0, max_threads_per_block = 0;
  std::uint32_t compute_major = 0, compute_minor = 0;
  int concurrent_kernels = -1;  // -1: unknown
  char uuid[48] = {};
  std::string pci_bus_id;       // "0000:1B:00.0"; empty when unknown
  int pcie_generation = 0;      // the host link's maximum (pcie_link.h); 0 when unknown
  int pcie_width = 0;
};

// One NVTX marker record (MARKER kind); the NvtxAssembler pairs start and end into ranges.
enum class MarkerPhase : std::uint8_t { kInstant, kStart, kEnd };

struct MarkerRow {
  MarkerPhase phase = MarkerPhase::kInstant;
  std::uint64_t timestamp = 0;
  std::uint32_t id = 0, process_id = 0, thread_id = 0;
  bool thread_scoped = false;  // CUPTI attributed the marker to a thread, not the process
  const char* name = nullptr;
  const char* domain = nullptr;  // null: the default domain
};

struct MarkerDataRow {
  std::uint32_t id = 0, color = 0, category = 0;
  bool has_color = false;
};

struct OverheadRow {
  std::uint64_t start = 0, end = 0;
  std::uint32_t thread_id = 0;
  const char* name = nullptr;
};

// One CUPTI unified-memory counter record (UNIFIED_MEMORY_COUNTER kind), kinds as CUPTI numbers
// them; the writer turns each into the nsys table of its kind.
enum class UnifiedMemoryKind : std::uint8_t {
  kBytesHtoD, kBytesDtoH, kBytesDtoD, kGpuPageFault, kCpuPageFault, kThrashing, kRemoteMap,
  kOther,
};

struct UnifiedMemoryRow {
  UnifiedMemoryKind kind = UnifiedMemoryKind::kOther;
  std::uint64_t start = 0, end = 0;
  std::uint64_t value = 0;    // bytes (migrations, thrashing, remote map); fault groups (GPU fault)
  std::uint64_t address = 0;  // the virtual base address of the pages
  std::uint32_t src_id = 0, dst_id = 0, process_id = 0;
  std::uint32_t flags = 0;    // access type (GPU fault) or migration cause (migrations)
  std::uint64_t devices = 0;  // thrashing: bit d set when device d fought for the region
};

// One CUPTI memory record (MEMORY2 kind): an allocation or a free of device, pinned-host or managed
// memory, by the API call of `correlation_id` (CUDA_GPU_MEMORY_USAGE_EVENTS). Memory pools'
// allocations carry the pool's state (`pool`); others none.
struct MemoryRow {
  std::uint64_t timestamp = 0, address = 0, bytes = 0, pc = 0;
  std::uint32_t process_id = 0, device_id = 0, context_id = 0, stream_id = 0, correlation_id = 0;
  bool allocation = true;    // false: a free
  std::uint8_t mem_kind = 0;  // nsys enum
  bool has_stream = false;    // an asynchronous operation's stream (cudaMallocAsync, cudaFreeAsync)
  const char* name = nullptr;  // a static allocation's variable
  bool pool = false;           // the pool columns below are meaningful
  bool pool_imported = false;  // imported from another process (pool_size is then its pid)
  std::uint64_t pool_address = 0, pool_release_threshold = 0, pool_size = 0, pool_utilized = 0;
};

// GPU metrics (cupti/gpu_metrics.h): the metrics sampled on a GPU, then their samples. A sample
// row is one metric's value over [start, the GPU's next sample).
struct GpuMetricName {
  std::uint32_t device = 0;
  std::uint32_t metric = 0;  // the same id for the same metric on every GPU
  std::string name;          // with its unit: "DRAM Read [bytes]"
  std::string source;        // "GPU 0 GH100 (CUPTI PM sampling)"
};
struct GpuMetricValue {
  std::uint64_t start = 0;
  std::uint32_t device = 0;
  std::uint32_t metric = 0;
  double value = 0;
};
struct GpuMetricBatch {
  std::vector<GpuMetricName> names;
  std::vector<GpuMetricValue> values;
};

// One piece of memory a kernel, copy or memset touched (CUOVERLAP_OP_BUFFERS, cupti/op_buffers.h),
// not from an activity buffer: recorded by the driver callback of the launching call.
struct OpBufferRow {
  std::uint32_t correlation_id = 0;
  std::uint64_t address = 0;
  std::uint64_t bytes = 0;
  std::uint8_t access = 0;  // schema::BufferAccess
};

// Receives the rows translated from one activity buffer. Implemented by the SQLite writer.
class RowSink {
 public:
  virtual ~RowSink() = default;
  virtual void onKernel(const KernelRow& row) = 0;
  virtual void onMemcpy(const MemcpyRow& row) = 0;
  virtual void onMemset(const MemsetRow& row) = 0;
  virtual void onApi(const ApiRow& row) = 0;
  virtual void onSync(const SyncRow& row) = 0;
  virtual void onCudaEvent(const CudaEventRow& row) = 0;
  virtual void onStream(const StreamRow& row) = 0;
  virtual void onContext(const ContextRow& row) = 0;
  virtual void onDevice(const DeviceRow& row) = 0;
  virtual void onMarker(const MarkerRow& row) = 0;
  virtual void onMarkerData(const MarkerDataRow& row) = 0;
  virtual void onOverhead(const OverheadRow& row) = 0;
  virtual void onUnifiedMemory(const UnifiedMemoryRow& row) = 0;
  virtual void onMemory(const MemoryRow& row) = 0;
  virtual void onUnknownKind(int cupti_kind) = 0;
};

}  // namespace cuoverlap::collector
