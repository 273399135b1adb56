// A thin read-only SQLite layer for the reader: every failure becomes a UserError naming the file,
// so that a truncated, foreign or hostile database yields one clear line instead of a crash or a
// hang.
//
// Bounds on the work a file can cause (a 4 KB file must not hang the tool):
//  - only real tables are read (no views, no virtual tables: a recursive view never ends);
//  - SQLITE_DBCONFIG_DEFENSIVE and trusted_schema=OFF: no schema-supplied functions run;
//  - a deadline over the whole read (kDefaultReadSeconds, CUOVERLAP_READ_TIMEOUT=seconds
//    overrides), enforced by a progress handler;
//  - at most kMaxRowsPerQuery rows per query and kMaxValueBytes per string or blob.
// Hitting a bound is a UserError that names it.
#pragma once

#include <sqlite3.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

namespace cuoverlap::sqlite {

class PrivateSnapshot;

inline constexpr int kDefaultReadSeconds = 600;
inline constexpr std::int64_t kMaxRowsPerQuery = (std::int64_t{1} << 31) - 1;
inline constexpr int kMaxValueBytes = 16 << 20;  // 16 MiB: kernel names run to ~100 KB

class Database {
 public:
  // A file without a -wal/-journal beside it is opened read-only and immutable: SQLite takes no
  // locks and never writes. One with a log (an unfinished trace) is read through a private copy
  // (sqlite_snapshot.h), and so is a gzip-compressed database (inflated there). Either way nothing
  // is written next to `path`.
  explicit Database(const std::string& path);
  // A second connection to what `main` opened (the file, or its private copy), with the same
  // bounds and deadline, for another thread: connections are opened NOMUTEX, one thread each.
  // `main` must outlive it.
  struct Sibling {};
  Database(const Database& main, Sibling);
  ~Database();
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  sqlite3* handle() const { return db_; }
  const std::string& path() const { return path_; }
  // True for a real table of that name. A view or virtual table of a trace table's name is a
  // UserError: those are not data, and reading them can take unbounded time.
  bool hasTable(std::string_view table) const;
  // Non-empty when the file had an uncommitted log: what was found, for the report.
  std::string unfinishedLog() const;
  [[noreturn]] void fail(std::string_view what) const;  // throws UserError with sqlite's message

 private:
  void open(const std::string& uri_or_path, int flags);
  void applyBounds();
  static int onProgress(void* self);

  sqlite3* db_ = nullptr;
  std::string path_;
  std::string opened_;  // the URI or path given to sqlite3_open_v2
  int open_flags_ = 0;
  std::unique_ptr<PrivateSnapshot> snapshot_;
  std::chrono::steady_clock::time_point deadline_;
  int read_seconds_ = kDefaultReadSeconds;
  bool deadline_hit_ = false;
};

// Columns of one table, by name (PRAGMA table_xinfo), with their declared types. A table with a
// VIRTUAL generated column is refused (UserError): such a column is computed on every read (a
// 135 KB file can yield a 1 MB string per row), so what a report holds would no longer be
// proportional to the data stored. STORED generated columns are stored data and are read.
class TableColumns {
 public:
  TableColumns(const Database& db, std::string_view table);
  bool has(std::string_view column) const { return types_.count(std::string(column)) != 0; }
  // Throws UserError when the column exists with a declared type that cannot hold integers.
  void requireIntegerType(std::string_view column) const;
  void requireTextType(std::string_view column) const;

 private:
  const Database& db_;
  std::string table_;
  std::unordered_map<std::string, std::string> types_;  // name -> declared type, upper case
};

class Statement {
 public:
  Statement(const Database& db, const std::string& sql);
  ~Statement();
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  bool step();  // true while a row is available
  bool isNull(int column) const { return sqlite3_column_type(stmt_, column) == SQLITE_NULL; }
  std::int64_t int64(int column) const { return sqlite3_column_int64(stmt_, column); }
  // The column's integer, or `null_value` when it is NULL: one column fetch where isNull() and
  // int64() take two (each sqlite3_column_* call finds the column and leaves the API anew, which
  // is most of the cost of reading an op).
  std::int64_t int64Or(int column, std::int64_t null_value) const {
    sqlite3_value* value = sqlite3_column_value(stmt_, column);
    return sqlite3_value_type(value) == SQLITE_NULL ? null_value : sqlite3_value_int64(value);
  }
  std::string_view text(int column) const;
  // The column as a real (an integer converts; NULL or text reads as 0).
  double real(int column) const { return sqlite3_column_double(stmt_, column); }
  // An integer column that must hold an integer (NULL allowed); anything else throws UserError.
  std::int64_t checkedInt64(int column, std::string_view table, std::string_view name) const;
  [[noreturn]] void failOutOfRange(std::string_view table, std::string_view name,
                                   std::int64_t value, std::string_view range) const;
  // checkedInt64 whose value must also lie strictly between -limit and limit.
  std::int64_t checkedInt64Within(int column, std::string_view table, std::string_view name,
                                  std::int64_t limit) const;

 private:
  const Database& db_;
  sqlite3_stmt* stmt_ = nullptr;
  std::int64_t rows_ = 0;
};

// SELECT COUNT(*) FROM table.
std::int64_t countRows(const Database& db, std::string_view table);
// At least the table's row count, for reserving: its rowid range (two lookups at the ends of the
// rowid tree, where count(*) reads every page of the table: a tenth of reading 10^7 ops). Larger
// than the count where rows were deleted; count(*) where the range is more rows than the file
// could hold (8 bytes a row) or the table has no rowids.
std::int64_t rowsAtMost(const Database& db, std::string_view table);

}  // namespace cuoverlap::sqlite
