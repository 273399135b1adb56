// The reader on our own traces and on the real Nsight Systems exports of each schema variant.
#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <map>

#include <sqlite3.h>

#include "cuoverlap/reader.h"
#include "cuoverlap/trace_slice.h"
#include "sqlite_db.h"
#include "synthetic_trace.h"

using namespace cuoverlap;
using cuoverlap::testing::SyntheticOp;
using cuoverlap::testing::SyntheticTrace;

namespace {

std::string shared(const std::string& name) { return std::string(CUOVERLAP_SHARED_TRACES) + "/" + name; }

std::string fileBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::size_t countOps(const Trace& trace, OpKind kind) {
  return static_cast<std::size_t>(std::count_if(trace.ops.begin(), trace.ops.end(),
                                                [&](const GpuOp& op) { return op.kind == kind; }));
}

}  // namespace

TEST_CASE("our trace: source, sorted ops, interned names, async flags", "[reader]") {
  std::string path = cuoverlap::testing::tempTracePath("reader_ours.sqlite");
  {
    SyntheticTrace trace(path);
    trace.addDevice(0, "NVIDIA H200");
    trace.addOp({OpKind::kKernel, 5000, 6000});
    trace.addOp({OpKind::kKernel, 1000, 2000});  // same name, new StringIds row
    SyntheticOp copy{OpKind::kMemcpy, 3000, 3500};
    copy.async = 1;
    copy.correlation = 9;
    trace.addOp(copy);
    SyntheticOp memset{OpKind::kMemset, 4000, 4100};
    memset.correlation = 10;  // no async column value: known from the runtime call name
    trace.addOp(memset);
    trace.addRuntimeCall(3900, 3950, 10, "cudaMemset_v3020", 4242, 7);
  }
  Trace trace = readTrace(path);
  REQUIRE(trace.source == TraceSource::kCuoverlap);
  REQUIRE(trace.ops.size() == 4);
  REQUIRE(std::is_sorted(trace.ops.begin(), trace.ops.end(),
                         [](const GpuOp& a, const GpuOp& b) { return a.start < b.start; }));
  REQUIRE(trace.ops[0].name == trace.ops[3].name);
  REQUIRE(trace.str(trace.ops[0].name) == "scale_kernel");
  REQUIRE(std::count(trace.strings.begin(), trace.strings.end(), "scale_kernel") == 1);
  REQUIRE(trace.ops[0].grid_blocks == 128);
  REQUIRE(trace.ops[0].block_threads == 256);
  REQUIRE(trace.ops[0].pid == 4242);
  REQUIRE(trace.ops[1].flags == (op_flag::kAsync | op_flag::kAsyncKnown));
  REQUIRE(trace.ops[2].kind == OpKind::kMemset);
  REQUIRE(trace.ops[2].flags == op_flag::kAsyncKnown);  // synchronous cudaMemset
  REQUIRE(trace.devices.size() == 1);
  REQUIRE(trace.devices[0].name == "NVIDIA H200");
  REQUIRE(trace.runtime_calls.size() == 1);
  REQUIRE(trace.runtime_calls[0].tid == 7);
  REQUIRE(trace.session.size() == 2);  // schema, complete (a finished trace)
  REQUIRE(trace.warnings.empty());
}

