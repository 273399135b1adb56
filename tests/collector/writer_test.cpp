// The SQLite writer produces a file that the trace schema describes, read back with plain SQL.
#include <sqlite3.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <string>

#include "sqlite_statement.h"
#include "trace_merge.h"
#include "trace_schema.h"
#include "trace_writer.h"

using namespace cuoverlap::collector;
namespace schema = cuoverlap::schema;

namespace {

// The file and its side files: the writer refuses a path with a -wal, -shm or -journal beside it,
// and a test that abandons a writer leaves them.
struct TempPath {
  std::string path = "/tmp/cuoverlap_writer_test_" + std::to_string(getpid()) + ".sqlite";
  TempPath() { removeAll(); }
  ~TempPath() { removeAll(); }
  void removeAll() const {
    for (const char* suffix : {"", "-wal", "-shm", "-journal"}) std::remove((path + suffix).c_str());
  }
};

struct ReadBack {
  sqlite3* db = nullptr;
  explicit ReadBack(const std::string& path) {
    REQUIRE(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK);
  }
  ~ReadBack() { sqlite3_close(db); }
  std::string text(const std::string& sql) {
    sqlite3_stmt* stmt = nullptr;
    REQUIRE(sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr) == SQLITE_OK);
    std::string out;
    for (int row = 0; sqlite3_step(stmt) == SQLITE_ROW; ++row) {
      for (int c = 0; c < sqlite3_column_count(stmt); ++c) {
        const unsigned char* v = sqlite3_column_text(stmt, c);
        out += (row > 0 && c == 0 ? ";" : c > 0 ? "|" : "");
        out += v != nullptr ? reinterpret_cast<const char*>(v) : "NULL";
      }
    }
    sqlite3_finalize(stmt);
    return out;
  }
};

void writeSample(TraceWriter& writer) {
  writer.onContext({1, 0, 7});
  writer.onStream({1, 7, 0, 3});
  writer.onStream({1, 13, 0, 2});
  KernelRow k;
  k.start = 100, k.end = 200, k.context_id = 1, k.stream_id = 13, k.correlation_id = 5;
  k.name = "_Z4scanPii", k.grid[0] = 8, k.block[0] = 128, k.grid[1] = k.grid[2] = 1;
  k.block[1] = k.block[2] = 1;
  writer.onKernel(k);
  k.start = 300, k.end = 0;  // not finished at a forced flush
  writer.onKernel(k);
  MemcpyRow m;
  m.start = 50, m.end = 90, m.bytes = 4096, m.copy_kind = 2, m.src_kind = 2, m.dst_kind = 0;
  m.stream_id = 7;
  writer.onMemcpy(m);
  ApiRow a;
  a.start = 40, a.end = 45, a.process_id = 1234, a.thread_id = 99, a.correlation_id = 5;
  a.name = "cudaLaunchKernel_v7000", a.callback_id = 211;
  writer.onApi(a);
  writer.onApi(a);
  writer.onSync({210, 220, 1, 0xFFFFFFFFu, 0, 0, 4});
  MarkerRow start;
  start.phase = MarkerPhase::kStart, start.id = 1, start.timestamp = 30, start.thread_scoped = true;
  start.process_id = 1234, start.thread_id = 99, start.name = "step";
  writer.onMarker(start);
  MarkerRow end = start;
  end.phase = MarkerPhase::kEnd, end.timestamp = 230, end.name = nullptr;
  writer.onMarker(end);
  DeviceRow d;
  d.name = "Test GPU", d.sm_count = 132, d.async_engines = 2, d.compute_major = 9;
  writer.setDeviceQuery([](DeviceRow& row) {
    row.async_engines = 3, row.concurrent_kernels = 1;
    row.pci_bus_id = "0000:1B:00.0", row.pcie_generation = 5, row.pcie_width = 16;
  });
  writer.onDevice(d);
}

}  // namespace

