#include "synthetic_trace.h"

#include <cstdio>
#include <filesystem>
#include <stdexcept>
#include <string>

#include <unistd.h>

namespace cuoverlap::testing {

SyntheticTrace::SyntheticTrace(const std::string& path) {
  std::remove(path.c_str());
  if (sqlite3_open(path.c_str(), &db_) != SQLITE_OK) throw std::runtime_error("cannot create " + path);
  exec(schema::kCreateTables);
  exec("INSERT INTO CUOVERLAP_SESSION VALUES ('schema', 'cuoverlap.trace/1')");
  exec("INSERT INTO CUOVERLAP_SESSION VALUES ('complete', '1')");
  exec("BEGIN");
}

SyntheticTrace::~SyntheticTrace() { close(); }

void SyntheticTrace::close() {
  if (db_ == nullptr) return;
  exec("COMMIT");
  sqlite3_close(db_);
  db_ = nullptr;
}

void SyntheticTrace::exec(const std::string& sql) {
  char* error = nullptr;
  if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &error) != SQLITE_OK) {
    std::string message = error != nullptr ? error : "?";
    sqlite3_free(error);
    throw std::runtime_error("synthetic trace: " + message + " in: " + sql);
  }
}

std::int64_t SyntheticTrace::stringId(const std::string& value) {
  std::int64_t id = next_string_++;
  exec("INSERT INTO StringIds VALUES (" + std::to_string(id) + ", '" + value + "')");
  return id;
}

void SyntheticTrace::addOp(const SyntheticOp& op) {
  std::string common = std::to_string(op.start) + ", " + std::to_string(op.end) + ", " +
                       std::to_string(op.device) + ", 1, " + std::to_string(op.stream) + ", " +
                       std::to_string(op.correlation) + ", " +
                       std::to_string(schema::encodeGlobalPid(op.pid));
  std::string async = op.async < 0 ? "NULL" : std::to_string(op.async);
  switch (op.kind) {
    case OpKind::kKernel: {
      std::int64_t name = stringId(op.name);
      exec("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, contextId, streamId, "
           "correlationId, globalPid, demangledName, shortName, registersPerThread, gridX, gridY, "
           "gridZ, blockX, blockY, blockZ, staticSharedMemory, dynamicSharedMemory, "
           "localMemoryPerThread, localMemoryTotal, gridId) VALUES (" + common + ", " +
           std::to_string(name) + ", " + std::to_string(name) +
           ", 32, 64, 2, 1, 256, 1, 1, 1024, 0, 0, 0, 1)");
      break;
    }
    case OpKind::kMemcpy:
      exec("INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY (start, end, deviceId, contextId, streamId, "
           "correlationId, globalPid, bytes, copyKind, srcKind, dstKind, async) VALUES (" + common +
           ", 1048576, " + std::to_string(static_cast<int>(op.copy_kind)) + ", 1, 2, " + async + ")");
      break;
    case OpKind::kMemset:
      exec("INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET (start, end, deviceId, contextId, streamId, "
           "correlationId, globalPid, value, bytes, memKind, async) VALUES (" + common +
           ", 0, 4096, 2, " + async + ")");
      break;
  }
}

void SyntheticTrace::addRuntimeCall(Ns start, Ns end, std::uint32_t correlation,
                                    const std::string& name, std::uint32_t pid, std::uint32_t tid) {
  std::int64_t name_id = stringId(name);
  exec("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME (start, end, eventClass, globalTid, correlationId, "
       "nameId, returnValue) VALUES (" + std::to_string(start) + ", " + std::to_string(end) +
       ", 0, " + std::to_string(schema::encodeGlobalTid(pid, tid)) + ", " +
       std::to_string(correlation) + ", " + std::to_string(name_id) + ", 0)");
}

void SyntheticTrace::addDevice(std::uint16_t id, const std::string& name) {
  exec("INSERT INTO TARGET_INFO_GPU (vmId, id, name, smCount, asyncEngines, computeMajor, "
       "computeMinor) VALUES (0, " + std::to_string(id) + ", '" + name + "', 132, 3, 9, 0)");
}

std::string tempTracePath(const std::string& name) {
  // One folder per test process: ctest runs tests in parallel and names like cli_stderr.txt repeat.
  std::filesystem::path dir = std::filesystem::temp_directory_path() / "cuoverlap-tests" /
                              std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  if (name.empty()) return dir.string();  // the folder itself: it may hold other tests' files
  std::filesystem::path path = dir / name;
  std::filesystem::remove(path);
  return path.string();
}

}  // namespace cuoverlap::testing
