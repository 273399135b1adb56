// Translation of CUPTI 13.0 activity records into rows. The record structs are the versions that
// CUPTI 13.0 hands out for each kind (CUPTI_NOTES.md); every field the writer needs is copied out
// here so that nothing after this file depends on CUPTI's layout.
#include "cupti/activity_translation.h"

#include <cupti.h>

#include <cstdio>

#include "memory_kind.h"

namespace cuoverlap::collector {
namespace {

void translateKernel(const CUpti_ActivityKernel10& k, RowSink& sink) {
  KernelRow row;
  row.start = k.start;
  row.end = k.end;
  row.device_id = k.deviceId;
  row.context_id = k.contextId;
  row.stream_id = k.streamId;
  row.correlation_id = k.correlationId;
  row.name = k.name;
  row.grid[0] = k.gridX, row.grid[1] = k.gridY, row.grid[2] = k.gridZ;
  row.block[0] = k.blockX, row.block[1] = k.blockY, row.block[2] = k.blockZ;
  row.registers_per_thread = k.registersPerThread;
  row.static_shared = k.staticSharedMemory;
  row.dynamic_shared = k.dynamicSharedMemory;
  row.local_per_thread = k.localMemoryPerThread;
  row.local_total = k.localMemoryTotal_v2 != 0 ? k.localMemoryTotal_v2 : k.localMemoryTotal;
  row.grid_id = k.gridId;
  row.shared_executed = k.sharedMemoryExecuted;
  row.graph_node_id = k.graphNodeId;
  row.graph_id = k.graphId;
  row.launch_type = k.launchType;
  row.cache_config = k.cacheConfig.both;
  row.shmem_limit_config = static_cast<std::uint8_t>(k.shmemLimitConfig);
  sink.onKernel(row);
}

void translateMemcpy(const CUpti_ActivityMemcpy6& m, RowSink& sink) {
  MemcpyRow row;
  row.start = m.start;
  row.end = m.end;
  row.bytes = m.bytes;
  row.device_id = m.deviceId;
  row.context_id = m.contextId;
  row.stream_id = m.streamId;
  row.correlation_id = m.correlationId;
  row.copy_kind = m.copyKind;
  row.src_kind = nsysMemoryKind(m.srcKind);
  row.dst_kind = nsysMemoryKind(m.dstKind);
  row.async = (m.flags & CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC) != 0;
  row.graph_node_id = m.graphNodeId;
  row.graph_id = m.graphId;
  sink.onMemcpy(row);
}

void translatePeerMemcpy(const CUpti_ActivityMemcpyPtoP4& m, RowSink& sink) {
  MemcpyRow row;
  row.start = m.start;
  row.end = m.end;
  row.bytes = m.bytes;
  row.device_id = m.deviceId;
  row.context_id = m.contextId;
  row.stream_id = m.streamId;
  row.correlation_id = m.correlationId;
  row.copy_kind = m.copyKind;
  row.src_kind = nsysMemoryKind(m.srcKind);
  row.dst_kind = nsysMemoryKind(m.dstKind);
  row.async = (m.flags & CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC) != 0;
  row.peer = true;
  row.src_device = m.srcDeviceId;
  row.src_context = m.srcContextId;
  row.dst_device = m.dstDeviceId;
  row.dst_context = m.dstContextId;
  row.graph_node_id = m.graphNodeId;
  row.graph_id = m.graphId;
  sink.onMemcpy(row);
}

void translateMemset(const CUpti_ActivityMemset4& m, RowSink& sink) {
  MemsetRow row;
  row.start = m.start;
  row.end = m.end;
  row.bytes = m.bytes;
  row.device_id = m.deviceId;
  row.context_id = m.contextId;
  row.stream_id = m.streamId;
  row.correlation_id = m.correlationId;
  row.value = m.value;
  row.mem_kind = nsysMemoryKind(m.memoryKind);
  row.async = (m.flags & CUPTI_ACTIVITY_FLAG_MEMSET_ASYNC) != 0;
  row.graph_node_id = m.graphNodeId;
  row.graph_id = m.graphId;
  sink.onMemset(row);
}

// cuptiGetCallbackName is a table lookup; the writer caches the name id per callback id anyway.
void translateApi(const CUpti_ActivityAPI& a, ApiKind kind, RowSink& sink) {
  ApiRow row;
  row.start = a.start;
  row.end = a.end;
  row.kind = kind;
  row.callback_id = a.cbid;
  row.process_id = a.processId;
  row.thread_id = a.threadId;
  row.correlation_id = a.correlationId;
  row.return_value = a.returnValue;
  const char* name = nullptr;
  auto domain = kind == ApiKind::kRuntime ? CUPTI_CB_DOMAIN_RUNTIME_API : CUPTI_CB_DOMAIN_DRIVER_API;
  if (cuptiGetCallbackName(domain, a.cbid, &name) == CUPTI_SUCCESS) row.name = name;
  sink.onApi(row);
}

void translateSync(const CUpti_ActivitySynchronization2& s, RowSink& sink) {
  SyncRow row;
  row.start = s.start;
  row.end = s.end;
  row.context_id = s.contextId;
  row.stream_id = s.streamId;
  row.correlation_id = s.correlationId;
  row.event_id = s.cudaEventId;
  row.sync_type = static_cast<std::uint8_t>(s.type);
  sink.onSync(row);
}

void translateCudaEvent(const CUpti_ActivityCudaEvent2& e, RowSink& sink) {
  CudaEventRow row;
  row.device_timestamp = e.deviceTimestamp;
  row.sync_id = e.cudaEventSyncId;
  row.device_id = e.deviceId;
  row.context_id = e.contextId;
  row.stream_id = e.streamId;
  row.correlation_id = e.correlationId;
  row.event_id = e.eventId;
  sink.onCudaEvent(row);
}

void translateDevice(const CUpti_ActivityDevice5& d, RowSink& sink) {
  DeviceRow row;
  row.id = d.id;
  row.name = d.name;
  row.global_memory_bytes = d.globalMemorySize;
  row.memory_bandwidth = d.globalMemoryBandwidth;
  row.l2_cache = d.l2CacheSize;
  row.clock_khz = d.coreClockRate;
  row.sm_count = d.numMultiprocessors;
  row.threads_per_warp = d.numThreadsPerWarp;
  row.async_engines = d.numMemcpyEngines;
  row.max_warps_per_sm = d.maxWarpsPerMultiprocessor;
  row.max_blocks_per_sm = d.maxBlocksPerMultiprocessor;
  row.max_shmem_per_sm = d.maxSharedMemoryPerMultiprocessor;
  row.max_registers_per_sm = d.maxRegistersPerMultiprocessor;
  row.max_registers_per_block = d.maxRegistersPerBlock;
  row.max_shmem_per_block = d.maxSharedMemoryPerBlock;
  row.max_threads_per_block = d.maxThreadsPerBlock;
  row.compute_major = d.computeCapabilityMajor;
  row.compute_minor = d.computeCapabilityMinor;
  const unsigned char* u = reinterpret_cast<const unsigned char*>(d.uuid.bytes);
  std::snprintf(row.uuid, sizeof row.uuid,
                "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0],
                u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13],
                u[14], u[15]);
  sink.onDevice(row);
}

void translateMarker(const CUpti_ActivityMarker2& m, RowSink& sink) {
  MarkerRow row;
  row.phase = (m.flags & CUPTI_ACTIVITY_FLAG_MARKER_START) ? MarkerPhase::kStart
              : (m.flags & CUPTI_ACTIVITY_FLAG_MARKER_END) ? MarkerPhase::kEnd
                                                           : MarkerPhase::kInstant;
  row.timestamp = m.timestamp;
  row.id = m.id;
  row.thread_scoped = m.objectKind == CUPTI_ACTIVITY_OBJECT_THREAD;
  row.process_id = m.objectId.pt.processId;
  row.thread_id = row.thread_scoped ? m.objectId.pt.threadId : 0;
  row.name = m.name;
  row.domain = m.domain;
  sink.onMarker(row);
}

void translateMarkerData(const CUpti_ActivityMarkerData2& d, RowSink& sink) {
  MarkerDataRow row;
  row.id = d.id;
  row.color = d.color;
  row.category = d.category;
  row.has_color = (d.flags & CUPTI_ACTIVITY_FLAG_MARKER_COLOR_ARGB) != 0;
  sink.onMarkerData(row);
}

const char* overheadName(CUpti_ActivityOverheadKind kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_OVERHEAD_DRIVER_COMPILER: return "CUPTI driver compiler";
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH: return "CUPTI buffer flush";
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_INSTRUMENTATION: return "CUPTI instrumentation";
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_RESOURCE: return "CUPTI resource";
    default: return "CUPTI overhead";
  }
}

