// Translation of CUPTI activity records into rows, from records built here (no GPU needed).
#include <cupti.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <string>
#include <vector>

#include "cupti/activity_translation.h"
#include "memory_kind.h"

using namespace cuoverlap::collector;

namespace {

struct CollectingSink : RowSink {
  std::vector<KernelRow> kernels;
  std::vector<MemcpyRow> memcpys;
  std::vector<MemsetRow> memsets;
  std::vector<ApiRow> apis;
  std::vector<SyncRow> syncs;
  std::vector<CudaEventRow> events;
  std::vector<StreamRow> streams;
  std::vector<ContextRow> contexts;
  std::vector<DeviceRow> devices;
  std::vector<MarkerRow> markers;
  std::vector<MarkerDataRow> marker_data;
  std::vector<OverheadRow> overheads;
  std::vector<UnifiedMemoryRow> unified_memory;
  std::vector<MemoryRow> memory;
  std::vector<int> unknown;
  std::vector<std::string> api_names;
  void onKernel(const KernelRow& r) override { kernels.push_back(r); }
  void onMemcpy(const MemcpyRow& r) override { memcpys.push_back(r); }
  void onMemset(const MemsetRow& r) override { memsets.push_back(r); }
  void onApi(const ApiRow& r) override {
    apis.push_back(r);
    api_names.push_back(r.name != nullptr ? r.name : "");
  }
  void onSync(const SyncRow& r) override { syncs.push_back(r); }
  void onCudaEvent(const CudaEventRow& r) override { events.push_back(r); }
  void onStream(const StreamRow& r) override { streams.push_back(r); }
  void onContext(const ContextRow& r) override { contexts.push_back(r); }
  void onDevice(const DeviceRow& r) override { devices.push_back(r); }
  void onMarker(const MarkerRow& r) override { markers.push_back(r); }
  void onMarkerData(const MarkerDataRow& r) override { marker_data.push_back(r); }
  void onOverhead(const OverheadRow& r) override { overheads.push_back(r); }
  void onUnifiedMemory(const UnifiedMemoryRow& r) override { unified_memory.push_back(r); }
  void onMemory(const MemoryRow& r) override { memory.push_back(r); }
  void onUnknownKind(int kind) override { unknown.push_back(kind); }
};

}  // namespace

TEST_CASE("memory kinds are renumbered from CUPTI to the nsys enum") {
  CHECK(nsysMemoryKind(CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE) == 0);
  CHECK(nsysMemoryKind(CUPTI_ACTIVITY_MEMORY_KIND_PINNED) == 1);
  CHECK(nsysMemoryKind(CUPTI_ACTIVITY_MEMORY_KIND_DEVICE) == 2);
  CHECK(nsysMemoryKind(CUPTI_ACTIVITY_MEMORY_KIND_ARRAY) == 3);
  CHECK(nsysMemoryKind(CUPTI_ACTIVITY_MEMORY_KIND_MANAGED) == 4);
  CHECK(nsysMemoryKind(CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC) == 5);
  CHECK(nsysMemoryKind(CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC) == 6);
  CHECK(nsysMemoryKind(CUPTI_ACTIVITY_MEMORY_KIND_UNKNOWN) == 7);
  CHECK(nsysMemoryKind(42) == 7);
}

TEST_CASE("a concurrent-kernel record becomes a kernel row") {
  CUpti_ActivityKernel10 k;
  std::memset(&k, 0, sizeof k);
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.start = 1000, k.end = 1500, k.deviceId = 1, k.contextId = 2, k.streamId = 13;
  k.correlationId = 77, k.name = "_Z4scanPii", k.gridX = 64, k.gridY = 2, k.gridZ = 1;
  k.blockX = 256, k.blockY = 1, k.blockZ = 1, k.registersPerThread = 32;
  k.staticSharedMemory = 1024, k.dynamicSharedMemory = 2048, k.graphId = 5, k.graphNodeId = 9;
  CollectingSink sink;
  translateActivity(&k, sink);
  REQUIRE(sink.kernels.size() == 1);
  const KernelRow& row = sink.kernels[0];
  CHECK(row.start == 1000);
  CHECK(row.end == 1500);
  CHECK(row.device_id == 1);
  CHECK(row.context_id == 2);
  CHECK(row.stream_id == 13);
  CHECK(row.correlation_id == 77);
  CHECK(std::string(row.name) == "_Z4scanPii");
  CHECK(row.grid[0] == 64);
  CHECK(row.grid[1] == 2);
  CHECK(row.block[0] == 256);
  CHECK(row.registers_per_thread == 32);
  CHECK(row.static_shared == 1024);
  CHECK(row.dynamic_shared == 2048);
  CHECK(row.graph_id == 5);
  CHECK(row.graph_node_id == 9);
}