TEST_CASE("nsys 2022.4 export: null stream, streams, device, async copies", "[reader][nsys]") {
  std::string path = shared("gpu4_report.sqlite.gz");
  std::string before = fileBytes(path);
  Trace trace = readTrace(path);
  REQUIRE(fileBytes(path) == before);  // read-only: the file is untouched
  REQUIRE(trace.source == TraceSource::kNsys);
  REQUIRE(countOps(trace, OpKind::kKernel) == 4);
  REQUIRE(countOps(trace, OpKind::kMemcpy) == 12);
  REQUIRE(trace.runtime_calls.size() == 38);
  REQUIRE(trace.syncs.size() == 1);
  REQUIRE(trace.streams.size() == 11);
  REQUIRE(trace.devices.size() == 1);
  REQUIRE(trace.devices[0].name == "Tesla T4");
  REQUIRE(trace.devices[0].sm_count == 40);
  REQUIRE(trace.devices[0].l2_bytes == 4u << 20);  // TARGET_INFO_GPU.l2CacheSize
  REQUIRE(trace.contexts.size() == 1);
  REQUIRE(trace.contexts[0].null_stream_id == 7u);
  REQUIRE(trace.contexts[0].pid == 200206);
  for (const GpuOp& op : trace.ops) {
    REQUIRE(op.pid == 200206);
    if (op.kind == OpKind::kMemcpy) REQUIRE(op.flags == (op_flag::kAsync | op_flag::kAsyncKnown));
  }
  auto priority = std::find_if(trace.streams.begin(), trace.streams.end(),
                               [](const Stream& s) { return s.stream_id == 12; });
  REQUIRE(priority->priority == -5);
}

TEST_CASE("2020-era export: device table variants, NVTX text inline and by id", "[reader][nsys]") {
  Trace trace = readTrace(shared("nvtxex_cudf-groupby.sqlite.gz"));
  REQUIRE(countOps(trace, OpKind::kKernel) == 195);
  REQUIRE(countOps(trace, OpKind::kMemcpy) == 97);
  REQUIRE(trace.devices.size() == 2);
  REQUIRE(trace.devices[0].name == "Quadro RTX 8000");
  REQUIRE(trace.devices[0].sm_count == 72);        // from TARGET_INFO_CUDA_GPU
  REQUIRE(trace.devices[0].async_engines == 3);
  REQUIRE(trace.contexts.at(0).null_stream_id == 7u);
  REQUIRE(trace.nvtx.size() == 628);
  bool any_empty = std::any_of(trace.nvtx.begin(), trace.nvtx.end(),
                               [](const NvtxRange& r) { return r.text == kNoString; });
  REQUIRE_FALSE(any_empty);
  REQUIRE(trace.str(trace.nvtx[0].text) == "DATAFRAME_INIT");
  REQUIRE(trace.str(trace.nvtx[0].domain) == "cudf_python");
  bool nested = std::any_of(trace.nvtx.begin(), trace.nvtx.end(),
                            [](const NvtxRange& r) { return r.depth > 0; });
  REQUIRE(nested);
  // Pageable copies issued by cudaMemcpy* (no async column in nsys): classified from the API.
  for (const GpuOp& op : trace.ops) {
    if (op.kind == OpKind::kMemcpy) REQUIRE((op.flags & op_flag::kAsyncKnown) != 0);
  }
}

TEST_CASE("nsys 2026.1 minimal export: missing columns tolerated", "[reader][nsys]") {
  Trace trace = readTrace(shared("nsysai_healthy_1pct.sqlite.gz"));
  REQUIRE(trace.ops.size() == 400);
  REQUIRE(trace.runtime_calls.size() == 400);
  REQUIRE(trace.devices.at(0).name == "NVIDIA H100 80GB HBM3");
  REQUIRE(trace.ops[0].start == 0);  // kept in the model; metrics skip it
  REQUIRE(trace.str(trace.ops[0].name) == "void at::native::elementwise_add<float>(float*, float*)");
  REQUIRE(trace.ops[0].grid_blocks == 128);
}

