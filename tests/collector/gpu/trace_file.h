// Read-only SQL access to a recorded trace, for the GPU test's exact checks.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <string>

class TraceFile {
 public:
  explicit TraceFile(const std::string& path);
  ~TraceFile();
  bool isOpen() const { return db_ != nullptr; }
  // The first column of the first row as an integer (0 when there is no row).
  std::int64_t integer(const std::string& sql) const;
  // All rows, columns joined by '|', rows by ';'.
  std::string text(const std::string& sql) const;
  std::string session(const std::string& key) const;

 private:
  sqlite3* db_ = nullptr;
};
