#include "trace_file.h"

#include <stdexcept>

TraceFile::TraceFile(const std::string& path) {
  // Read-write so that a killed program's last commits (WAL) are recovered, as any reader would.
  if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE, nullptr) != SQLITE_OK) {
    sqlite3_close(db_);
    db_ = nullptr;
  }
}

TraceFile::~TraceFile() { sqlite3_close(db_); }

std::string TraceFile::text(const std::string& sql) const {
  sqlite3_stmt* stmt = nullptr;
  if (db_ == nullptr || sqlite3_prepare_v2(db_, sql.c_str(), -1, &stmt, nullptr) != SQLITE_OK) {
    throw std::runtime_error("bad query: " + sql + ": " + (db_ ? sqlite3_errmsg(db_) : "no file"));
  }
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

std::int64_t TraceFile::integer(const std::string& sql) const {
  std::string value = text(sql);
  std::size_t end = value.find_first_of("|;");
  return value.empty() ? 0 : std::stoll(value.substr(0, end));
}

std::string TraceFile::session(const std::string& key) const {
  return text("SELECT value FROM CUOVERLAP_SESSION WHERE key = '" + key + "'");
}
