// A thin read-only SQLite layer for the reader: every failure becomes a UserError naming the file,
// so that a truncated or foreign database yields one clear line instead of a crash.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>

namespace cuoverlap::sqlite {

class Database {
 public:
  // Opens read-only and immutable: SQLite takes no locks and never writes a journal or the file.
  explicit Database(const std::string& path);
  ~Database();
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  sqlite3* handle() const { return db_; }
  const std::string& path() const { return path_; }
  bool hasTable(std::string_view table) const;
  [[noreturn]] void fail(std::string_view what) const;  // throws UserError with sqlite's message

 private:
  sqlite3* db_ = nullptr;
  std::string path_;
};

// Columns of one table, by name (PRAGMA table_info), with their declared types.
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
  std::string_view text(int column) const;
  // An integer column that must hold an integer (NULL allowed); anything else throws UserError.
  std::int64_t checkedInt64(int column, std::string_view table, std::string_view name) const;
  // checkedInt64 whose value must also lie strictly between -limit and limit.
  std::int64_t checkedInt64Within(int column, std::string_view table, std::string_view name,
                                  std::int64_t limit) const;

 private:
  const Database& db_;
  sqlite3_stmt* stmt_ = nullptr;
};

// SELECT COUNT(*) FROM table.
std::int64_t countRows(const Database& db, std::string_view table);

}  // namespace cuoverlap::sqlite
