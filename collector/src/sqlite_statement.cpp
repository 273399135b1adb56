#include "sqlite_statement.h"

namespace cuoverlap::collector {

Statement::Statement(sqlite3* db, const char* sql) : db_(db) {
  if (sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, &stmt_, nullptr) != SQLITE_OK) {
    throw WriterError(std::string("cannot prepare statement: ") + sqlite3_errmsg(db));
  }
}

Statement::~Statement() { sqlite3_finalize(stmt_); }

void Statement::run(std::initializer_list<SqlValue> values) {
  int index = 1;
  for (const SqlValue& v : values) {
    switch (v.type) {
      case SqlValue::Type::kNull: sqlite3_bind_null(stmt_, index); break;
      case SqlValue::Type::kInt: sqlite3_bind_int64(stmt_, index, v.integer); break;
      case SqlValue::Type::kReal: sqlite3_bind_double(stmt_, index, v.real); break;
      case SqlValue::Type::kText: sqlite3_bind_text(stmt_, index, v.text, -1, SQLITE_TRANSIENT); break;
    }
    ++index;
  }
  int rc = sqlite3_step(stmt_);
  sqlite3_reset(stmt_);
  if (rc != SQLITE_DONE) throw WriterError(std::string("cannot write row: ") + sqlite3_errmsg(db_));
}

void execSql(sqlite3* db, const char* sql) {
  char* message = nullptr;
  if (sqlite3_exec(db, sql, nullptr, nullptr, &message) != SQLITE_OK) {
    std::string text = message != nullptr ? message : sqlite3_errmsg(db);
    sqlite3_free(message);
    throw WriterError("sqlite: " + text);
  }
}

}  // namespace cuoverlap::collector