TEST_CASE("our trace: CUDA event records read and sorted by correlation id", "[reader]") {
  Trace trace = readTrace(std::string(CUOVERLAP_TEST_DATA) + "/streams_event-dag.sqlite.gz");
  // 40 tiles x 3 events (A copied, B copied, joined) and the timer's start and stop.
  REQUIRE(trace.event_records.size() == 122);
  REQUIRE(std::is_sorted(trace.event_records.begin(), trace.event_records.end(),
                         [](const CudaEventRecord& a, const CudaEventRecord& b) {
                           return a.correlation_id < b.correlation_id;
                         }));
  auto record = std::find_if(trace.event_records.begin(), trace.event_records.end(),
                             [](const CudaEventRecord& r) { return r.event_id == 1; });
  REQUIRE(record != trace.event_records.end());
  CHECK(record->stream_id == 13);
  CHECK(record->correlation_id == 255);
  CHECK(record->pid == schema::pidOf(36020682752ULL));
  auto wait = std::find_if(trace.syncs.begin(), trace.syncs.end(),
                           [](const SyncEvent& s) { return s.correlation_id == 258; });
  REQUIRE(wait != trace.syncs.end());
  CHECK(wait->event_id == 1);
  CHECK(wait->stream_id == 15);
  // nsys exports have no such table: no records, no error.
  CHECK(readTrace(shared("nsysai_healthy_1pct.sqlite.gz")).event_records.empty());
}

TEST_CASE("op tables decoded on their own threads merge into the order one thread gives", "[reader]") {
  // 3 x 6000 ops: enough rows for the per-table threads (reader_table_stream.h). Every start is
  // shared by one op of each table and the kernel names cycle, so the merge order (start, then end,
  // then table: kernels, copies, memsets) and the interning order of names are both checked.
  const std::string path = cuoverlap::testing::tempTracePath("reader_parallel.sqlite");
  constexpr int kSteps = 6000;
  {
    SyntheticTrace trace(path);
    for (int i = 0; i < kSteps; ++i) {
      const Ns t = 1000 + 10 * i;
      SyntheticOp kernel{OpKind::kKernel, t, t + 5};
      kernel.name = "kernel_" + std::to_string(i % 7);
      kernel.correlation = static_cast<std::uint32_t>(3 * i + 1);
      trace.addOp(kernel);
      SyntheticOp copy{OpKind::kMemcpy, t, t + 5, CopyKind::kDtoH, 14};
      copy.async = i % 2;
      copy.correlation = static_cast<std::uint32_t>(3 * i + 2);
      trace.addOp(copy);
      SyntheticOp memset{OpKind::kMemset, t, t + 3, CopyKind::kHtoD, 15};
      memset.correlation = static_cast<std::uint32_t>(3 * i + 3);
      trace.addOp(memset);
    }
  }
  const Trace trace = readTrace(path);
  REQUIRE(trace.ops.size() == 3 * kSteps);
  for (int i = 0; i < kSteps; ++i) {
    const GpuOp& memset = trace.ops[3 * i];  // ends first at the same start
    const GpuOp& kernel = trace.ops[3 * i + 1];  // same start and end: the kernel table first
    const GpuOp& copy = trace.ops[3 * i + 2];
    INFO("step " << i);
    REQUIRE(kernel.kind == OpKind::kKernel);
    REQUIRE(memset.kind == OpKind::kMemset);
    REQUIRE(copy.kind == OpKind::kMemcpy);
    REQUIRE(kernel.start == 1000 + 10 * i);
    REQUIRE(kernel.correlation_id == static_cast<std::uint32_t>(3 * i + 1));
    REQUIRE(copy.correlation_id == static_cast<std::uint32_t>(3 * i + 2));
    REQUIRE(memset.correlation_id == static_cast<std::uint32_t>(3 * i + 3));
    REQUIRE(trace.str(kernel.name) == "kernel_" + std::to_string(i % 7));
    REQUIRE((copy.flags & op_flag::kAsync) == (i % 2 ? op_flag::kAsync : 0));
    REQUIRE(copy.copy_kind == CopyKind::kDtoH);
  }
  // Names interned in the order the kernels come: kernel_0 first, as one thread reads them.
  const auto first = std::find(trace.strings.begin(), trace.strings.end(), "kernel_0");
  const auto last = std::find(trace.strings.begin(), trace.strings.end(), "kernel_6");
  CHECK(first < last);
}