void translateOverhead(const CUpti_ActivityOverhead3& o, RowSink& sink) {
  OverheadRow row;
  row.start = o.start;
  row.end = o.end;
  row.thread_id = o.objectKind == CUPTI_ACTIVITY_OBJECT_THREAD ? o.objectId.pt.threadId : 0;
  row.name = overheadName(o.overheadKind);
  sink.onOverhead(row);
}

UnifiedMemoryKind unifiedMemoryKind(CUpti_ActivityUnifiedMemoryCounterKind kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_HTOD:
      return UnifiedMemoryKind::kBytesHtoD;
    case CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_DTOH:
      return UnifiedMemoryKind::kBytesDtoH;
    case CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_DTOD:
      return UnifiedMemoryKind::kBytesDtoD;
    case CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_GPU_PAGE_FAULT:
      return UnifiedMemoryKind::kGpuPageFault;
    case CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_CPU_PAGE_FAULT_COUNT:
      return UnifiedMemoryKind::kCpuPageFault;
    case CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_THRASHING:
      return UnifiedMemoryKind::kThrashing;
    case CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_REMOTE_MAP:
      return UnifiedMemoryKind::kRemoteMap;
    default: return UnifiedMemoryKind::kOther;
  }
}

void translateUnifiedMemory(const CUpti_ActivityUnifiedMemoryCounter3& u, RowSink& sink) {
  UnifiedMemoryRow row;
  row.kind = unifiedMemoryKind(u.counterKind);
  row.start = u.start;
  row.end = u.end;
  row.value = u.value;
  row.address = u.address;
  row.src_id = u.srcId;
  row.dst_id = u.dstId;
  row.process_id = u.processId;
  row.flags = u.flags;
  // Thrashing: devices 0..63 fighting for the region (processors[0]); srcId on older drivers.
  row.devices = u.processors[0] != 0 ? u.processors[0] : u.srcId;
  sink.onUnifiedMemory(row);
}

