#include "sqlite_db.h"

#include <fmt/core.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "cuoverlap/error.h"
#include "sqlite_snapshot.h"

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
  // A killed writer may have committed everything to the -wal and nothing to the file yet.
  if (st.st_size == 0 && !PrivateSnapshot::needed(path)) {
    throw UserError(fmt::format("{}: empty file, not a trace", path));
  }
}

int readSeconds() {
  const char* text = std::getenv("CUOVERLAP_READ_TIMEOUT");
  if (text == nullptr || *text == '\0') return kDefaultReadSeconds;
  char* end = nullptr;
  long seconds = std::strtol(text, &end, 10);
  if (*end != '\0' || seconds < 0 || seconds > 86400 * 7) {
    throw UserError(fmt::format("CUOVERLAP_READ_TIMEOUT='{}': expected whole seconds (0 to 604800)",
                                text));
  }
  return static_cast<int>(seconds);
}

// Literal for a name in SQL: quotes doubled, so no name can end the string.
std::string quoted(std::string_view name) {
  std::string out = "'";
  for (char c : name) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

std::string upper(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::toupper(c); });
  return s;
}

}  // namespace

Database::Database(const std::string& path) : path_(path), read_seconds_(readSeconds()) {
  deadline_ = std::chrono::steady_clock::now() + std::chrono::seconds(read_seconds_);
  checkReadableFile(path);
  // NOMUTEX: one thread uses the connection, and per-call mutexes cost ~10% of reading time.
  if (PrivateSnapshot::gzippedSqlite(path)) {
    // SQLite reads plain files only: the inflated copy, ours alone (read-write, so that a
    // database in WAL mode opens without a -shm file).
    snapshot_ = std::make_unique<PrivateSnapshot>(path, deadline_, PrivateSnapshot::Inflate{});
    open(snapshot_->databasePath(), SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX);
  } else if (PrivateSnapshot::needed(path)) {
    snapshot_ = std::make_unique<PrivateSnapshot>(path, deadline_);
    // Read-write on our own copy, so that SQLite can replay the log there.
    open(snapshot_->databasePath(), SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX);
  } else {
    open(fileUri(path), SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX);
  }
}

Database::Database(const Database& main, Sibling)
    : path_(main.path_), deadline_(main.deadline_), read_seconds_(main.read_seconds_) {
  open(main.opened_, main.open_flags_);
  // A sibling scans one table once: a small page cache (SQLite's default is 2 MiB) is enough.
  sqlite3_exec(db_, "PRAGMA cache_size=-256", nullptr, nullptr, nullptr);
}