namespace {

// Unified-memory tables with the columns of an nsys 3.x export (`nsys profile
// --cuda-um-gpu-page-faults=true --cuda-um-cpu-page-faults=true`, then `nsys export`), written
// here column by column so that the reader is checked against nsys's layout, not our DDL.
void addNsysUnifiedMemory(SyntheticTrace& trace) {
  trace.exec("CREATE TABLE CUDA_UM_GPU_PAGE_FAULT_EVENTS (start INTEGER NOT NULL, end INTEGER NOT "
             "NULL, globalPid INTEGER NOT NULL, deviceId INTEGER NOT NULL, address INTEGER NOT NULL, "
             "numberOfPageFaults INTEGER NOT NULL, faultAccessType INTEGER NOT NULL)");
  trace.exec("CREATE TABLE CUDA_UM_CPU_PAGE_FAULT_EVENTS (start INTEGER NOT NULL, globalPid INTEGER "
             "NOT NULL, address INTEGER NOT NULL, originalFaultPc INTEGER, CpuInstruction INTEGER "
             "NOT NULL, module INTEGER NOT NULL, unresolvedFaultPc INTEGER, sourceFile INTEGER, "
             "sourceLine INTEGER)");
  const std::string pid = std::to_string(cuoverlap::schema::encodeGlobalPid(4242));
  // Out of time order, as a table need not be.
  trace.exec("INSERT INTO CUDA_UM_GPU_PAGE_FAULT_EVENTS VALUES (2500, 2900, " + pid +
             ", 0, 8388608, 7, 2), (1200, 1800, " + pid + ", 0, 4194304, 12, 1)");
  trace.exec("INSERT INTO CUDA_UM_CPU_PAGE_FAULT_EVENTS VALUES (9000, " + pid +
             ", 4194304, 4198400, 1, 1, 1, NULL, NULL)");
  // Two migrations (UVM HtoD, page fault; UVM DtoH, eviction) beside an ordinary pinned copy.
  const std::string columns = "(start, end, deviceId, contextId, streamId, correlationId, globalPid, "
                              "bytes, copyKind, srcKind, dstKind, migrationCause, virtualAddress)";
  trace.exec("INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY " + columns + " VALUES (1300, 1700, 0, 0, 0, "
             "NULL, " + pid + ", 2097152, 11, 4, 4, 2, 4194304), (9100, 9200, 0, 0, 0, NULL, " + pid +
             ", 65536, 12, 4, 4, 4, 4194304)");
}

}  // namespace

TEST_CASE("unified memory in the nsys layout: faults, migrations kept out of the ops", "[reader][nsys]") {
  std::string path = cuoverlap::testing::tempTracePath("reader_um_nsys.sqlite");
  {
    SyntheticTrace trace(path);
    trace.exec("DROP TABLE CUOVERLAP_SESSION");  // an nsys export, not ours
    trace.addDevice(0, "NVIDIA H100");
    trace.addOp({OpKind::kKernel, 1000, 3000});
    trace.addOp({OpKind::kMemcpy, 5000, 5100});
    addNsysUnifiedMemory(trace);
  }
  Trace trace = readTrace(path);
  REQUIRE(trace.source == TraceSource::kNsys);
  CHECK(countOps(trace, OpKind::kMemcpy) == 1);  // the pinned copy; migrations are not ops
  const UnifiedMemory& um = trace.unified_memory;
  REQUIRE(um.gpu_faults.size() == 2);
  CHECK(um.gpu_faults[0].start == 1200);
  CHECK(um.gpu_faults[0].end == 1800);
  CHECK(um.gpu_faults[0].faults == 12);
  CHECK(um.gpu_faults[0].address == 4194304);
  CHECK(um.gpu_faults[0].pid == 4242);
  CHECK(um.gpu_faults[0].access == cuoverlap::schema::UmAccessType::kRead);
  CHECK(um.gpu_faults[1].access == cuoverlap::schema::UmAccessType::kWrite);
  REQUIRE(um.cpu_faults.size() == 1);
  CHECK(um.cpu_faults[0].time == 9000);
  REQUIRE(um.migrations.size() == 2);
  CHECK(um.migrations[0].direction == CopyKind::kUvmHtoD);
  CHECK(um.migrations[0].bytes == 2097152);
  CHECK(um.migrations[0].cause == cuoverlap::schema::UmMigrationCause::kCoherence);
  CHECK(um.migrations[1].direction == CopyKind::kUvmDtoH);
  CHECK(um.migrations[1].cause == cuoverlap::schema::UmMigrationCause::kEviction);
  CHECK(um.thrashing.empty());
}