TEST_CASE("the writer creates every schema table and writes rows as nsys does") {
  TempPath temp;
  {
    TraceWriter writer(temp.path, 1234);
    writeSample(writer);
    writer.setSessionValue(std::string(schema::session_key::kCommand), "./app 1");
    writer.close();
  }
  CHECK(access((temp.path + "-wal").c_str(), F_OK) != 0);  // one self-contained file
  ReadBack db(temp.path);
  for (const char* table : {"StringIds", "CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY",
                            "CUPTI_ACTIVITY_KIND_MEMSET", "CUPTI_ACTIVITY_KIND_RUNTIME",
                            "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", "NVTX_EVENTS", "TARGET_INFO_GPU",
                            "TARGET_INFO_CUDA_STREAM", "TARGET_INFO_CUDA_CONTEXT_INFO",
                            "CUOVERLAP_SESSION", "PROFILER_OVERHEAD", "ENUM_CUDA_MEM_KIND"}) {
    CHECK(db.text(std::string("SELECT count(*) FROM sqlite_master WHERE name='") + table + "'") == "1");
  }
  CHECK(db.text("SELECT start, end, streamId, gridX, blockX, graphId, globalPid FROM "
                "CUPTI_ACTIVITY_KIND_KERNEL") ==
        "100|200|13|8|128|NULL|" + std::to_string(schema::encodeGlobalPid(1234)));
  CHECK(db.text("SELECT d.value, s.value, m.value FROM CUPTI_ACTIVITY_KIND_KERNEL k "
                "JOIN StringIds d ON d.id = k.demangledName JOIN StringIds s ON s.id = k.shortName "
                "JOIN StringIds m ON m.id = k.mangledName") == "scan(int*, int)|scan|_Z4scanPii");
  CHECK(db.text("SELECT copyKind, srcKind, dstKind, bytes, async FROM CUPTI_ACTIVITY_KIND_MEMCPY") ==
        "2|2|0|4096|0");
  CHECK(db.text("SELECT label FROM ENUM_CUDA_MEM_KIND WHERE id = 0") == "Pageable");
  CHECK(db.text("SELECT r.eventClass, r.globalTid, s.value FROM CUPTI_ACTIVITY_KIND_RUNTIME r "
                "JOIN StringIds s ON s.id = r.nameId LIMIT 1") ==
        "0|" + std::to_string(schema::encodeGlobalTid(1234, 99)) + "|cudaLaunchKernel_v7000");
  CHECK(db.text("SELECT count(*) FROM StringIds WHERE value = 'cudaLaunchKernel_v7000'") == "1");
  CHECK(db.text("SELECT syncType, streamId FROM CUPTI_ACTIVITY_KIND_SYNCHRONIZATION") == "4|4294967295");
  CHECK(db.text("SELECT streamId, flag FROM TARGET_INFO_CUDA_STREAM ORDER BY streamId") == "7|3;13|2");
  CHECK(db.text("SELECT nullStreamId, contextId FROM TARGET_INFO_CUDA_CONTEXT_INFO") == "7|1");
  CHECK(db.text("SELECT start, end, eventType, text FROM NVTX_EVENTS") == "30|230|59|step");
  CHECK(db.text("SELECT name, smCount, asyncEngines, concurrentKernels FROM TARGET_INFO_GPU") ==
        "Test GPU|132|3|1");
  CHECK(db.text("SELECT busLocation, pcieLinkGen, pcieLinkWidth FROM TARGET_INFO_GPU") ==
        "0000:1B:00.0|5|16");
  CHECK(db.text("SELECT key, value FROM CUOVERLAP_SESSION WHERE key IN "
                "('records.kernel', 'records.incomplete', 'records.runtime', 'command') ORDER BY key") ==
        "command|./app 1;records.incomplete|1;records.kernel|1;records.runtime|2");
}


