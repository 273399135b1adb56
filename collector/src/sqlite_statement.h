// A prepared SQLite statement bound and stepped in one call. The writer prepares each INSERT once
// and reuses it for every row: the cost per row is binding and one step.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <stdexcept>
#include <string>

namespace cuoverlap::collector {

class WriterError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// One bound value: NULL, an integer, a real or text (copied by SQLite).
struct SqlValue {
  enum class Type { kNull, kInt, kReal, kText } type = Type::kNull;
  std::int64_t integer = 0;
  double real = 0;
  const char* text = nullptr;

  SqlValue() = default;
  SqlValue(std::nullopt_t) {}
  template <typename T, typename = std::enable_if_t<std::is_integral_v<T>>>
  SqlValue(T v) : type(Type::kInt), integer(static_cast<std::int64_t>(v)) {}
  SqlValue(double v) : type(Type::kReal), real(v) {}
  SqlValue(const char* v) : type(v ? Type::kText : Type::kNull), text(v) {}
  SqlValue(const std::string& v) : type(Type::kText), text(v.c_str()) {}
  template <typename T>
  SqlValue(const std::optional<T>& v) : SqlValue(v ? SqlValue(*v) : SqlValue()) {}
};

class Statement {
 public:
  Statement(sqlite3* db, const char* sql);
  ~Statement();
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  // Binds `values` to ?1..?n, steps once and resets. Throws WriterError on failure.
  void run(std::initializer_list<SqlValue> values);

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
};

// Runs SQL text that returns no rows. Throws WriterError on failure.
void execSql(sqlite3* db, const char* sql);

}  // namespace cuoverlap::collector