TEST_CASE("unified memory: a trace without the tables reads none", "[reader]") {
  Trace trace = readTrace(shared("gpu4_report1.sqlite.gz"));
  CHECK(trace.unified_memory.empty());
}

TEST_CASE("op buffers: read and found per op; a table with a bad row is not used, and says so", "[reader]") {
  const std::string path = cuoverlap::testing::tempTracePath("reader_op_buffers.sqlite");
  {
    SyntheticTrace trace(path);
    trace.exec(schema::kCreateCollectorTables);
    trace.addRuntimeCall(100, 200, 5, "cudaLaunchKernel_v7000");
    // globalPid (pid << 24), correlationId, address, bytes, access; out of order, as merged files are
    trace.exec("INSERT INTO CUOVERLAP_OP_BUFFERS VALUES (71303168, 6, 4096, 64, 2), "
               "(71303168, 5, 8192, 1048576, 3), (71303168, 5, 65536, 4096, 1)");
  }
  // Read only for a trace with a stream wait, the only thing they serve.
  CHECK(readTrace(path).op_buffers.empty());
  {
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
    REQUIRE(sqlite3_exec(db,
                         "INSERT INTO CUPTI_ACTIVITY_KIND_SYNCHRONIZATION VALUES "
                         "(300, 301, 0, 1, 7, 9, 71303168, 2, 1)",
                         nullptr, nullptr, nullptr) == SQLITE_OK);
    sqlite3_close(db);
  }
  Trace trace = readTrace(path);
  REQUIRE(trace.op_buffers.size() == 3);
  CHECK(trace.warnings.empty());
  GpuOp op;
  op.pid = trace.op_buffers.front().pid;
  op.correlation_id = 5;
  const auto [first, last] = opBuffersOf(trace, op);
  REQUIRE(last - first == 2);
  CHECK(first->correlation_id == 5);
  CHECK((first + 1)->correlation_id == 5);
  op.correlation_id = 0;  // no launch call: no rows
  CHECK(opBuffersOf(trace, op).first == opBuffersOf(trace, op).second);
  {
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
    REQUIRE(sqlite3_exec(db, "INSERT INTO CUOVERLAP_OP_BUFFERS VALUES (71303168, 6, 4096, 0, 2)", nullptr, nullptr,
                         nullptr) == SQLITE_OK);
    sqlite3_close(db);
  }
  trace = readTrace(path);
  CHECK(trace.op_buffers.empty());
  REQUIRE(trace.warnings.size() == 1);
  CHECK(trace.warnings[0].find("1 of 4 rows of CUOVERLAP_OP_BUFFERS are not valid") != std::string::npos);
}