TEST_CASE("the writer names each stream record's creating call in CUOVERLAP_STREAM_ORIGIN") {
  // A created stream's STREAM record carries its cudaStreamCreate's correlation id, which may
  // come before or after the record (and before a capture window, whose filter drops the call
  // itself); a per-thread default stream's carries its first use's, never a creating call's.
  TempPath temp;
  {
    TraceWriter writer(temp.path, 1234);
    writer.setApiFilter([](std::uint64_t start, std::uint64_t) { return start >= 1000; });
    ApiRow create;
    create.start = 10, create.end = 20, create.correlation_id = 3, create.name = "cudaStreamCreate_v3020";
    writer.onApi(create);                 // before its record, outside the window
    writer.onStream({1, 7, 0, 3, 1});     // the NULL stream: the context's call
    writer.onStream({1, 13, 0, 1, 3});    // created by call 3
    writer.onStream({1, 14, 0, 1, 9});    // its creating call comes later
    writer.onStream({1, 15, 0, 1, 11});   // per-thread: created inside a launch
    ApiRow later = create;
    later.start = 1000, later.end = 1010, later.correlation_id = 9;
    later.name = "cuStreamCreateWithPriority";
    writer.onApi(later);
    ApiRow launch = create;
    launch.start = 1100, launch.end = 1110, launch.correlation_id = 11, launch.name = "cudaLaunchKernel_v7000";
    writer.onApi(launch);
    writer.close();
  }
  ReadBack db(temp.path);
  CHECK(db.text("SELECT processId, contextId, streamId, correlationId, creator FROM CUOVERLAP_STREAM_ORIGIN "
                "ORDER BY streamId") ==
        "1234|1|7|1|NULL;1234|1|13|3|cudaStreamCreate_v3020;1234|1|14|9|cuStreamCreateWithPriority;"
        "1234|1|15|11|NULL");
  CHECK(db.text("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME") == "2");  // the window's calls
  CHECK(isStreamCreatingCall("cudaStreamCreateWithFlags_ptsz"));
  CHECK_FALSE(isStreamCreatingCall("cudaStreamDestroy_v5050"));
}

TEST_CASE("the writer leaves CUOVERLAP_STREAM_ORIGIN empty when the creating calls are not all seen") {
  TempPath temp;
  {
    TraceWriter writer(temp.path, 1234);
    writer.setStreamOrigins(false);
    writer.onStream({1, 13, 0, 1, 3});
    writer.close();
  }
  ReadBack db(temp.path);
  CHECK(db.text("SELECT count(*) FROM CUOVERLAP_STREAM_ORIGIN") == "0");
  CHECK(db.text("SELECT count(*) FROM TARGET_INFO_CUDA_STREAM") == "1");
}
TEST_CASE("committed rows survive a writer that is never closed") {
  TempPath temp;
  auto* writer = new TraceWriter(temp.path, 1);
  writeSample(*writer);
  writer->commit();
  KernelRow late;
  late.start = 900, late.end = 950, late.name = "late";
  writer->onKernel(late);  // not committed: a killed process loses it
  // The connection is left open, as in a process killed now; a second reader sees the commit.
  ReadBack db(temp.path);
  CHECK(db.text("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL") == "1");
  CHECK(db.text("SELECT value FROM CUOVERLAP_SESSION WHERE key='records.kernel'") == "1");
  delete writer;
}

TEST_CASE("the writer never overwrites an existing file") {
  TempPath temp;
  { TraceWriter first(temp.path, 1); }
  CHECK_THROWS_AS(TraceWriter(temp.path, 1), WriterError);
  CHECK_THROWS_AS(TraceWriter("/nonexistent-dir/x.sqlite", 1), WriterError);
}