TEST_CASE("memcpy, peer memcpy and memset records keep bytes, kinds and the async flag") {
  CUpti_ActivityMemcpy6 m;
  std::memset(&m, 0, sizeof m);
  m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
  m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
  m.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_PINNED;
  m.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  m.flags = CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC;
  m.bytes = 1 << 20, m.start = 10, m.end = 20, m.streamId = 14, m.correlationId = 3;
  CUpti_ActivityMemcpyPtoP4 p;
  std::memset(&p, 0, sizeof p);
  p.kind = CUPTI_ACTIVITY_KIND_MEMCPY2;
  p.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_PTOP;
  p.srcKind = p.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  p.srcDeviceId = 0, p.dstDeviceId = 1, p.bytes = 4096, p.start = 30, p.end = 40;
  CUpti_ActivityMemset4 s;
  std::memset(&s, 0, sizeof s);
  s.kind = CUPTI_ACTIVITY_KIND_MEMSET;
  s.value = 0xAB, s.bytes = 512, s.start = 50, s.end = 60;
  s.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  CollectingSink sink;
  translateActivity(&m, sink);
  translateActivity(&p, sink);
  translateActivity(&s, sink);
  REQUIRE(sink.memcpys.size() == 2);
  CHECK(sink.memcpys[0].copy_kind == 1);
  CHECK(sink.memcpys[0].src_kind == 1);  // pinned
  CHECK(sink.memcpys[0].dst_kind == 2);  // device
  CHECK(sink.memcpys[0].async);
  CHECK_FALSE(sink.memcpys[0].peer);
  CHECK(sink.memcpys[0].bytes == (1u << 20));
  CHECK(sink.memcpys[1].peer);
  CHECK(sink.memcpys[1].copy_kind == 10);
  CHECK(sink.memcpys[1].dst_device == 1);
  CHECK_FALSE(sink.memcpys[1].async);
  REQUIRE(sink.memsets.size() == 1);
  CHECK(sink.memsets[0].value == 0xAB);
  CHECK(sink.memsets[0].bytes == 512);
  CHECK(sink.memsets[0].mem_kind == 2);
}

TEST_CASE("runtime and driver API records carry CUPTI's callback names") {
  CUpti_ActivityAPI a;
  std::memset(&a, 0, sizeof a);
  a.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
  a.cbid = CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020;
  a.start = 5, a.end = 9, a.processId = 4242, a.threadId = 17, a.correlationId = 88;
  CUpti_ActivityAPI d = a;
  d.kind = CUPTI_ACTIVITY_KIND_DRIVER;
  d.cbid = CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel;
  CollectingSink sink;
  translateActivity(&a, sink);
  translateActivity(&d, sink);
  REQUIRE(sink.apis.size() == 2);
  CHECK(sink.apis[0].kind == ApiKind::kRuntime);
  CHECK(sink.api_names[0] == "cudaMemcpyAsync_v3020");
  CHECK(sink.apis[0].process_id == 4242);
  CHECK(sink.apis[0].thread_id == 17);
  CHECK(sink.apis[0].correlation_id == 88);
  CHECK(sink.apis[1].kind == ApiKind::kDriver);
  CHECK(sink.api_names[1] == "cuLaunchKernel");
}