TEST_CASE("memory events: read from nsys's table in time order; a table with a bad row is not used, and says so",
          "[reader]") {
  const std::string path = cuoverlap::testing::tempTracePath("reader_memory_events.sqlite");
  {
    SyntheticTrace trace(path);
    trace.addRuntimeCall(100, 200, 5, "cudaMalloc_v3020");
    // An older nsys export's shape: no streamId, columns in its order; rows out of time order.
    trace.exec("CREATE TABLE CUDA_GPU_MEMORY_USAGE_EVENTS (start INTEGER NOT NULL, globalPid INTEGER NOT NULL, "
               "deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, address INTEGER NOT NULL, pc INTEGER NOT NULL, "
               "bytes INTEGER NOT NULL, memKind INTEGER NOT NULL, memoryOperationType INTEGER NOT NULL, name TEXT, "
               "correlationId INTEGER);"
               "INSERT INTO CUDA_GPU_MEMORY_USAGE_EVENTS VALUES "
               "(900, 71303168, 0, 1, 8388608, 0, 1048576, 2, 1, NULL, 9), "
               "(150, 71303168, 0, 1, 8388608, 0, 1048576, 2, 0, NULL, 5), "
               "(160, 71303168, 0, 1, 65536, 0, 4096, 1, 0, NULL, NULL)");
  }
  Trace trace = readTrace(path);
  REQUIRE(trace.memory_events.size() == 3);
  CHECK(trace.warnings.empty());
  const MemoryEvent& first = trace.memory_events[0];
  CHECK(first.time == 150);
  CHECK(first.pid == 4);
  CHECK(first.correlation_id == 5);
  CHECK(first.address == 8388608);
  CHECK(first.bytes == 1048576);
  CHECK(first.kind == MemKind::kDevice);
  CHECK(first.allocation);
  CHECK(trace.memory_events[1].kind == MemKind::kPinned);
  CHECK(trace.memory_events[1].correlation_id == 0);  // NULL: no call named
  CHECK_FALSE(trace.memory_events[2].allocation);
  // Kept by a slice of its process (they say which memory lived before the slice's ops).
  CHECK(cuoverlap::sliceProcesses(trace, {4}).memory_events.size() == 3);
  CHECK(cuoverlap::sliceProcesses(trace, {5}).memory_events.empty());
  {
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
    REQUIRE(sqlite3_exec(db, "INSERT INTO CUDA_GPU_MEMORY_USAGE_EVENTS VALUES (170, 71303168, 0, 1, 0, 0, 64, 2, 7, NULL, 6)",
                         nullptr, nullptr, nullptr) == SQLITE_OK);
    sqlite3_close(db);
  }
  trace = readTrace(path);
  CHECK(trace.memory_events.empty());
  REQUIRE(trace.warnings.size() == 1);
  CHECK(trace.warnings[0].find("1 of 4 rows of CUDA_GPU_MEMORY_USAGE_EVENTS are not valid") != std::string::npos);
}

TEST_CASE("rowsAtMost: the rowid range where it can hold the rows, else count(*)", "[reader]") {
  const std::string path = cuoverlap::testing::tempTracePath("reader_rows_at_most.sqlite");
  {
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
    const char* sql =
        "CREATE TABLE dense (x INTEGER);"
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1000) "
        "INSERT INTO dense SELECT i FROM n;"
        "CREATE TABLE holes AS SELECT x FROM dense; DELETE FROM holes WHERE x % 2 = 0;"
        "CREATE TABLE far (x INTEGER); INSERT INTO far (rowid, x) VALUES (1, 1), (4611686018427387904, 2);"
        "CREATE TABLE keyed (k INTEGER PRIMARY KEY, x) WITHOUT ROWID; INSERT INTO keyed VALUES (5, 1), (9, 2);"
        "CREATE TABLE empty (x INTEGER);";
    REQUIRE(sqlite3_exec(db, sql, nullptr, nullptr, nullptr) == SQLITE_OK);
    sqlite3_close(db);
  }
  const sqlite::Database db(path);
  CHECK(sqlite::rowsAtMost(db, "dense") == 1000);
  CHECK(sqlite::rowsAtMost(db, "holes") == 999);  // rowids 1..999 left: at least the 500 rows
  CHECK(sqlite::rowsAtMost(db, "far") == 2);      // a range no file this size could hold
  CHECK(sqlite::rowsAtMost(db, "keyed") == 2);    // no rowids
  CHECK(sqlite::rowsAtMost(db, "empty") == 0);
}