void Database::open(const std::string& uri_or_path, int flags) {
  opened_ = uri_or_path;
  open_flags_ = flags;
  try {
    if (sqlite3_open_v2(uri_or_path.c_str(), &db_, flags, nullptr) != SQLITE_OK) {
      fail("cannot open as SQLite database");
    }
    applyBounds();
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

void Database::applyBounds() {
  sqlite3_db_config(db_, SQLITE_DBCONFIG_DEFENSIVE, 1, nullptr);
  sqlite3_db_config(db_, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, nullptr);
  sqlite3_db_config(db_, SQLITE_DBCONFIG_ENABLE_TRIGGER, 0, nullptr);
  sqlite3_db_config(db_, SQLITE_DBCONFIG_ENABLE_VIEW, 0, nullptr);
  // The private copy is deleted afterwards: checkpointing it on close would be wasted work.
  sqlite3_db_config(db_, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, nullptr);
  sqlite3_limit(db_, SQLITE_LIMIT_LENGTH, kMaxValueBytes);
  sqlite3_progress_handler(db_, 10000, &Database::onProgress, this);
}

int Database::onProgress(void* self) {
  auto* db = static_cast<Database*>(self);
  if (std::chrono::steady_clock::now() < db->deadline_) return 0;
  db->deadline_hit_ = true;
  return 1;  // interrupts the statement: SQLITE_INTERRUPT
}

void Database::fail(std::string_view what) const {
  if (deadline_hit_) {
    throw UserError(fmt::format(
        "{}: reading took longer than {} s (the limit; CUOVERLAP_READ_TIMEOUT=seconds changes it)",
        path_, read_seconds_));
  }
  const int code = db_ != nullptr ? sqlite3_errcode(db_) : SQLITE_NOMEM;
  if (code == SQLITE_TOOBIG) {
    throw UserError(fmt::format("{}: {}: a string or blob is longer than {} MiB (the limit)",
                                path_, what, kMaxValueBytes >> 20));
  }
  const char* message = db_ != nullptr ? sqlite3_errmsg(db_) : "out of memory";
  throw UserError(fmt::format("{}: {}: {}", path_, what, message));
}

bool Database::hasTable(std::string_view table) const {
  // rootpage > 0: a table with its own b-tree; views and virtual tables have none.
  Statement stmt(*this, "SELECT type = 'table' AND rootpage > 0, type FROM sqlite_master WHERE "
                        "name = " + quoted(table) + " COLLATE NOCASE");
  if (!stmt.step()) return false;
  if (stmt.int64(0) != 0) return true;
  throw UserError(fmt::format("{}: {} is a {}, not a table: only tables are read", path_, table,
                              stmt.text(1) == "table" ? "virtual table" : stmt.text(1)));
}

std::string Database::unfinishedLog() const {
  if (!snapshot_ || snapshot_->inflated()) return "";
  return fmt::format("{}{} ({} bytes) was beside the file: the writer did not close the trace "
                     "(killed, or still writing); read up to its last commit",
                     path_, snapshot_->logSuffix(), snapshot_->logBytes());
}

TableColumns::TableColumns(const Database& db, std::string_view table) : db_(db), table_(table) {
  Statement stmt(db, "SELECT name, type, hidden FROM pragma_table_xinfo(" + quoted(table) + ")");
  constexpr std::int64_t kVirtualGenerated = 2;  // table_xinfo's `hidden`: 1 hidden, 2 virtual, 3 stored
  while (stmt.step()) {
    if (stmt.int64(2) == kVirtualGenerated) {
      throw UserError(fmt::format("{}: column {}.{} is generated on every read (GENERATED ... VIRTUAL), "
                                  "not stored: not a trace", db.path(), table, stmt.text(0)));
    }
    types_[std::string(stmt.text(0))] = upper(std::string(stmt.text(1)));
  }
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
  if (rc == SQLITE_ROW) {
    if (++rows_ > kMaxRowsPerQuery) {
      throw UserError(fmt::format("{}: a table holds more than {} rows (the limit)", db_.path(),
                                  kMaxRowsPerQuery));
    }
    return true;
  }
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
  sqlite3_value* value = sqlite3_column_value(stmt_, column);  // one fetch for type and value
  int type = sqlite3_value_type(value);
  if (type != SQLITE_INTEGER && type != SQLITE_NULL) {
    throw UserError(fmt::format("{}: column {}.{} holds a non-integer value", db_.path(), table,
                                name));
  }
  return sqlite3_value_int64(value);
}

void Statement::failOutOfRange(std::string_view table, std::string_view name, std::int64_t value,
                               std::string_view range) const {
  throw UserError(fmt::format("{}: column {}.{} holds {}, out of range ({})", db_.path(), table,
                              name, value, range));
}

std::int64_t Statement::checkedInt64Within(int column, std::string_view table,
                                           std::string_view name, std::int64_t limit) const {
  std::int64_t value = checkedInt64(column, table, name);
  if (value <= -limit || value >= limit) {
    failOutOfRange(table, name, value, fmt::format("|value| < {}", limit));
  }
  return value;
}

std::int64_t countRows(const Database& db, std::string_view table) {
  Statement stmt(db, fmt::format("SELECT count(*) FROM \"{}\"", table));
  return stmt.step() ? stmt.int64(0) : 0;
}

std::int64_t rowsAtMost(const Database& db, std::string_view table) {
  const std::string sql = fmt::format(
      "SELECT (SELECT max(rowid) FROM \"{0}\") - (SELECT min(rowid) FROM \"{0}\") + 1, "
      "(SELECT page_count FROM pragma_page_count()) * (SELECT page_size FROM pragma_page_size())",
      table);
  sqlite3_stmt* probe = nullptr;
  const bool has_rowid = sqlite3_prepare_v2(db.handle(), sql.c_str(), -1, &probe, nullptr) == SQLITE_OK;
  sqlite3_finalize(probe);
  if (!has_rowid) return countRows(db, table);
  Statement stmt(db, sql);
  if (!stmt.step() || stmt.isNull(0)) return 0;  // no rows
  const std::int64_t range = stmt.int64(0);
  const std::int64_t file_bytes = stmt.int64(1);
  if (range <= 0 || range > file_bytes / 8) return countRows(db, table);
  return range;
}

}  // namespace cuoverlap::sqlite
