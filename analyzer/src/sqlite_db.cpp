#include "sqlite_db.h"

#include <fmt/core.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>

#include "cuoverlap/error.h"

namespace cuoverlap::sqlite {

namespace {

// A file: URI for the path; characters with a meaning in URIs are percent-encoded.
std::string fileUri(const std::string& path) {
  std::string uri = "file:";
  for (unsigned char c : path) {
    if (std::isalnum(c) || std::strchr("/._-~", c) != nullptr) {
      uri += static_cast<char>(c);
    } else {
      uri += fmt::format("%{:02X}", c);
    }
  }
  return uri + "?immutable=1";
}

void checkReadableFile(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    throw UserError(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
  }
  if (!S_ISREG(st.st_mode)) throw UserError(fmt::format("{}: not a regular file", path));
  if (st.st_size == 0) throw UserError(fmt::format("{}: empty file, not a trace", path));
}

std::string upper(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::toupper(c); });
  return s;
}

}  // namespace

Database::Database(const std::string& path) : path_(path) {
  checkReadableFile(path);
  // NOMUTEX: one thread uses the connection, and per-call mutexes cost ~10% of reading time.
  int flags = SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX;
  try {
    if (sqlite3_open_v2(fileUri(path).c_str(), &db_, flags, nullptr) != SQLITE_OK) {
      fail("cannot open as SQLite database");
    }
    // The header is only checked on first access: touch the schema now so that text files and
    // truncated headers fail here with SQLite's own explanation.
    Statement probe(*this, "SELECT count(*) FROM sqlite_master");
    probe.step();
  } catch (...) {
    sqlite3_close(db_);  // the destructor does not run when the constructor throws
    throw;
  }
}

Database::~Database() { sqlite3_close(db_); }

void Database::fail(std::string_view what) const {
  const char* message = db_ != nullptr ? sqlite3_errmsg(db_) : "out of memory";
  throw UserError(fmt::format("{}: {}: {}", path_, what, message));
}

bool Database::hasTable(std::string_view table) const {
  Statement stmt(*this, fmt::format(
      "SELECT 1 FROM sqlite_master WHERE type IN ('table','view') AND name = '{}'", table));
  return stmt.step();
}

TableColumns::TableColumns(const Database& db, std::string_view table) : db_(db), table_(table) {
  Statement stmt(db, fmt::format("SELECT name, type FROM pragma_table_info('{}')", table));
  while (stmt.step()) types_[std::string(stmt.text(0))] = upper(std::string(stmt.text(1)));
}

void TableColumns::requireIntegerType(std::string_view column) const {
  auto it = types_.find(std::string(column));
  if (it == types_.end()) return;
  const std::string& type = it->second;
  // SQLite affinity rules: INT -> integer; CHAR/CLOB/TEXT -> text; BLOB; REAL/FLOA/DOUB -> real.
  bool integer_like = type.empty() || type.find("INT") != std::string::npos || type == "NUMERIC";
  if (!integer_like) {
    throw UserError(fmt::format("{}: column {}.{} has type {}, expected INTEGER", db_.path(),
                                table_, column, type));
  }
}

void TableColumns::requireTextType(std::string_view column) const {
  auto it = types_.find(std::string(column));
  if (it == types_.end()) return;
  const std::string& type = it->second;
  bool text_like = type.empty() || type.find("CHAR") != std::string::npos ||
                   type.find("CLOB") != std::string::npos || type.find("TEXT") != std::string::npos;
  if (!text_like) {
    throw UserError(fmt::format("{}: column {}.{} has type {}, expected TEXT", db_.path(), table_,
                                column, type));
  }
}

Statement::Statement(const Database& db, const std::string& sql) : db_(db) {
  if (sqlite3_prepare_v2(db.handle(), sql.c_str(), -1, &stmt_, nullptr) != SQLITE_OK) {
    db.fail("cannot read trace");
  }
}

Statement::~Statement() { sqlite3_finalize(stmt_); }

bool Statement::step() {
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  db_.fail("cannot read trace");
}

std::string_view Statement::text(int column) const {
  const unsigned char* p = sqlite3_column_text(stmt_, column);
  if (p == nullptr) return {};
  return {reinterpret_cast<const char*>(p),
          static_cast<std::size_t>(sqlite3_column_bytes(stmt_, column))};
}

std::int64_t Statement::checkedInt64(int column, std::string_view table,
                                     std::string_view name) const {
  int type = sqlite3_column_type(stmt_, column);
  if (type != SQLITE_INTEGER && type != SQLITE_NULL) {
    throw UserError(fmt::format("{}: column {}.{} holds a non-integer value", db_.path(), table,
                                name));
  }
  return sqlite3_column_int64(stmt_, column);
}

std::int64_t Statement::checkedInt64Within(int column, std::string_view table,
                                           std::string_view name, std::int64_t limit) const {
  std::int64_t value = checkedInt64(column, table, name);
  if (value <= -limit || value >= limit) {
    throw UserError(fmt::format("{}: column {}.{} holds {}, out of range (|value| < {})",
                                db_.path(), table, name, value, limit));
  }
  return value;
}

std::int64_t countRows(const Database& db, std::string_view table) {
  Statement stmt(db, fmt::format("SELECT count(*) FROM \"{}\"", table));
  return stmt.step() ? stmt.int64(0) : 0;
}

}  // namespace cuoverlap::sqlite
