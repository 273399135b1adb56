// Writes translated rows into a new SQLite file in the trace schema (schema/trace_schema.h).
//
// Runs only on the collector's writer thread. Rows go through prepared statements into one open
// transaction; commit() ends it (the caller commits at least every second), so a killed process
// leaves a valid file holding everything up to the last commit. The file is in WAL mode while
// recording (a commit is an append) and is switched back to a single self-contained file by close().
#pragma once

#include <sqlite3.h>

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "nvtx_assembler.h"
#include "rows.h"
#include "sqlite_statement.h"
#include "trace_schema.h"

namespace cuoverlap::collector {

enum class RecordKind : std::uint8_t {
  kKernel, kMemcpy, kMemset, kRuntime, kDriver, kSync, kCudaEvent, kStream, kContext, kDevice,
  kMarker, kMarkerData, kOverhead, kUmMigration, kUmGpuFault, kUmCpuFault, kUmThrashing, kUnknown,
  kIncomplete, kGpuMetric, kOpBuffer, kMemory, kCount
};
// Name used in the session table key "records.<name>".
const char* recordKindName(RecordKind kind);

using RecordCounts = std::array<std::uint64_t, static_cast<std::size_t>(RecordKind::kCount)>;

using schema::isStreamCreatingCall;  // CUOVERLAP_STREAM_ORIGIN's `creator` (trace_schema.h)

class TraceWriter final : public RowSink {
 public:
  // Creates `path`, which must not exist, with all tables. Throws WriterError.
  TraceWriter(const std::string& path, std::uint32_t pid);
  ~TraceWriter() override;

  // Lets the live collector fill device facts CUPTI's record lacks (asyncEngineCount, ...).
  void setDeviceQuery(std::function<void(DeviceRow&)> query) { device_query_ = std::move(query); }
  void setNvtxStartEndQuery(std::function<bool(std::uint32_t)> query) {
    nvtx_assembler_.setStartEndQuery(std::move(query));
  }
  // With a capture window: an NVTX range (start, end) is written only when this says yes.
  void setNvtxFilter(std::function<bool(std::uint64_t, std::uint64_t)> keep) { nvtx_filter_ = std::move(keep); }
  // With a capture window: an API call (start, end) is written only when this says yes.
  void setApiFilter(std::function<bool(std::uint64_t, std::uint64_t)> keep) { api_filter_ = std::move(keep); }
  // Whether every stream-creating call (cudaStreamCreate*, cuStreamCreate*) reaches onApi, so
  // that CUOVERLAP_STREAM_ORIGIN can name each stream's creator (default: yes). Without them (all
  // API kinds held back until a capture window opens) no origin row is written: a created stream
  // would read as a per-thread one.
  void setStreamOrigins(bool on) { stream_origins_ = on; }
  // Stored and written into CUOVERLAP_SESSION at every commit.
  void setSessionValue(const std::string& key, const std::string& value);
  void endOfBuffer();
  void commit();
  // Commits and leaves a single self-contained file (WAL checkpointed and removed).
  void close();
  // Whether any API call, GPU activity, synchronization or NVTX record was written.
  bool holdsActivity() const;
  // After close(): deletes the file (and its side files).
  void removeFile();
  const RecordCounts& counts() const { return counts_; }

  void onKernel(const KernelRow& row) override;
  void onMemcpy(const MemcpyRow& row) override;
  void onMemset(const MemsetRow& row) override;
  void onApi(const ApiRow& row) override;
  void onSync(const SyncRow& row) override;
  void onCudaEvent(const CudaEventRow& row) override;
  void onStream(const StreamRow& row) override;
  void onContext(const ContextRow& row) override;
  void onDevice(const DeviceRow& row) override;
  void onMarker(const MarkerRow& row) override;
  void onMarkerData(const MarkerDataRow& row) override;
  void onOverhead(const OverheadRow& row) override;
  void onUnifiedMemory(const UnifiedMemoryRow& row) override;
  void onMemory(const MemoryRow& row) override;
  void onUnknownKind(int cupti_kind) override;
  // Not from an activity buffer: the PM sampling thread's batches, through the writer thread.
  void onGpuMetrics(const GpuMetricBatch& batch);
  // Not from an activity buffer either: the driver callbacks' rows (cupti/op_buffers.h).
  void onOpBuffers(const std::vector<OpBufferRow>& rows);

 private:
  struct KernelNameIds { std::int64_t demangled, short_name, mangled; };

  void createSchema();
  void closeDatabase();
  void prepareStatements();
  void begin();
  void count(RecordKind kind) { ++counts_[static_cast<std::size_t>(kind)]; }
  std::int64_t intern(const std::string& text);
  const KernelNameIds& kernelNameIds(const char* name);
  std::int64_t apiNameId(const ApiRow& row);
  void writeNvtx(const std::vector<NvtxEvent>& events);
  void writeSessionRows();
  void writeMigration(const UnifiedMemoryRow& row);

  sqlite3* db_ = nullptr;
  std::string path_;
  std::uint32_t pid_;
  std::uint64_t global_pid_;
  bool in_transaction_ = false;
  std::unique_ptr<Statement> string_, kernel_, memcpy_, memset_, api_, sync_, cuda_event_;
  std::unique_ptr<Statement> stream_, context_, device_, nvtx_, overhead_, session_;
  std::unique_ptr<Statement> um_gpu_fault_, um_cpu_fault_, um_thrashing_;
  std::unique_ptr<Statement> stream_origin_, stream_creator_;
  std::unique_ptr<Statement> gpu_metric_name_, gpu_metric_;  // made with the first metrics
  std::unique_ptr<Statement> op_buffer_, memory_;
  std::unordered_map<std::string, std::int64_t> strings_;
  std::unordered_map<std::string, KernelNameIds> kernel_names_;
  std::unordered_map<std::uint64_t, std::int64_t> api_names_;  // (kind << 32 | cbid) -> id
  std::unordered_map<std::uint32_t, std::uint32_t> context_devices_;
  std::map<std::string, std::string> session_values_;
  std::function<void(DeviceRow&)> device_query_;
  std::function<bool(std::uint64_t, std::uint64_t)> nvtx_filter_;
  std::function<bool(std::uint64_t, std::uint64_t)> api_filter_;
  bool stream_origins_ = true;
  // Stream-creating calls seen (correlation id -> name), whether written or not (a capture
  // window's filter drops the calls before it), and the origin rows still without a creator.
  std::unordered_map<std::uint32_t, std::string> stream_creators_;
  std::unordered_map<std::uint32_t, std::uint32_t> origins_without_creator_;  // correlation id -> rows
  NvtxAssembler nvtx_assembler_;
  std::vector<NvtxEvent> nvtx_out_;
  RecordCounts counts_{};
  std::uint64_t cupti_overhead_ns_ = 0;
};

}  // namespace cuoverlap::collector