TEST_CASE("our trace: stream origins tell a per-thread default stream from a created one", "[reader]") {
  // CUPTI flags both 1 (blocking); CUOVERLAP_STREAM_ORIGIN holds each STREAM record's correlation
  // id and, where the collector saw it, the stream-creating call of that id.
  const std::string path = cuoverlap::testing::tempTracePath("reader_stream_origin.sqlite");
  auto streamsOf = [](const std::string& file) {
    const Trace trace = readTrace(file);
    std::map<std::uint32_t, StreamOrigin> origins;
    for (const Stream& s : trace.streams) origins[s.stream_id] = s.origin;
    return origins;
  };
  {
    SyntheticTrace trace(path);
    trace.exec("INSERT INTO TARGET_INFO_CUDA_CONTEXT_INFO VALUES (7, 0, 0, 4242, 0, 1)");
    // streamId, hwId, vmId, processId, contextId, priority, flag
    trace.exec("INSERT INTO TARGET_INFO_CUDA_STREAM VALUES (7,0,0,4242,1,0,3), (8,0,0,4242,1,0,1), "
               "(13,0,0,4242,1,0,1), (14,0,0,4242,1,0,1), (15,0,0,4242,1,0,1), (16,0,0,4242,1,0,2), "
               "(17,0,0,4242,1,0,2), (18,0,0,4242,1,0,1), (19,0,0,4242,1,0,1)");
    trace.addRuntimeCall(100, 200, 21, "cudaStreamCreateWithFlags_v5000");  // 14's creator
    trace.addRuntimeCall(300, 310, 30, "cudaLaunchKernel_v7000");           // 15's first use
  }
  SECTION("a trace without the table: every origin unknown") {
    for (const auto& [id, origin] : streamsOf(path)) CHECK(origin == StreamOrigin::kUnknown);
  }
  SECTION("the table: created, per-thread, the context's own") {
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
    const char* sql =
        "CREATE TABLE CUOVERLAP_STREAM_ORIGIN (processId INTEGER NOT NULL, contextId INTEGER NOT NULL, "
        "streamId INTEGER NOT NULL, correlationId INTEGER, creator TEXT);"
        "INSERT INTO CUOVERLAP_STREAM_ORIGIN VALUES "
        "(4242, 1, 7, 2, NULL),"                          // the NULL stream: the context's call
        "(4242, 1, 8, 2, NULL),"                          // an internal stream, same call
        "(4242, 1, 13, 20, 'cudaStreamCreate_v3020'),"    // named by the collector
        "(4242, 1, 14, 21, NULL),"                        // its creating call is in the trace
        "(4242, 1, 15, 30, NULL),"                        // created inside a launch: per-thread
        "(4242, 1, 17, 22, 'cuStreamCreate'),"            // 16 has no row
        "(4242, 1, 18, 20, 'cudaStreamCreate_v3020'),"    // a later stream of 13's call: per-thread
        "(4242, 1, 19, NULL, 'cudaStreamCreate_v3020')";  // no id (not ours): its creator says
    REQUIRE(sqlite3_exec(db, sql, nullptr, nullptr, nullptr) == SQLITE_OK);
    sqlite3_close(db);
    const auto origins = streamsOf(path);
    CHECK(origins.at(7) == StreamOrigin::kContext);
    CHECK(origins.at(8) == StreamOrigin::kContext);
    CHECK(origins.at(13) == StreamOrigin::kCreated);
    CHECK(origins.at(14) == StreamOrigin::kCreated);
    CHECK(origins.at(15) == StreamOrigin::kPerThread);
    CHECK(origins.at(16) == StreamOrigin::kUnknown);
    CHECK(origins.at(17) == StreamOrigin::kCreated);
    CHECK(origins.at(18) == StreamOrigin::kPerThread);
    CHECK(origins.at(19) == StreamOrigin::kCreated);
  }
}