TEST_CASE("unified-memory records land in the nsys tables: migrations as UVM copies, fault groups") {
  TempPath temp;
  {
    TraceWriter writer(temp.path, 1234);
    UnifiedMemoryRow h2d;
    h2d.kind = UnifiedMemoryKind::kBytesHtoD;
    h2d.start = 100, h2d.end = 150, h2d.value = 2 << 20, h2d.address = 0x200000;
    h2d.src_id = 0, h2d.dst_id = 1, h2d.process_id = 1234, h2d.flags = 2;
    writer.onUnifiedMemory(h2d);
    UnifiedMemoryRow d2h = h2d;
    d2h.kind = UnifiedMemoryKind::kBytesDtoH, d2h.src_id = 1, d2h.dst_id = 0, d2h.start = 400;
    d2h.end = 410, d2h.value = 4096;
    writer.onUnifiedMemory(d2h);
    UnifiedMemoryRow fault;
    fault.kind = UnifiedMemoryKind::kGpuPageFault;
    fault.start = 90, fault.end = 160, fault.value = 12, fault.address = 0x200000, fault.src_id = 1;
    fault.process_id = 1234, fault.flags = 1;
    writer.onUnifiedMemory(fault);
    UnifiedMemoryRow cpu;
    cpu.kind = UnifiedMemoryKind::kCpuPageFault;
    cpu.start = 300, cpu.value = 0x401000, cpu.address = 0x200000, cpu.process_id = 1234;
    writer.onUnifiedMemory(cpu);
    UnifiedMemoryRow thrash;
    thrash.kind = UnifiedMemoryKind::kThrashing;
    thrash.start = 500, thrash.value = 65536, thrash.address = 0x300000, thrash.devices = 3;
    writer.onUnifiedMemory(thrash);
    UnifiedMemoryRow unfinished = fault;
    unfinished.end = 0;
    writer.onUnifiedMemory(unfinished);
    writer.close();
    CHECK(writer.counts()[static_cast<std::size_t>(RecordKind::kUmMigration)] == 2);
    CHECK(writer.counts()[static_cast<std::size_t>(RecordKind::kIncomplete)] == 1);
  }
  ReadBack db(temp.path);
  const std::string pid = std::to_string(schema::encodeGlobalPid(1234));
  CHECK(db.text("SELECT start, end, deviceId, streamId, correlationId, bytes, copyKind, srcKind, "
                "dstKind, migrationCause, virtualAddress, globalPid FROM CUPTI_ACTIVITY_KIND_MEMCPY "
                "ORDER BY start") ==
        "100|150|1|0|NULL|2097152|11|4|4|2|2097152|" + pid + ";400|410|1|0|NULL|4096|12|4|4|2|2097152|" +
            pid);
  CHECK(db.text("SELECT start, end, globalPid, deviceId, address, numberOfPageFaults, faultAccessType "
                "FROM CUDA_UM_GPU_PAGE_FAULT_EVENTS") == "90|160|" + pid + "|1|2097152|12|1");
  CHECK(db.text("SELECT f.start, f.address, f.originalFaultPc, s.value FROM "
                "CUDA_UM_CPU_PAGE_FAULT_EVENTS f JOIN StringIds s ON s.id = f.module") ==
        "300|2097152|4198400|");
  CHECK(db.text("SELECT start, address, bytes, devices, kind FROM CUOVERLAP_UM_THRASHING_EVENTS") ==
        "500|3145728|65536|3|0");
  CHECK(db.text("SELECT label FROM ENUM_CUDA_UNIF_MEM_MIGRATION WHERE id = 2") == "Page fault");
  CHECK(db.text("SELECT value FROM CUOVERLAP_SESSION WHERE key = 'records.um_gpu_fault'") == "1");
}

