// The trace schema: the one home of table names, columns and enum numbering shared by the
// collector (writer) and the analyzer (reader).
//
// Our files use the Nsight Systems SQLite export schema (`nsys export --type sqlite`, schema 3.x)
// for every table that nsys also has, with the same table names, column names and enum values, so
// that one reader handles both. Columns marked "cuoverlap extension" are ours; the reader never
// requires them. CUOVERLAP_SESSION is our own table. docs/schema.md lists which columns we write
// and which the analyzer reads.
#pragma once

#include <cstdint>
#include <string_view>

namespace cuoverlap::schema {

// ---- Table names -------------------------------------------------------------------------------
inline constexpr std::string_view kStringIds = "StringIds";
inline constexpr std::string_view kKernelTable = "CUPTI_ACTIVITY_KIND_KERNEL";
inline constexpr std::string_view kMemcpyTable = "CUPTI_ACTIVITY_KIND_MEMCPY";
inline constexpr std::string_view kMemsetTable = "CUPTI_ACTIVITY_KIND_MEMSET";
inline constexpr std::string_view kRuntimeTable = "CUPTI_ACTIVITY_KIND_RUNTIME";
inline constexpr std::string_view kSyncTable = "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION";
inline constexpr std::string_view kNvtxTable = "NVTX_EVENTS";
inline constexpr std::string_view kGpuTable = "TARGET_INFO_GPU";
inline constexpr std::string_view kStreamTable = "TARGET_INFO_CUDA_STREAM";
inline constexpr std::string_view kContextInfoTable = "TARGET_INFO_CUDA_CONTEXT_INFO";
inline constexpr std::string_view kNullStreamTable = "TARGET_INFO_CUDA_NULL_STREAM";  // older nsys
inline constexpr std::string_view kSessionTable = "CUOVERLAP_SESSION";                // ours

// ---- Enum numbering (Nsight Systems export) ----------------------------------------------------
// ENUM_CUDA_MEMCPY_OPER: same numbering as CUPTI's CUpti_ActivityMemcpyKind.
enum class CopyKind : std::uint8_t {
  kUnknown = 0, kHtoD = 1, kDtoH = 2, kHtoA = 3, kAtoH = 4, kAtoA = 5, kAtoD = 6, kDtoA = 7,
  kDtoD = 8, kHtoH = 9, kPtoP = 10, kUvmHtoD = 11, kUvmDtoH = 12, kUvmDtoD = 13,
};

// ENUM_CUDA_MEM_KIND: differs from CUPTI (CUPTI: 0 unknown, 1 pageable, 2 pinned, 3 device, ...).
enum class MemKind : std::uint8_t {
  kPageable = 0, kPinned = 1, kDevice = 2, kArray = 3, kManaged = 4, kDeviceStatic = 5,
  kManagedStatic = 6, kUnknown = 7,
};

// ENUM_CUDA_UNIF_MEM_ACCESS_TYPE (same as CUPTI's CUpti_ActivityUnifiedMemoryAccessType).
enum class UmAccessType : std::uint8_t {
  kUnknown = 0, kRead = 1, kWrite = 2, kAtomic = 3, kPrefetch = 4,
};

// ENUM_CUDA_UNIF_MEM_MIGRATION, CUPTI_ACTIVITY_KIND_MEMCPY.migrationCause (same as CUPTI's
// CUpti_ActivityUnifiedMemoryMigrationCause).
enum class UmMigrationCause : std::uint8_t {
  kUnknown = 0, kUser = 1, kCoherence = 2, kPrefetch = 3, kEviction = 4, kAccessCounters = 5,
};

constexpr bool isUnifiedMemoryCopy(CopyKind kind) {
  return kind == CopyKind::kUvmHtoD || kind == CopyKind::kUvmDtoH || kind == CopyKind::kUvmDtoD;
}

// ENUM_CUPTI_SYNC_TYPE (same as CUPTI).
enum class SyncType : std::uint8_t {
  kUnknown = 0, kEventSynchronize = 1, kStreamWaitEvent = 2, kStreamSynchronize = 3,
  kContextSynchronize = 4,
};

// TARGET_INFO_CUDA_STREAM.flag (same as CUPTI's CUpti_ActivityStreamFlag).
enum class StreamFlag : std::uint8_t { kUnknown = 0, kDefault = 1, kNonBlocking = 2, kNull = 3 };

// ENUM_NSYS_EVENT_TYPE values used in NVTX_EVENTS.eventType.
enum class NvtxEventType : std::int32_t {
  kMark = 34, kPushPopRange = 59, kStartEndRange = 60, kDomainCreate = 75,
};

// ENUM_NSYS_EVENT_CLASS values used in CUPTI_ACTIVITY_KIND_RUNTIME.eventClass.
enum class EventClass : std::int32_t { kCudaRuntime = 0, kCudaDriver = 1 };

// globalPid / globalTid serialization used by nsys: PID in bits 24..47, TID in bits 0..23.
constexpr std::uint64_t encodeGlobalTid(std::uint32_t pid, std::uint32_t tid) {
  return (static_cast<std::uint64_t>(pid & 0xFFFFFFu) << 24) | (tid & 0xFFFFFFu);
}
constexpr std::uint64_t encodeGlobalPid(std::uint32_t pid) { return encodeGlobalTid(pid, 0); }
constexpr std::uint32_t pidOf(std::uint64_t global_id) {
  return static_cast<std::uint32_t>((global_id >> 24) & 0xFFFFFFu);
}
constexpr std::uint32_t tidOf(std::uint64_t global_id) {
  return static_cast<std::uint32_t>(global_id & 0xFFFFFFu);
}

// ---- DDL written by the collector ---------------------------------------------------------------
// Column order and names follow nsys export schema 3.x. The reader looks columns up by name.
inline constexpr const char* kCreateTables = R"SQL(
CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (
  start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
  contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER,
  globalPid INTEGER, demangledName INTEGER NOT NULL, shortName INTEGER NOT NULL,
  mangledName INTEGER, launchType INTEGER, cacheConfig INTEGER,
  registersPerThread INTEGER NOT NULL, gridX INTEGER NOT NULL, gridY INTEGER NOT NULL,
  gridZ INTEGER NOT NULL, blockX INTEGER NOT NULL, blockY INTEGER NOT NULL,
  blockZ INTEGER NOT NULL, staticSharedMemory INTEGER NOT NULL,
  dynamicSharedMemory INTEGER NOT NULL, localMemoryPerThread INTEGER NOT NULL,
  localMemoryTotal INTEGER NOT NULL, gridId INTEGER NOT NULL, sharedMemoryExecuted INTEGER,
  graphNodeId INTEGER, sharedMemoryLimitConfig INTEGER,
  graphId INTEGER -- cuoverlap extension
);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (
  start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
  contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER,
  globalPid INTEGER, bytes INTEGER NOT NULL, copyKind INTEGER NOT NULL,
  deprecatedSrcId INTEGER, srcKind INTEGER, dstKind INTEGER, srcDeviceId INTEGER,
  srcContextId INTEGER, dstDeviceId INTEGER, dstContextId INTEGER, migrationCause INTEGER,
  graphNodeId INTEGER, virtualAddress INTEGER,
  async INTEGER, -- cuoverlap extension: CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC
  graphId INTEGER -- cuoverlap extension
);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (
  start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
  contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER,
  globalPid INTEGER, value INTEGER NOT NULL, bytes INTEGER NOT NULL, graphNodeId INTEGER,
  memKind INTEGER,
  async INTEGER, -- cuoverlap extension: CUPTI_ACTIVITY_FLAG_MEMSET_ASYNC
  graphId INTEGER -- cuoverlap extension
);
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (
  start INTEGER NOT NULL, end INTEGER NOT NULL, eventClass INTEGER NOT NULL,
  globalTid INTEGER, correlationId INTEGER, nameId INTEGER NOT NULL,
  returnValue INTEGER NOT NULL, callchainId INTEGER
);
CREATE TABLE CUPTI_ACTIVITY_KIND_SYNCHRONIZATION (
  start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
  contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER,
  globalPid INTEGER, syncType INTEGER NOT NULL, eventId INTEGER NOT NULL
);
CREATE TABLE NVTX_EVENTS (
  start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL, rangeId INTEGER,
  category INTEGER, color INTEGER, text TEXT, globalTid INTEGER, endGlobalTid INTEGER,
  textId INTEGER, domainId INTEGER, uint64Value INTEGER, int64Value INTEGER,
  doubleValue REAL, uint32Value INTEGER, int32Value INTEGER, floatValue REAL,
  jsonTextId INTEGER, jsonText TEXT
);
CREATE TABLE TARGET_INFO_GPU (
  vmId INTEGER NOT NULL, id INTEGER NOT NULL, name TEXT, busLocation TEXT,
  isDiscrete INTEGER, l2CacheSize INTEGER, totalMemory INTEGER, memoryBandwidth INTEGER,
  clockRate INTEGER, smCount INTEGER, uuid TEXT, chipName TEXT, cuDevice INTEGER,
  maxRegistersPerBlock INTEGER, maxShmemPerBlock INTEGER, maxShmemPerBlockOptin INTEGER,
  maxShmemPerSm INTEGER, maxRegistersPerSm INTEGER, threadsPerWarp INTEGER,
  asyncEngines INTEGER, maxWarpsPerSm INTEGER, maxBlocksPerSm INTEGER,
  maxThreadsPerBlock INTEGER, computeMajor INTEGER, computeMinor INTEGER,
  concurrentKernels INTEGER, -- cuoverlap extension
  pcieLinkGen INTEGER, pcieLinkWidth INTEGER -- cuoverlap extension: the host link's maximum
);
CREATE TABLE TARGET_INFO_CUDA_STREAM (
  streamId INTEGER NOT NULL, hwId INTEGER NOT NULL, vmId INTEGER NOT NULL,
  processId INTEGER NOT NULL, contextId INTEGER NOT NULL, priority INTEGER NOT NULL,
  flag INTEGER NOT NULL
);
CREATE TABLE TARGET_INFO_CUDA_CONTEXT_INFO (
  nullStreamId INTEGER NOT NULL, hwId INTEGER NOT NULL, vmId INTEGER NOT NULL,
  processId INTEGER NOT NULL, deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL
);
CREATE TABLE CUOVERLAP_SESSION (
  key TEXT NOT NULL PRIMARY KEY, value TEXT
);
)SQL";

