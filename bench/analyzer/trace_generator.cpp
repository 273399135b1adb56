#include "trace_generator.h"

#include <sqlite3.h>

#include <algorithm>
#include <cstdio>
#include <stdexcept>
#include <string>

#include "trace_schema.h"

namespace cuoverlap::bench {

namespace {

void exec(sqlite3* db, const char* sql) {
  if (sqlite3_exec(db, sql, nullptr, nullptr, nullptr) != SQLITE_OK) {
    throw std::runtime_error(std::string("generator: ") + sqlite3_errmsg(db));
  }
}

sqlite3_stmt* prepare(sqlite3* db, const char* sql) {
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v2(db, sql, -1, &stmt, nullptr) != SQLITE_OK) {
    throw std::runtime_error(std::string("generator: ") + sqlite3_errmsg(db));
  }
  return stmt;
}

void bindAll(sqlite3_stmt* stmt, std::initializer_list<std::int64_t> values) {
  int i = 1;
  for (std::int64_t v : values) sqlite3_bind_int64(stmt, i++, v);
}

void stepReset(sqlite3* db, sqlite3_stmt* stmt) {
  if (sqlite3_step(stmt) != SQLITE_DONE) throw std::runtime_error(sqlite3_errmsg(db));
  sqlite3_reset(stmt);
}

}  // namespace

namespace {

// ranges < 0: no runtime calls and no NVTX; rank < 0: no NCCL kernels, process 4242.
void writeTrace(const std::string& path, std::int64_t ops, std::int64_t ranges, int rank) {
  std::remove(path.c_str());
  sqlite3* db = nullptr;
  if (sqlite3_open(path.c_str(), &db) != SQLITE_OK) throw std::runtime_error("cannot create " + path);
  exec(db, "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;");
  exec(db, schema::kCreateTables);
  exec(db, "BEGIN");
  exec(db, "INSERT INTO CUOVERLAP_SESSION VALUES ('schema', 'cuoverlap.trace/1');"
           "INSERT INTO TARGET_INFO_GPU (vmId, id, name, smCount) VALUES (0, 0, 'synthetic', 132);");
  for (int i = 1; i <= 8; ++i) {
    std::string sql = "INSERT INTO StringIds VALUES (" + std::to_string(i) + ", 'kernel_" +
                      std::to_string(i) + "<float>(float*, int)')";
    exec(db, sql.c_str());
  }
  exec(db, "INSERT INTO StringIds VALUES (9, "
           "'ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)')");
  exec(db, "INSERT INTO StringIds VALUES (20, 'cudaLaunchKernel_v7000'), "
           "(21, 'cudaMemcpyAsync_v3020'), (22, 'cudaMemsetAsync_v3020')");
  sqlite3_stmt* call = prepare(db,
      "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME (start, end, eventClass, globalTid, correlationId, "
      "nameId, returnValue) VALUES (?,?,0,?,?,?,0)");
  sqlite3_stmt* range = prepare(db,
      "INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid) VALUES (?,?,59,'step',?)");
  const std::int64_t global_tid = static_cast<std::int64_t>(schema::encodeGlobalTid(4242, 7));
  const std::int64_t per_range = ranges > 0 ? std::max<std::int64_t>(1, ops / ranges) : 0;
  sqlite3_stmt* kernel = prepare(db,
      "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, contextId, streamId, "
      "correlationId, globalPid, demangledName, shortName, registersPerThread, gridX, gridY, gridZ, "
      "blockX, blockY, blockZ, staticSharedMemory, dynamicSharedMemory, localMemoryPerThread, "
      "localMemoryTotal, gridId) VALUES (?,?,0,1,?,?,?,?,?,32,1024,1,1,256,1,1,0,4096,0,0,?)");
  sqlite3_stmt* memcpy = prepare(db,
      "INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY (start, end, deviceId, contextId, streamId, "
      "correlationId, globalPid, bytes, copyKind, srcKind, dstKind, async) "
      "VALUES (?,?,0,1,?,?,?,?,?,?,?,1)");
  sqlite3_stmt* memset = prepare(db,
      "INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET (start, end, deviceId, contextId, streamId, "
      "correlationId, globalPid, value, bytes, memKind, async) VALUES (?,?,0,1,?,?,?,0,?,2,1)");
  const std::int64_t global_pid =
      static_cast<std::int64_t>(schema::encodeGlobalPid(rank < 0 ? 4242 : 1000 + rank));
  std::uint64_t lcg = 88172645463325252ull;
  for (std::int64_t i = 0; i < ops; ++i) {
    lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
    std::int64_t start = 1'000'000'000 + i * 500;
    std::int64_t end = start + 800 + static_cast<std::int64_t>((lcg >> 33) % 1200);
    std::int64_t stream = 13 + (i / 5) % 4;
    std::int64_t correlation = i + 1;
    if (ranges >= 0) {
      const std::int64_t api = i % 5 == 4 ? 22 : (i % 5 == 0 || i % 5 == 3) ? 21 : 20;
      bindAll(call, {start - 3000, start - 2000, global_tid, correlation, api});
      stepReset(db, call);
    }
    if (per_range > 0 && i % per_range == 0 && i / per_range < ranges) {
      const std::int64_t last = std::min(ops, i + per_range) - 1;
      bindAll(range, {start - 3000, 1'000'000'000 + last * 500 - 2000, global_tid});
      stepReset(db, range);
    }
    if (rank >= 0 && i % 50 == 49) {
      bindAll(kernel, {start + rank * 100, end + 2000, 20, correlation, global_pid, 9, 9, i});
      stepReset(db, kernel);
      continue;
    }
    switch (i % 5) {
      case 0:
      case 3:  // HtoD pinned -> device, DtoH device -> pinned
        bindAll(memcpy, {start, end, stream, correlation, global_pid, 1 << 20, i % 5 == 0 ? 1 : 2,
                         i % 5 == 0 ? 1 : 2, i % 5 == 0 ? 2 : 1});
        stepReset(db, memcpy);
        break;
      case 4:
        bindAll(memset, {start, end, stream, correlation, global_pid, 1 << 16});
        stepReset(db, memset);
        break;
      default: {
        std::int64_t name = 1 + static_cast<std::int64_t>((lcg >> 40) % 8);
        bindAll(kernel, {start, end, stream, correlation, global_pid, name, name, i});
        stepReset(db, kernel);
      }
    }
  }
  sqlite3_finalize(call);
  sqlite3_finalize(range);
  sqlite3_finalize(kernel);
  sqlite3_finalize(memcpy);
  sqlite3_finalize(memset);
  exec(db, "COMMIT");
  sqlite3_close(db);
}

}  // namespace

void writeSyntheticTrace(const std::string& path, std::int64_t ops) { writeTrace(path, ops, -1, -1); }

void writeSyntheticTraceWithRanges(const std::string& path, std::int64_t ops, std::int64_t ranges) {
  writeTrace(path, ops, ranges, -1);
}

void writeSyntheticRankTrace(const std::string& path, std::int64_t ops, int rank) {
  writeTrace(path, ops, -1, rank);
}

}  // namespace cuoverlap::bench