TEST_CASE("GPU metrics land in nsys's tables, made only when sampled, and merge across processes") {
  TempPath with, without;
  without.path = "/tmp/cuoverlap_writer_test_plain_" + std::to_string(getpid()) + ".sqlite";
  without.removeAll();
  const std::string merged = "/tmp/cuoverlap_writer_test_merged_" + std::to_string(getpid()) + ".sqlite";
  std::remove(merged.c_str());
  {
    TraceWriter writer(with.path, 1234);
    writer.onContext({1, 0, 7});
    GpuMetricBatch batch;
    batch.names = {{0, 0, "DRAM Read [bytes]", "GPU 0 GH100 (CUPTI PM sampling)"},
                   {0, 3, "Warps Active [% of peak]", "GPU 0 GH100 (CUPTI PM sampling)"}};
    batch.values = {{1000, 0, 0, 2097152.0}, {1000, 0, 3, 12.5}, {2000, 0, 0, 0.0}, {2000, 0, 3, 97.25}};
    writer.onGpuMetrics(batch);
    writer.onGpuMetrics({{}, {{3000, 0, 0, 4096.0}}});  // a later batch: values only
    writer.setSessionValue("pid", "1234");
    writer.setSessionValue(std::string(schema::session_key::kGpuMetricsIntervalNs), "1000");
    writer.setSessionValue(std::string(schema::session_key::kGpuMetricsDevices), "0");
    writer.setSessionValue(std::string(schema::session_key::kGpuMetricsSamples), "3");
    writer.setSessionValue(std::string(schema::session_key::kGpuMetricsLost), "2");
    writer.setSessionValue(std::string(schema::session_key::kGpuMetricsError), "GPU 1: counters unavailable");
    writer.close();
    CHECK(writer.counts()[static_cast<std::size_t>(RecordKind::kGpuMetric)] == 5);
  }
  {
    TraceWriter writer(without.path, 5678);
    writer.onContext({1, 0, 7});
    writer.setSessionValue("pid", "5678");
    writer.close();
  }
  {
    ReadBack db(with.path);
    CHECK(db.text("SELECT typeId, sourceId, metricId, metricName FROM TARGET_INFO_GPU_METRICS ORDER BY metricId") ==
          "0|0|0|DRAM Read [bytes];0|0|3|Warps Active [% of peak]");
    // Whole bytes as integers, a percentage with its fraction.
    CHECK(db.text("SELECT timestamp, metricId, value, typeof(value) FROM GPU_METRICS ORDER BY timestamp, metricId") ==
          "1000|0|2097152|integer;1000|3|12.5|real;2000|0|0|integer;2000|3|97.25|real;3000|0|4096|integer");
    CHECK(db.text("SELECT value FROM CUOVERLAP_SESSION WHERE key = 'records.gpu_metric'") == "5");
    ReadBack plain(without.path);
    CHECK(plain.text("SELECT count(*) FROM sqlite_master WHERE name IN ('GPU_METRICS', 'TARGET_INFO_GPU_METRICS')") == "0");
  }
  schema::MergeOptions options;
  options.root_pid = 1234;
  schema::mergeTraceFiles({with.path, without.path}, merged, options);
  {
    ReadBack db(merged);
    CHECK(db.text("SELECT count(*) FROM GPU_METRICS") == "5");
    CHECK(db.text("SELECT key, value FROM CUOVERLAP_SESSION WHERE key LIKE 'gpu_metrics.%' ORDER BY key") ==
          "gpu_metrics.devices|0;gpu_metrics.error|GPU 1: counters unavailable;gpu_metrics.interval_ns|1000;"
          "gpu_metrics.lost|2;gpu_metrics.samples|3");
  }
  std::remove(merged.c_str());
  schema::mergeTraceFiles({without.path}, merged, options);
  {
    ReadBack db(merged);
    CHECK(db.text("SELECT count(*) FROM sqlite_master WHERE name IN ('GPU_METRICS', 'TARGET_INFO_GPU_METRICS')") == "0");
    CHECK(db.text("SELECT count(*) FROM CUOVERLAP_SESSION WHERE key LIKE 'gpu_metrics.%'") == "0");
  }
  std::remove(merged.c_str());
}