// ---- Tables the collector writes in addition to kCreateTables (added for the collector) --------
inline constexpr std::string_view kProfilerOverheadTable = "PROFILER_OVERHEAD";
inline constexpr std::string_view kCudaEventTable = "CUPTI_ACTIVITY_KIND_CUDA_EVENT";  // ours
// Unified memory (CUPTI unified-memory counters). Migrations are rows of kMemcpyTable with copyKind
// kUvmHtoD/kUvmDtoH/kUvmDtoD, migrationCause and virtualAddress, as nsys writes them.
inline constexpr std::string_view kUmGpuFaultTable = "CUDA_UM_GPU_PAGE_FAULT_EVENTS";
inline constexpr std::string_view kUmCpuFaultTable = "CUDA_UM_CPU_PAGE_FAULT_EVENTS";
inline constexpr std::string_view kUmThrashingTable = "CUOVERLAP_UM_THRASHING_EVENTS";  // ours
// One row per CUPTI STREAM record: the record's correlation id and, where it is that of a
// stream-creating call (cudaStreamCreate*, cuStreamCreate*), the call's name (docs/schema.md).
// CUPTI flags a per-thread default stream and a created blocking stream alike (flag 1); the record
// of a per-thread stream points to the first call that used it, never to a stream-creating one.
inline constexpr std::string_view kStreamOriginTable = "CUOVERLAP_STREAM_ORIGIN";  // ours
// The calls whose correlation id a created stream's record carries: cudaStreamCreate*,
// cuStreamCreate* (every version and flavour: _v3020, WithFlags, _ptsz, ...). The collector names
// them in the table's `creator`; the reader tells created streams by the same rule.
inline bool isStreamCreatingCall(std::string_view name) {
  return name.rfind("cudaStreamCreate", 0) == 0 || name.rfind("cuStreamCreate", 0) == 0;
}