void translateMemory(const CUpti_ActivityMemory4& m, RowSink& sink) {
  if (m.memoryOperationType != CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION &&
      m.memoryOperationType != CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE) {
    return sink.onUnknownKind(static_cast<int>(m.kind));
  }
  MemoryRow row;
  row.timestamp = m.timestamp;
  row.address = m.address;
  row.bytes = m.bytes;
  row.pc = m.PC;
  row.process_id = m.processId;
  row.device_id = m.deviceId;
  row.context_id = m.contextId;
  row.correlation_id = m.correlationId;
  row.allocation = m.memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION;
  row.mem_kind = nsysMemoryKind(m.memoryKind);
  row.has_stream = m.isAsync != 0 && m.streamId != CUPTI_INVALID_STREAM_ID;
  row.stream_id = row.has_stream ? m.streamId : 0;
  row.name = m.name;
  const auto& pool = m.memoryPoolConfig;
  row.pool = pool.memoryPoolType == CUPTI_ACTIVITY_MEMORY_POOL_TYPE_LOCAL ||
             pool.memoryPoolType == CUPTI_ACTIVITY_MEMORY_POOL_TYPE_IMPORTED;
  row.pool_imported = pool.memoryPoolType == CUPTI_ACTIVITY_MEMORY_POOL_TYPE_IMPORTED;
  row.pool_address = pool.address;
  row.pool_release_threshold = pool.releaseThreshold;
  row.pool_size = pool.pool.size;  // the union's processId for an imported pool
  row.pool_utilized = pool.utilizedSize;
  sink.onMemory(row);
}