TEST_CASE("sync, CUDA event, stream, context and device records") {
  CUpti_ActivitySynchronization2 sync;
  std::memset(&sync, 0, sizeof sync);
  sync.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
  sync.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT;
  sync.streamId = 15, sync.cudaEventId = 4, sync.start = 1, sync.end = 2;
  CUpti_ActivityCudaEvent2 event;
  std::memset(&event, 0, sizeof event);
  event.kind = CUPTI_ACTIVITY_KIND_CUDA_EVENT;
  event.eventId = 4, event.streamId = 13, event.deviceTimestamp = 123;
  CUpti_ActivityStream stream;
  std::memset(&stream, 0, sizeof stream);
  stream.kind = CUPTI_ACTIVITY_KIND_STREAM;
  stream.streamId = 14, stream.contextId = 1, stream.flag = CUPTI_ACTIVITY_STREAM_CREATE_FLAG_NON_BLOCKING;
  stream.correlationId = 41;
  CUpti_ActivityContext3 context;
  std::memset(&context, 0, sizeof context);
  context.kind = CUPTI_ACTIVITY_KIND_CONTEXT;
  context.contextId = 1, context.deviceId = 0, context.nullStreamId = 7;
  CUpti_ActivityDevice5 device;
  std::memset(&device, 0, sizeof device);
  device.kind = CUPTI_ACTIVITY_KIND_DEVICE;
  device.name = "NVIDIA H200", device.numMultiprocessors = 132, device.numMemcpyEngines = 3;
  device.computeCapabilityMajor = 9, device.globalMemorySize = 1ull << 37;
  CollectingSink sink;
  for (const void* record : {static_cast<const void*>(&sync), static_cast<const void*>(&event),
                             static_cast<const void*>(&stream), static_cast<const void*>(&context),
                             static_cast<const void*>(&device)}) {
    translateActivity(record, sink);
  }
  REQUIRE(sink.syncs.size() == 1);
  CHECK(sink.syncs[0].sync_type == 2);
  CHECK(sink.syncs[0].event_id == 4);
  REQUIRE(sink.events.size() == 1);
  CHECK(sink.events[0].device_timestamp == 123);
  REQUIRE(sink.streams.size() == 1);
  CHECK(sink.streams[0].flag == 2);
  CHECK(sink.streams[0].correlation_id == 41);
  REQUIRE(sink.contexts.size() == 1);
  CHECK(sink.contexts[0].null_stream_id == 7);
  REQUIRE(sink.devices.size() == 1);
  CHECK(std::string(sink.devices[0].name) == "NVIDIA H200");
  CHECK(sink.devices[0].sm_count == 132);
  CHECK(sink.devices[0].async_engines == 3);
  CHECK(sink.devices[0].compute_major == 9);
  CHECK(sink.devices[0].global_memory_bytes == (1ull << 37));
}

TEST_CASE("NVTX marker, marker data and overhead records; unknown kinds are counted") {
  CUpti_ActivityMarker2 marker;
  std::memset(&marker, 0, sizeof marker);
  marker.kind = CUPTI_ACTIVITY_KIND_MARKER;
  marker.flags = CUPTI_ACTIVITY_FLAG_MARKER_START;
  marker.timestamp = 99, marker.id = 6, marker.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
  marker.objectId.pt.processId = 10, marker.objectId.pt.threadId = 11;
  marker.name = "phase", marker.domain = "app";
  CUpti_ActivityMarkerData2 data;
  std::memset(&data, 0, sizeof data);
  data.kind = CUPTI_ACTIVITY_KIND_MARKER_DATA;
  data.id = 6, data.color = 0xFF00FF00, data.flags = CUPTI_ACTIVITY_FLAG_MARKER_COLOR_ARGB;
  CUpti_ActivityOverhead3 overhead;
  std::memset(&overhead, 0, sizeof overhead);
  overhead.kind = CUPTI_ACTIVITY_KIND_OVERHEAD;
  overhead.overheadKind = CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH;
  overhead.start = 1, overhead.end = 4;
  CUpti_Activity other{};
  other.kind = CUPTI_ACTIVITY_KIND_PC_SAMPLING;
  CollectingSink sink;
  translateActivity(&marker, sink);
  translateActivity(&data, sink);
  translateActivity(&overhead, sink);
  translateActivity(&other, sink);
  REQUIRE(sink.markers.size() == 1);
  CHECK(sink.markers[0].phase == MarkerPhase::kStart);
  CHECK(sink.markers[0].thread_scoped);
  CHECK(sink.markers[0].thread_id == 11);
  CHECK(std::string(sink.markers[0].domain) == "app");
  REQUIRE(sink.marker_data.size() == 1);
  CHECK(sink.marker_data[0].has_color);
  CHECK(sink.marker_data[0].color == 0xFF00FF00);
  REQUIRE(sink.overheads.size() == 1);
  CHECK(std::string(sink.overheads[0].name) == "CUPTI buffer flush");
  CHECK(sink.unknown == std::vector<int>{CUPTI_ACTIVITY_KIND_PC_SAMPLING});
}