// Device, pinned-host and managed memory allocations and frees (CUPTI MEMORY2 records), as nsys
// exports them with --cuda-memory-usage=true: one row per operation, the allocation's address and
// bytes, keyed to its API call by correlationId (memoryOperationType: MemoryOperation).
inline constexpr std::string_view kMemoryUsageTable = "CUDA_GPU_MEMORY_USAGE_EVENTS";
enum class MemoryOperation : std::uint8_t { kAllocation = 0, kDeallocation = 1 };

// The memory each kernel, copy and memset touched (the table's comment below says how).
inline constexpr std::string_view kOpBuffersTable = "CUOVERLAP_OP_BUFFERS";  // ours
enum class BufferAccess : std::uint8_t { kRead = 1, kWrite = 2, kKernelArgument = 3 };

// PROFILER_OVERHEAD and the unified-memory fault tables as nsys (schema 3.x; the CPU fault's
// CpuInstruction and module name the empty string: the collector resolves no symbols);
// CUDA_EVENT and UM_THRASHING are cuoverlap extensions (cudaEventRecord completions on the GPU;
// thrashing and remote-map records, which nsys does not export). ENUM_* tables carry the nsys
// numbering of the enums above, as `nsys export` writes.
inline constexpr const char* kCreateCollectorTables = R"SQL(
CREATE TABLE PROFILER_OVERHEAD (
  start INTEGER NOT NULL, end INTEGER NOT NULL, globalTid INTEGER, nameId INTEGER NOT NULL,
  returnValue INTEGER NOT NULL
);
CREATE TABLE CUPTI_ACTIVITY_KIND_CUDA_EVENT (
  start INTEGER NOT NULL, deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL,
  streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER, eventId INTEGER NOT NULL,
  eventSyncId INTEGER
);
CREATE TABLE CUDA_UM_GPU_PAGE_FAULT_EVENTS (
  start INTEGER NOT NULL, end INTEGER NOT NULL, globalPid INTEGER NOT NULL,
  deviceId INTEGER NOT NULL, address INTEGER NOT NULL, numberOfPageFaults INTEGER NOT NULL,
  faultAccessType INTEGER NOT NULL
);
CREATE TABLE CUDA_UM_CPU_PAGE_FAULT_EVENTS (
  start INTEGER NOT NULL, globalPid INTEGER NOT NULL, address INTEGER NOT NULL,
  originalFaultPc INTEGER, CpuInstruction INTEGER NOT NULL, module INTEGER NOT NULL,
  unresolvedFaultPc INTEGER, sourceFile INTEGER, sourceLine INTEGER
);
CREATE TABLE CUOVERLAP_UM_THRASHING_EVENTS (
  start INTEGER NOT NULL, globalPid INTEGER NOT NULL, address INTEGER NOT NULL,
  bytes INTEGER NOT NULL, devices INTEGER NOT NULL, -- bit d: device d fought for the region
  kind INTEGER NOT NULL -- 0 thrashing, 1 remote map
);
CREATE TABLE CUOVERLAP_STREAM_ORIGIN (
  processId INTEGER NOT NULL, contextId INTEGER NOT NULL, streamId INTEGER NOT NULL,
  correlationId INTEGER, -- CUpti_ActivityStream.correlationId
  creator TEXT -- the stream-creating call of that correlation id; NULL when none was recorded
);
-- The memory each kernel, copy and memset of the process touched (collector/src/cupti/op_buffers.h),
-- keyed by the op's correlation id: a copy's source (access 1, read) and destination (2, written)
-- and a memset's destination as [address, address + bytes); for a kernel (3, an argument: read,
-- written or both), every allocation an argument points into, whole. Empty when not recorded.
CREATE TABLE CUOVERLAP_OP_BUFFERS (
  globalPid INTEGER NOT NULL, correlationId INTEGER NOT NULL, address INTEGER NOT NULL,
  bytes INTEGER NOT NULL, access INTEGER NOT NULL
);
-- As nsys 2024+ (name: the variable of a static allocation; the pool columns NULL outside a
-- memory pool; pc: CUPTI's program counter of the call, unresolved).
CREATE TABLE CUDA_GPU_MEMORY_USAGE_EVENTS (
  start INTEGER NOT NULL, globalPid INTEGER NOT NULL, deviceId INTEGER NOT NULL,
  contextId INTEGER NOT NULL, address INTEGER NOT NULL, pc INTEGER NOT NULL,
  bytes INTEGER NOT NULL, memKind INTEGER NOT NULL, memoryOperationType INTEGER NOT NULL,
  name TEXT, correlationId INTEGER, streamId INTEGER, localMemoryPoolAddress INTEGER,
  localMemoryPoolReleaseThreshold INTEGER, localMemoryPoolSize INTEGER,
  localMemoryPoolUtilizedSize INTEGER, importedMemoryPoolAddress INTEGER,
  importedMemoryPoolProcessId INTEGER
);
CREATE TABLE ENUM_CUDA_DEV_MEM_EVENT_OPER (id INTEGER NOT NULL PRIMARY KEY, name TEXT, label TEXT);
INSERT INTO ENUM_CUDA_DEV_MEM_EVENT_OPER VALUES
  (0,'CUDA_DEV_MEM_EVENT_OPR_ALLOCATION','Allocation'),
  (1,'CUDA_DEV_MEM_EVENT_OPR_DEALLOCATION','Deallocation');
CREATE TABLE ENUM_CUDA_UNIF_MEM_ACCESS_TYPE (id INTEGER NOT NULL PRIMARY KEY, name TEXT, label TEXT);
INSERT INTO ENUM_CUDA_UNIF_MEM_ACCESS_TYPE VALUES
  (0,'CUDA_UNIFIED_MEMORY_ACCESS_TYPE_UNKNOWN','Unknown'),
  (1,'CUDA_UNIFIED_MEMORY_ACCESS_TYPE_READ','Read'),
  (2,'CUDA_UNIFIED_MEMORY_ACCESS_TYPE_WRITE','Write'),
  (3,'CUDA_UNIFIED_MEMORY_ACCESS_TYPE_ATOMIC','Atomic'),
  (4,'CUDA_UNIFIED_MEMORY_ACCESS_TYPE_PREFETCH','Prefetch');
CREATE TABLE ENUM_CUDA_UNIF_MEM_MIGRATION (id INTEGER NOT NULL PRIMARY KEY, name TEXT, label TEXT);
INSERT INTO ENUM_CUDA_UNIF_MEM_MIGRATION VALUES
  (0,'CUDA_UNIFIED_MEMORY_MIGRATION_CAUSE_UNKNOWN','Unknown'),
  (1,'CUDA_UNIFIED_MEMORY_MIGRATION_CAUSE_USER','User prefetch'),
  (2,'CUDA_UNIFIED_MEMORY_MIGRATION_CAUSE_COHERENCE','Page fault'),
  (3,'CUDA_UNIFIED_MEMORY_MIGRATION_CAUSE_PREFETCH','Speculative prefecth'),
  (4,'CUDA_UNIFIED_MEMORY_MIGRATION_CAUSE_EVICTION','Eviction'),
  (5,'CUDA_UNIFIED_MEMORY_MIGRATION_CAUSE_ACCESS_COUNTERS','Access counters');
CREATE TABLE ENUM_CUDA_MEM_KIND (id INTEGER NOT NULL PRIMARY KEY, name TEXT, label TEXT);
INSERT INTO ENUM_CUDA_MEM_KIND VALUES
  (0,'CUDA_MEMOPR_MEMORY_KIND_PAGEABLE','Pageable'),(1,'CUDA_MEMOPR_MEMORY_KIND_PINNED','Pinned'),
  (2,'CUDA_MEMOPR_MEMORY_KIND_DEVICE','Device'),(3,'CUDA_MEMOPR_MEMORY_KIND_ARRAY','Array'),
  (4,'CUDA_MEMOPR_MEMORY_KIND_MANAGED','Managed'),
  (5,'CUDA_MEMOPR_MEMORY_KIND_DEVICE_STATIC','Device Static'),
  (6,'CUDA_MEMOPR_MEMORY_KIND_MANAGED_STATIC','Managed Static'),
  (7,'CUDA_MEMOPR_MEMORY_KIND_UNKNOWN','Unknown');
CREATE TABLE ENUM_CUDA_MEMCPY_OPER (id INTEGER NOT NULL PRIMARY KEY, name TEXT, label TEXT);
INSERT INTO ENUM_CUDA_MEMCPY_OPER VALUES
  (0,'CUDA_MEMCPY_KIND_UNKNOWN','Unknown'),(1,'CUDA_MEMCPY_KIND_HTOD','Host-to-Device'),
  (2,'CUDA_MEMCPY_KIND_DTOH','Device-to-Host'),(3,'CUDA_MEMCPY_KIND_HTOA','Host-to-Array'),
  (4,'CUDA_MEMCPY_KIND_ATOH','Array-to-Host'),(5,'CUDA_MEMCPY_KIND_ATOA','Array-to-Array'),
  (6,'CUDA_MEMCPY_KIND_ATOD','Array-to-Device'),(7,'CUDA_MEMCPY_KIND_DTOA','Device-to-Array'),
  (8,'CUDA_MEMCPY_KIND_DTOD','Device-to-Device'),(9,'CUDA_MEMCPY_KIND_HTOH','Host-to-Host'),
  (10,'CUDA_MEMCPY_KIND_PTOP','Peer-to-Peer'),
  (11,'CUDA_MEMCPY_KIND_UVM_HTOD','Unified Host-to-Device'),
  (12,'CUDA_MEMCPY_KIND_UVM_DTOH','Unified Device-to-Host'),
  (13,'CUDA_MEMCPY_KIND_UVM_DTOD','Unified Device-to-Device');
CREATE TABLE ENUM_CUPTI_SYNC_TYPE (id INTEGER NOT NULL PRIMARY KEY, name TEXT, label TEXT);
INSERT INTO ENUM_CUPTI_SYNC_TYPE VALUES
  (0,'CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_UNKNOWN','Unknown'),
  (1,'CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE','Event sync'),
  (2,'CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT','Stream wait sync'),
  (3,'CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE','Stream sync'),
  (4,'CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE','Context sync');
CREATE TABLE ENUM_NSYS_EVENT_CLASS (id INTEGER NOT NULL PRIMARY KEY, name TEXT, label TEXT);
INSERT INTO ENUM_NSYS_EVENT_CLASS VALUES
  (0,'TRACE_PROCESS_EVENT_CUDA_RUNTIME','CUDA runtime'),
  (1,'TRACE_PROCESS_EVENT_CUDA_DRIVER','CUDA driver');
CREATE TABLE ENUM_NSYS_EVENT_TYPE (id INTEGER NOT NULL PRIMARY KEY, name TEXT, label TEXT);
INSERT INTO ENUM_NSYS_EVENT_TYPE VALUES
  (34,'NvtxCategory_Mark','NVTX mark'),(59,'NvtxCategory_PushPopRange','NVTX push/pop range'),
  (60,'NvtxCategory_StartEndRange','NVTX start/end range'),
  (75,'NvtxCategory_DomainCreate','NVTX domain create');
)SQL";

