// TraceWriter: one INSERT per row kind, columns in the order of schema::kCreateTables.
#include <string>

#include "trace_schema.h"
#include "trace_writer.h"

namespace cuoverlap::collector {
namespace {

// NULL for ops outside a graph, as nsys writes them.
std::optional<std::uint64_t> graphValue(std::uint32_t graph_id, std::uint64_t value) {
  if (graph_id == 0 && value == 0) return std::nullopt;
  return value;
}

}  // namespace

void TraceWriter::prepareStatements() {
  string_ = std::make_unique<Statement>(db_, "INSERT INTO StringIds VALUES (?1, ?2)");
  kernel_ = std::make_unique<Statement>(db_,
      "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,"
      "?14,?15,?16,?17,?18,?19,?20,?21,?22,?23,?24,?25,?26,?27,?28)");
  memcpy_ = std::make_unique<Statement>(db_,
      "INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,"
      "?14,?15,?16,?17,?18,?19,?20,?21)");
  memset_ = std::make_unique<Statement>(db_,
      "INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13)");
  api_ = std::make_unique<Statement>(db_,
      "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?1,?2,?3,?4,?5,?6,?7,NULL)");
  sync_ = std::make_unique<Statement>(db_,
      "INSERT INTO CUPTI_ACTIVITY_KIND_SYNCHRONIZATION VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9)");
  cuda_event_ = std::make_unique<Statement>(db_,
      "INSERT INTO CUPTI_ACTIVITY_KIND_CUDA_EVENT VALUES (?1,?2,?3,?4,?5,?6,?7,?8)");
  stream_ = std::make_unique<Statement>(db_,
      "INSERT INTO TARGET_INFO_CUDA_STREAM VALUES (?1,0,0,?2,?3,?4,?5)");
  stream_origin_ = std::make_unique<Statement>(db_,
      "INSERT INTO CUOVERLAP_STREAM_ORIGIN VALUES (?1,?2,?3,?4,?5)");
  stream_creator_ = std::make_unique<Statement>(db_,
      "UPDATE CUOVERLAP_STREAM_ORIGIN SET creator = ?1 WHERE correlationId = ?2 AND creator IS NULL");
  context_ = std::make_unique<Statement>(db_,
      "INSERT INTO TARGET_INFO_CUDA_CONTEXT_INFO VALUES (?1,0,0,?2,?3,?4)");
  device_ = std::make_unique<Statement>(db_,
      "INSERT INTO TARGET_INFO_GPU VALUES (0,?1,?2,?21,1,?3,?4,?5,?6,?7,?8,NULL,?1,?9,?10,NULL,"
      "?11,?12,?13,?14,?15,?16,?17,?18,?19,?20,?22,?23)");
  nvtx_ = std::make_unique<Statement>(db_,
      "INSERT INTO NVTX_EVENTS (start,end,eventType,rangeId,category,color,text,globalTid,"
      "endGlobalTid,domainId) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10)");
  overhead_ = std::make_unique<Statement>(db_,
      "INSERT INTO PROFILER_OVERHEAD VALUES (?1,?2,?3,?4,0)");
  session_ = std::make_unique<Statement>(db_,
      "INSERT OR REPLACE INTO CUOVERLAP_SESSION VALUES (?1,?2)");
  um_gpu_fault_ = std::make_unique<Statement>(db_,
      "INSERT INTO CUDA_UM_GPU_PAGE_FAULT_EVENTS VALUES (?1,?2,?3,?4,?5,?6,?7)");
  um_cpu_fault_ = std::make_unique<Statement>(db_,
      "INSERT INTO CUDA_UM_CPU_PAGE_FAULT_EVENTS VALUES (?1,?2,?3,?4,?5,?5,NULL,NULL,NULL)");
  um_thrashing_ = std::make_unique<Statement>(db_,
      "INSERT INTO CUOVERLAP_UM_THRASHING_EVENTS VALUES (?1,?2,?3,?4,?5,?6)");
  op_buffer_ = std::make_unique<Statement>(db_, "INSERT INTO CUOVERLAP_OP_BUFFERS VALUES (?1,?2,?3,?4,?5)");
  memory_ = std::make_unique<Statement>(db_,
      "INSERT INTO CUDA_GPU_MEMORY_USAGE_EVENTS VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,"
      "?14,?15,?16,?17,?18)");
}

void TraceWriter::onKernel(const KernelRow& r) {
  // A forced flush can return a kernel that had not finished: no honest end time exists.
  if (r.end < r.start || r.start == 0) return count(RecordKind::kIncomplete);
  const KernelNameIds& names = kernelNameIds(r.name);
  begin();
  kernel_->run({r.start, r.end, r.device_id, r.context_id, r.stream_id, r.correlation_id,
                global_pid_, names.demangled, names.short_name, names.mangled, r.launch_type,
                r.cache_config, r.registers_per_thread, r.grid[0], r.grid[1], r.grid[2],
                r.block[0], r.block[1], r.block[2], r.static_shared, r.dynamic_shared,
                r.local_per_thread, r.local_total, r.grid_id, r.shared_executed,
                graphValue(r.graph_id, r.graph_node_id), r.shmem_limit_config,
                graphValue(r.graph_id, r.graph_id)});
  count(RecordKind::kKernel);
}

void TraceWriter::onMemcpy(const MemcpyRow& r) {
  if (r.end < r.start || r.start == 0) return count(RecordKind::kIncomplete);
  auto peer = [&r](std::uint32_t v) { return r.peer ? std::optional<std::uint32_t>(v) : std::nullopt; };
  begin();
  memcpy_->run({r.start, r.end, r.device_id, r.context_id, r.stream_id, r.correlation_id,
                global_pid_, r.bytes, r.copy_kind, std::nullopt, r.src_kind, r.dst_kind,
                peer(r.src_device), peer(r.src_context), peer(r.dst_device), peer(r.dst_context),
                std::nullopt, graphValue(r.graph_id, r.graph_node_id), std::nullopt,
                r.async ? 1 : 0, graphValue(r.graph_id, r.graph_id)});
  count(RecordKind::kMemcpy);
}

void TraceWriter::onMemset(const MemsetRow& r) {
  if (r.end < r.start || r.start == 0) return count(RecordKind::kIncomplete);
  begin();
  memset_->run({r.start, r.end, r.device_id, r.context_id, r.stream_id, r.correlation_id,
                global_pid_, r.value, r.bytes, graphValue(r.graph_id, r.graph_node_id),
                r.mem_kind, r.async ? 1 : 0, graphValue(r.graph_id, r.graph_id)});
  count(RecordKind::kMemset);
}

void TraceWriter::onApi(const ApiRow& r) {
  if (r.name != nullptr && isStreamCreatingCall(r.name)) {
    stream_creators_.emplace(r.correlation_id, r.name);
    if (origins_without_creator_.erase(r.correlation_id) != 0) {
      begin();
      stream_creator_->run({r.name, r.correlation_id});
    }
  }
  if (api_filter_ && !api_filter_(r.start, r.end)) return;
  std::int64_t name_id = apiNameId(r);
  begin();
  api_->run({r.start, r.end, static_cast<int>(r.kind),
             schema::encodeGlobalTid(r.process_id, r.thread_id), r.correlation_id, name_id,
             r.return_value});
  count(r.kind == ApiKind::kRuntime ? RecordKind::kRuntime : RecordKind::kDriver);
}

void TraceWriter::onSync(const SyncRow& r) {
  auto device = context_devices_.find(r.context_id);
  begin();
  sync_->run({r.start, r.end, device != context_devices_.end() ? device->second : 0u,
              r.context_id, r.stream_id, r.correlation_id, global_pid_, r.sync_type, r.event_id});
  count(RecordKind::kSync);
}

void TraceWriter::onCudaEvent(const CudaEventRow& r) {
  begin();
  cuda_event_->run({r.device_timestamp, r.device_id, r.context_id, r.stream_id, r.correlation_id,
                    global_pid_, r.event_id, r.sync_id});
  count(RecordKind::kCudaEvent);
}

void TraceWriter::onStream(const StreamRow& r) {
  begin();
  stream_->run({r.stream_id, pid_, r.context_id, r.priority, r.flag});
  if (stream_origins_) {
    auto creator = stream_creators_.find(r.correlation_id);
    const bool known = creator != stream_creators_.end();
    stream_origin_->run({pid_, r.context_id, r.stream_id, r.correlation_id,
                         known ? SqlValue(creator->second) : SqlValue()});
    if (!known) ++origins_without_creator_[r.correlation_id];
  }
  count(RecordKind::kStream);
}

void TraceWriter::onContext(const ContextRow& r) {
  context_devices_[r.context_id] = r.device_id;
  begin();
  context_->run({r.null_stream_id, pid_, r.device_id, r.context_id});
  count(RecordKind::kContext);
}

void TraceWriter::onDevice(const DeviceRow& row) {
  DeviceRow r = row;
  if (device_query_) device_query_(r);
  std::optional<int> concurrent;
  if (r.concurrent_kernels >= 0) concurrent = r.concurrent_kernels;
  const auto known = [](int v) { return v > 0 ? std::optional<int>(v) : std::nullopt; };
  std::optional<std::string> bus;
  if (!r.pci_bus_id.empty()) bus = r.pci_bus_id;
  begin();
  device_->run({r.id, r.name, r.l2_cache, r.global_memory_bytes, r.memory_bandwidth, r.clock_khz,
                r.sm_count, r.uuid, r.max_registers_per_block, r.max_shmem_per_block,
                r.max_shmem_per_sm, r.max_registers_per_sm, r.threads_per_warp, r.async_engines,
                r.max_warps_per_sm, r.max_blocks_per_sm, r.max_threads_per_block, r.compute_major,
                r.compute_minor, concurrent, bus, known(r.pcie_generation), known(r.pcie_width)});
  count(RecordKind::kDevice);
}

void TraceWriter::onMarker(const MarkerRow& r) {
  nvtx_assembler_.onMarker(r, nvtx_out_);
  writeNvtx(nvtx_out_);
  count(RecordKind::kMarker);
}

void TraceWriter::onMarkerData(const MarkerDataRow& r) {
  nvtx_assembler_.onMarkerData(r);
  count(RecordKind::kMarkerData);
}

void TraceWriter::endOfBuffer() {
  nvtx_assembler_.endOfBuffer(nvtx_out_);
  writeNvtx(nvtx_out_);
}

void TraceWriter::writeNvtx(const std::vector<NvtxEvent>& events) {
  if (events.empty()) return;
  begin();
  for (const NvtxEvent& e : events) {
    const bool domain_row = e.event_type == static_cast<std::int32_t>(schema::NvtxEventType::kDomainCreate);
    if (nvtx_filter_ && !domain_row && !nvtx_filter_(e.start, e.end.value_or(e.start))) continue;
    nvtx_->run({e.start, e.end, e.event_type, e.range_id, e.category, e.color, e.text,
                e.global_tid, e.end_global_tid, e.domain_id});
  }
  nvtx_out_.clear();
}

void TraceWriter::onOverhead(const OverheadRow& r) {
  std::int64_t name_id = intern(r.name != nullptr ? r.name : "CUPTI overhead");
  begin();
  overhead_->run({r.start, r.end, schema::encodeGlobalTid(pid_, r.thread_id), name_id});
  if (r.end > r.start) cupti_overhead_ns_ += r.end - r.start;
  count(RecordKind::kOverhead);
}

void TraceWriter::onUnknownKind(int) { count(RecordKind::kUnknown); }

void TraceWriter::onMemory(const MemoryRow& r) {
  auto local = [&r](std::uint64_t v) { return r.pool && !r.pool_imported ? std::optional<std::uint64_t>(v) : std::nullopt; };
  auto imported = [&r](std::uint64_t v) { return r.pool_imported ? std::optional<std::uint64_t>(v) : std::nullopt; };
  begin();
  memory_->run({r.timestamp, schema::encodeGlobalPid(r.process_id != 0 ? r.process_id : pid_), r.device_id,
                r.context_id, r.address, r.pc, r.bytes, r.mem_kind,
                static_cast<int>(r.allocation ? schema::MemoryOperation::kAllocation
                                              : schema::MemoryOperation::kDeallocation),
                r.name != nullptr && *r.name != '\0' ? r.name : nullptr,
                r.correlation_id != 0 ? std::optional<std::uint32_t>(r.correlation_id) : std::nullopt,
                r.has_stream ? std::optional<std::uint32_t>(r.stream_id) : std::nullopt,
                local(r.pool_address), local(r.pool_release_threshold), local(r.pool_size),
                local(r.pool_utilized), imported(r.pool_address), imported(r.pool_size)});
  count(RecordKind::kMemory);
}

void TraceWriter::onOpBuffers(const std::vector<OpBufferRow>& rows) {
  if (rows.empty()) return;
  begin();
  for (const OpBufferRow& r : rows) {
    op_buffer_->run({global_pid_, r.correlation_id, r.address, r.bytes, r.access});
  }
  counts_[static_cast<std::size_t>(RecordKind::kOpBuffer)] += rows.size();
}

}  // namespace cuoverlap::collector