TEST_CASE("op buffer rows land in CUOVERLAP_OP_BUFFERS and keep their ops' correlation ids when merged") {
  TempPath first, second;
  second.path = "/tmp/cuoverlap_writer_test_second_" + std::to_string(getpid()) + ".sqlite";
  second.removeAll();
  const std::string merged = "/tmp/cuoverlap_writer_test_merged_" + std::to_string(getpid()) + ".sqlite";
  std::remove(merged.c_str());
  {
    TraceWriter writer(first.path, 1234);
    writer.onContext({1, 0, 7});
    writer.onOpBuffers({{5, 0x7f0000000000, 4096, 1}, {5, 0x7f0000100000, 4096, 2}, {6, 0x7f0000100000, 1 << 20, 3}});
    writer.setSessionValue("pid", "1234");
    writer.close();
    CHECK(writer.counts()[static_cast<std::size_t>(RecordKind::kOpBuffer)] == 3);
  }
  {
    TraceWriter writer(second.path, 5678);
    writer.onContext({1, 0, 7});
    writer.onApi({10, 20, ApiKind::kRuntime, 211, 5678, 5678, 9, 0, "cudaLaunchKernel_v7000"});
    writer.onOpBuffers({{9, 0x7f0000200000, 64, 3}});
    writer.setSessionValue("pid", "5678");
    writer.close();
  }
  {
    ReadBack db(first.path);
    CHECK(db.text("SELECT correlationId, address, bytes, access FROM CUOVERLAP_OP_BUFFERS ORDER BY rowid") ==
          "5|139637976727552|4096|1;5|139637977776128|4096|2;6|139637977776128|1048576|3");
    CHECK(db.text("SELECT value FROM CUOVERLAP_SESSION WHERE key = 'records.op_buffer'") == "3");
  }
  schema::MergeOptions options;
  options.root_pid = 1234;
  schema::mergeTraceFiles({first.path, second.path}, merged, options);
  {
    ReadBack db(merged);
    // The second process's correlation ids move past the first's, as its API calls' do.
    CHECK(db.text("SELECT count(*) FROM CUOVERLAP_OP_BUFFERS") == "4");
    CHECK(db.text("SELECT o.correlationId = r.correlationId FROM CUOVERLAP_OP_BUFFERS o, "
                  "CUPTI_ACTIVITY_KIND_RUNTIME r WHERE o.address = 139637978824704") == "1");
  }
  std::remove(merged.c_str());
}

TEST_CASE("memory records land in CUDA_GPU_MEMORY_USAGE_EVENTS as nsys exports them") {
  TempPath file;
  {
    TraceWriter writer(file.path, 1234);
    MemoryRow allocation;
    allocation.timestamp = 1000, allocation.address = 0x7f0000200000, allocation.bytes = 3 << 20;
    allocation.pc = 77, allocation.device_id = 0, allocation.context_id = 1, allocation.correlation_id = 41;
    allocation.mem_kind = 2;
    MemoryRow release = allocation;
    release.allocation = false, release.timestamp = 2000, release.correlation_id = 57;
    MemoryRow pooled = allocation;
    pooled.timestamp = 3000, pooled.has_stream = true, pooled.stream_id = 13, pooled.pool = true;
    pooled.pool_address = 0x7f0000000000, pooled.pool_size = 32 << 20, pooled.pool_utilized = 5 << 20;
    writer.onMemory(allocation);
    writer.onMemory(release);
    writer.onMemory(pooled);
    writer.setSessionValue("pid", "1234");
    writer.close();
    CHECK(writer.counts()[static_cast<std::size_t>(RecordKind::kMemory)] == 3);
  }
  ReadBack db(file.path);
  CHECK(db.text("SELECT start, address, bytes, memKind, memoryOperationType, correlationId, streamId, "
                "localMemoryPoolSize, localMemoryPoolUtilizedSize FROM CUDA_GPU_MEMORY_USAGE_EVENTS ORDER BY start") ==
        "1000|139637978824704|3145728|2|0|41|NULL|NULL|NULL;2000|139637978824704|3145728|2|1|57|NULL|NULL|NULL;"
        "3000|139637978824704|3145728|2|0|41|13|33554432|5242880");
  CHECK(db.text("SELECT count(*) FROM CUDA_GPU_MEMORY_USAGE_EVENTS e JOIN ENUM_CUDA_DEV_MEM_EVENT_OPER o "
                "ON e.memoryOperationType = o.id WHERE o.label = 'Allocation'") == "2");
  CHECK(db.text("SELECT value FROM CUOVERLAP_SESSION WHERE key = 'records.memory'") == "3");
}