// Keys of CUOVERLAP_SESSION (key/value rows so that new facts never change the table's shape).
namespace session_key {
inline constexpr std::string_view kSchema = "schema";            // "cuoverlap.trace/1"
inline constexpr std::string_view kCommand = "command";          // the traced command line
inline constexpr std::string_view kPid = "pid";
inline constexpr std::string_view kHost = "host";
inline constexpr std::string_view kStartNs = "start_ns";         // CUPTI timestamps
inline constexpr std::string_view kEndNs = "end_ns";
inline constexpr std::string_view kCollectorVersion = "collector_version";
inline constexpr std::string_view kCuptiVersion = "cupti_version";
inline constexpr std::string_view kDriverVersion = "driver_version";
inline constexpr std::string_view kDroppedRecords = "dropped_records";
inline constexpr std::string_view kFlushes = "flushes";
inline constexpr std::string_view kOverheadNs = "collector_overhead_ns";
inline constexpr std::string_view kRecordsPrefix = "records.";   // records.kernel, records.memcpy...
// Added for the collector: "1" once the session ended cleanly (absent in a killed process's file),
// CUPTI's own measured overhead (OVERHEAD records), and the writer thread's busy time.
inline constexpr std::string_view kComplete = "complete";
inline constexpr std::string_view kCuptiOverheadNs = "cupti_overhead_ns";
inline constexpr std::string_view kWriterBusyNs = "writer_busy_ns";
// Added for multi-process jobs (issue 10). Written by each process when the launcher set them.
inline constexpr std::string_view kRank = "rank";
inline constexpr std::string_view kLocalRank = "local_rank";
inline constexpr std::string_view kWorldSize = "world_size";
inline constexpr std::string_view kParentPid = "ppid";
inline constexpr std::string_view kApiTracing = "api_tracing";      // "lean" or "all"
inline constexpr std::string_view kLeanApiCalls = "lean_api_calls";  // callback ids enabled one by one
inline constexpr std::string_view kEndedBy = "ended_by";            // exit | signal <N>
// Only after a fault (SIGSEGV, SIGBUS, SIGFPE, SIGILL raised by an instruction): the faulting
// instruction as "FILE+0xOFFSET" (the file mapped there and the offset in it, for addr2line),
// then " in the cuoverlap collector" when that file is the collector itself.
inline constexpr std::string_view kFaultAt = "fault_at";
// Only in a file `record` merged from several processes: how many processes it holds. Each
// process's own rows are in CUOVERLAP_PROCESS_SESSION; the keys here are the job's totals
// (records.*, dropped_records, flushes, overheads summed; start_ns min; end_ns max; complete = 1
// only when every process's session ended cleanly).
inline constexpr std::string_view kProcesses = "processes";
// Only in a trace recorded with a capture window (schema/capture_spec.h): the spec as
// describeCapture writes it, whether the window ever opened (0/1), when it first opened and last
// closed (CUPTI timestamps; closed at the session's end when still open), how many times it
// opened, and (nvtx) how many instances of the range the process ran.
inline constexpr std::string_view kCapture = "capture";
inline constexpr std::string_view kCaptureOpened = "capture_opened";
inline constexpr std::string_view kCaptureOpenNs = "capture_open_ns";
inline constexpr std::string_view kCaptureCloseNs = "capture_close_ns";
inline constexpr std::string_view kCaptureWindows = "capture_windows";
inline constexpr std::string_view kCaptureInstances = "capture_instances";
// With CUOVERLAP_GPU_METRICS (experimental, docs/collector.md): the sampling interval asked for, the GPUs sampled,
// samples written, samples lost (the hardware buffer filled, or left undecoded at exit), and why
// a GPU could not be sampled ("" when all were).
inline constexpr std::string_view kGpuMetricsIntervalNs = "gpu_metrics.interval_ns";
inline constexpr std::string_view kGpuMetricsDevices = "gpu_metrics.devices";
inline constexpr std::string_view kGpuMetricsSamples = "gpu_metrics.samples";
inline constexpr std::string_view kGpuMetricsLost = "gpu_metrics.lost";
inline constexpr std::string_view kGpuMetricsError = "gpu_metrics.error";
}  // namespace session_key

