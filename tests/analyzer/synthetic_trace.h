// Writes small traces in our schema (schema::kCreateTables) with known answers, for tests.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <string>

#include "cuoverlap/model.h"

namespace cuoverlap::testing {

struct SyntheticOp {
  OpKind kind = OpKind::kKernel;
  Ns start = 0;
  Ns end = 0;
  CopyKind copy_kind = CopyKind::kHtoD;
  std::uint32_t stream = 13;
  std::uint16_t device = 0;
  std::uint32_t pid = 4242;
  std::uint32_t correlation = 0;
  int async = -1;                   // memcpy/memset `async` column: -1 NULL, 0, 1
  std::string name = "scale_kernel";  // kernels
};

// A trace file being written; the destructor closes it. Every test gets its own path.
class SyntheticTrace {
 public:
  explicit SyntheticTrace(const std::string& path);
  ~SyntheticTrace();
  SyntheticTrace(const SyntheticTrace&) = delete;
  SyntheticTrace& operator=(const SyntheticTrace&) = delete;

  void addOp(const SyntheticOp& op);
  void addRuntimeCall(Ns start, Ns end, std::uint32_t correlation, const std::string& name,
                      std::uint32_t pid = 4242, std::uint32_t tid = 7);
  void addDevice(std::uint16_t id, const std::string& name);
  void exec(const std::string& sql);
  void close();

 private:
  std::int64_t stringId(const std::string& value);
  sqlite3* db_ = nullptr;
  std::int64_t next_string_ = 1;
};

// A fresh path in this test process's own temporary folder (any old file there is removed).
std::string tempTracePath(const std::string& name);

}  // namespace cuoverlap::testing