TEST_CASE("unified-memory counter records keep kind, bytes, address, device and cause") {
  CUpti_ActivityUnifiedMemoryCounter3 h2d;
  std::memset(&h2d, 0, sizeof h2d);
  h2d.kind = CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER;
  h2d.counterKind = CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_HTOD;
  h2d.value = 2 << 20, h2d.start = 100, h2d.end = 180, h2d.address = 0x7f0000200000;
  h2d.srcId = 0, h2d.dstId = 1, h2d.processId = 4242;
  h2d.flags = CUPTI_ACTIVITY_UNIFIED_MEMORY_MIGRATION_CAUSE_COHERENCE;
  CUpti_ActivityUnifiedMemoryCounter3 fault = h2d;
  fault.counterKind = CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_GPU_PAGE_FAULT;
  fault.value = 37, fault.srcId = 1, fault.flags = CUPTI_ACTIVITY_UNIFIED_MEMORY_ACCESS_TYPE_READ;
  CUpti_ActivityUnifiedMemoryCounter3 thrash = h2d;
  thrash.counterKind = CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_THRASHING;
  thrash.processors[0] = 0x3;
  CollectingSink sink;
  translateActivity(&h2d, sink);
  translateActivity(&fault, sink);
  translateActivity(&thrash, sink);
  REQUIRE(sink.unified_memory.size() == 3);
  CHECK(sink.unified_memory[0].kind == UnifiedMemoryKind::kBytesHtoD);
  CHECK(sink.unified_memory[0].value == (2u << 20));
  CHECK(sink.unified_memory[0].dst_id == 1);
  CHECK(sink.unified_memory[0].address == 0x7f0000200000);
  CHECK(sink.unified_memory[0].flags == 2);  // coherence: a page fault
  CHECK(sink.unified_memory[1].kind == UnifiedMemoryKind::kGpuPageFault);
  CHECK(sink.unified_memory[1].value == 37);
  CHECK(sink.unified_memory[1].src_id == 1);
  CHECK(sink.unified_memory[2].kind == UnifiedMemoryKind::kThrashing);
  CHECK(sink.unified_memory[2].devices == 0x3);
  CHECK(sink.unknown.empty());
}

TEST_CASE("memory records keep the operation, kind, address, bytes, call and pool") {
  CUpti_ActivityMemory4 allocation;
  std::memset(&allocation, 0, sizeof allocation);
  allocation.kind = CUPTI_ACTIVITY_KIND_MEMORY2;
  allocation.memoryOperationType = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION;
  allocation.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  allocation.correlationId = 41, allocation.address = 0x7f0000200000, allocation.bytes = 3 << 20;
  allocation.timestamp = 1000, allocation.PC = 0x4011aa, allocation.processId = 4242;
  allocation.deviceId = 1, allocation.contextId = 3, allocation.streamId = CUPTI_INVALID_STREAM_ID;
  CUpti_ActivityMemory4 release = allocation;
  release.memoryOperationType = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE;
  release.correlationId = 57, release.timestamp = 2000;
  CUpti_ActivityMemory4 pooled = allocation;
  pooled.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  pooled.isAsync = 1, pooled.streamId = 13;
  pooled.memoryPoolConfig.memoryPoolType = CUPTI_ACTIVITY_MEMORY_POOL_TYPE_LOCAL;
  pooled.memoryPoolConfig.address = 0x7f0000000000, pooled.memoryPoolConfig.pool.size = 32 << 20;
  pooled.memoryPoolConfig.utilizedSize = 5 << 20;
  CUpti_ActivityMemory4 pinned = allocation;
  pinned.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_PINNED;
  CUpti_ActivityMemory4 invalid = allocation;
  invalid.memoryOperationType = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_INVALID;
  CollectingSink sink;
  for (const auto* record : {&allocation, &release, &pooled, &pinned, &invalid}) translateActivity(record, sink);
  REQUIRE(sink.memory.size() == 4);
  CHECK(sink.memory[0].allocation);
  CHECK(sink.memory[0].mem_kind == 2);  // nsys: device
  CHECK(sink.memory[0].address == 0x7f0000200000);
  CHECK(sink.memory[0].bytes == (3u << 20));
  CHECK(sink.memory[0].correlation_id == 41);
  CHECK(sink.memory[0].timestamp == 1000);
  CHECK(sink.memory[0].pc == 0x4011aa);
  CHECK(sink.memory[0].process_id == 4242);
  CHECK(sink.memory[0].device_id == 1);
  CHECK(sink.memory[0].context_id == 3);
  CHECK_FALSE(sink.memory[0].has_stream);
  CHECK_FALSE(sink.memory[0].pool);
  CHECK_FALSE(sink.memory[1].allocation);
  CHECK(sink.memory[1].correlation_id == 57);
  CHECK(sink.memory[2].has_stream);
  CHECK(sink.memory[2].stream_id == 13);
  CHECK(sink.memory[2].pool);
  CHECK_FALSE(sink.memory[2].pool_imported);
  CHECK(sink.memory[2].pool_size == (32u << 20));
  CHECK(sink.memory[2].pool_utilized == (5u << 20));
  CHECK(sink.memory[3].mem_kind == 1);  // nsys: pinned
  REQUIRE(sink.unknown.size() == 1);  // an operation CUPTI calls invalid is counted, not written
  CHECK(sink.unknown[0] == CUPTI_ACTIVITY_KIND_MEMORY2);
}