// GPU metrics (CUOVERLAP_GPU_METRICS, CUPTI PM sampling): the tables Nsight Systems' export writes
// for `--gpu-metrics-devices`, created only when metrics were sampled. A GPU_METRICS row is one
// metric of one sample: `timestamp` the sample's start (CUPTI clock), its value covering the
// GPU time up to the next sample of that GPU (session key gpu_metrics.interval_ns apart); typeId
// is the GPU (deviceId), metricId a metric of TARGET_INFO_GPU_METRICS, whose names carry the unit
// ("DRAM Read [bytes]": bytes moved in the sample; "... [% of peak]": the sample's average).
inline constexpr std::string_view kGpuMetricsTable = "GPU_METRICS";
inline constexpr std::string_view kGpuMetricNamesTable = "TARGET_INFO_GPU_METRICS";
inline constexpr const char* kCreateGpuMetricTables = R"SQL(
CREATE TABLE IF NOT EXISTS TARGET_INFO_GPU_METRICS (
  typeId INTEGER NOT NULL, sourceId INTEGER NOT NULL, typeName TEXT NOT NULL,
  metricId INTEGER NOT NULL, metricName TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS GPU_METRICS (
  timestamp INTEGER NOT NULL, typeId INTEGER NOT NULL, metricId INTEGER NOT NULL,
  value INTEGER NOT NULL
);
)SQL";

// A merged file's per-process session rows: the CUOVERLAP_SESSION of each process, keyed by pid.
inline constexpr std::string_view kProcessSessionTable = "CUOVERLAP_PROCESS_SESSION";
inline constexpr const char* kCreateProcessSessionTable = R"SQL(
CREATE TABLE CUOVERLAP_PROCESS_SESSION (
  pid INTEGER NOT NULL, key TEXT NOT NULL, value TEXT, PRIMARY KEY (pid, key)
);
)SQL";

inline constexpr std::string_view kTraceSchemaId = "cuoverlap.trace/1";

}  // namespace cuoverlap::schema