template <typename Record>
const Record& as(const void* record) {
  return *static_cast<const Record*>(record);
}

}  // namespace

void translateActivity(const void* cupti_record, RowSink& sink) {
  auto kind = static_cast<const CUpti_Activity*>(cupti_record)->kind;
  const void* r = cupti_record;
  switch (kind) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
    case CUPTI_ACTIVITY_KIND_KERNEL: return translateKernel(as<CUpti_ActivityKernel10>(r), sink);
    case CUPTI_ACTIVITY_KIND_MEMCPY: return translateMemcpy(as<CUpti_ActivityMemcpy6>(r), sink);
    case CUPTI_ACTIVITY_KIND_MEMCPY2:
      return translatePeerMemcpy(as<CUpti_ActivityMemcpyPtoP4>(r), sink);
    case CUPTI_ACTIVITY_KIND_MEMSET: return translateMemset(as<CUpti_ActivityMemset4>(r), sink);
    case CUPTI_ACTIVITY_KIND_RUNTIME:
      return translateApi(as<CUpti_ActivityAPI>(r), ApiKind::kRuntime, sink);
    case CUPTI_ACTIVITY_KIND_DRIVER:
      return translateApi(as<CUpti_ActivityAPI>(r), ApiKind::kDriver, sink);
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
      return translateSync(as<CUpti_ActivitySynchronization2>(r), sink);
    case CUPTI_ACTIVITY_KIND_CUDA_EVENT:
      return translateCudaEvent(as<CUpti_ActivityCudaEvent2>(r), sink);
    case CUPTI_ACTIVITY_KIND_STREAM: {
      const auto& s = as<CUpti_ActivityStream>(r);
      return sink.onStream({s.contextId, s.streamId, s.priority, static_cast<std::uint32_t>(s.flag),
                            s.correlationId});
    }
    case CUPTI_ACTIVITY_KIND_CONTEXT: {
      const auto& c = as<CUpti_ActivityContext3>(r);
      return sink.onContext({c.contextId, c.deviceId, c.nullStreamId});
    }
    case CUPTI_ACTIVITY_KIND_DEVICE: return translateDevice(as<CUpti_ActivityDevice5>(r), sink);
    case CUPTI_ACTIVITY_KIND_MARKER: return translateMarker(as<CUpti_ActivityMarker2>(r), sink);
    case CUPTI_ACTIVITY_KIND_MARKER_DATA:
      return translateMarkerData(as<CUpti_ActivityMarkerData2>(r), sink);
    case CUPTI_ACTIVITY_KIND_OVERHEAD:
      return translateOverhead(as<CUpti_ActivityOverhead3>(r), sink);
    case CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER:
      return translateUnifiedMemory(as<CUpti_ActivityUnifiedMemoryCounter3>(r), sink);
    case CUPTI_ACTIVITY_KIND_MEMORY2: return translateMemory(as<CUpti_ActivityMemory4>(r), sink);
    default: return sink.onUnknownKind(static_cast<int>(kind));
  }
}

std::size_t translateBuffer(std::uint8_t* buffer, std::size_t valid_size, RowSink& sink) {
  std::size_t count = 0;
  CUpti_Activity* record = nullptr;
  while (cuptiActivityGetNextRecord(buffer, valid_size, &record) == CUPTI_SUCCESS) {
    translateActivity(record, sink);
    ++count;
  }
  return count;
}

}  // namespace cuoverlap::collector
