// Writing a rank summary: the tables of summary_schema.h in an in-memory database, one
// transaction, serialized to the bytes of a SQLite file (written by the caller through its one
// output path). Collectives are numbered stream by stream, so that a stream's k-th collective is
// row first_id + k and the reader takes a slice by one range of row ids.
#include <sqlite3.h>

#include <fmt/format.h>

#include <map>
#include <memory>

#include "cuoverlap/error.h"
#include "cuoverlap/summary.h"
#include "report_codec.h"
#include "summary_schema.h"

namespace cuoverlap {
namespace {

class MemoryDatabase {
 public:
  MemoryDatabase() {
    if (sqlite3_open(":memory:", &db_) != SQLITE_OK) fail("open");
  }
  ~MemoryDatabase() { sqlite3_close(db_); }
  MemoryDatabase(const MemoryDatabase&) = delete;
  MemoryDatabase& operator=(const MemoryDatabase&) = delete;

  void exec(const char* sql) {
    if (sqlite3_exec(db_, sql, nullptr, nullptr, nullptr) != SQLITE_OK) fail(sql);
  }
  sqlite3* handle() const { return db_; }
  [[noreturn]] void fail(const char* what) const {
    throw UserError(fmt::format("cannot write the summary ({}): {}", what, sqlite3_errmsg(db_)));
  }

 private:
  sqlite3* db_ = nullptr;
};

// One prepared INSERT, bound column by column and stepped per row.
class Insert {
 public:
  Insert(const MemoryDatabase& db, const char* sql) : db_(db) {
    if (sqlite3_prepare_v2(db.handle(), sql, -1, &stmt_, nullptr) != SQLITE_OK) db.fail(sql);
  }
  ~Insert() { sqlite3_finalize(stmt_); }
  Insert(const Insert&) = delete;
  Insert& operator=(const Insert&) = delete;

  Insert& bind(std::int64_t value) { sqlite3_bind_int64(stmt_, ++column_, value); return *this; }
  Insert& bind(const std::string& value) {
    sqlite3_bind_text(stmt_, ++column_, value.data(), static_cast<int>(value.size()), SQLITE_TRANSIENT);
    return *this;
  }
  Insert& bind(const std::optional<std::int32_t>& value) {
    if (value) return bind(std::int64_t{*value});
    sqlite3_bind_null(stmt_, ++column_);
    return *this;
  }
  void row() {
    if (sqlite3_step(stmt_) != SQLITE_DONE) db_.fail("insert");
    sqlite3_reset(stmt_);
    column_ = 0;
  }

 private:
  const MemoryDatabase& db_;
  sqlite3_stmt* stmt_ = nullptr;
  int column_ = 0;
};

std::int64_t i64(std::uint64_t value) { return static_cast<std::int64_t>(value); }

void insertRanks(MemoryDatabase& db, const std::vector<RankTimeline>& ranks) {
  Insert rank_row(db, "INSERT INTO summary_ranks VALUES (?, ?, ?, ?, ?, ?, ?)");
  Insert stream_row(db, "INSERT INTO summary_streams VALUES (?, ?, ?, ?, ?, ?)");
  Insert collective(db, "INSERT INTO summary_collectives VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  Insert type_row(db, "INSERT INTO summary_collective_types VALUES (?, ?)");
  std::map<std::string, std::int64_t> types;
  std::int64_t id = 0;
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    const RankTimeline& rank = ranks[r];
    rank_row.bind(i64(r)).bind(std::int64_t{rank.pid}).bind(rank.rank).bind(rank.world_size)
        .bind(rank.host).bind(std::int64_t{rank.device_id}).bind(summary::encodeMetrics(rank.metrics))
        .row();
    for (std::size_t s = 0; s < rank.streams.size(); ++s) {
      const RankStream& stream = rank.streams[s];
      stream_row.bind(i64(r)).bind(i64(s)).bind(std::int64_t{stream.context_id})
          .bind(std::int64_t{stream.stream_id}).bind(i64(stream.collectives.size())).bind(id).row();
      for (std::size_t k = 0; k < stream.collectives.size(); ++k) {
        const RankCollective& c = stream.collectives[k];
        auto type = types.find(c.type);
        if (type == types.end()) {
          type = types.emplace(c.type, static_cast<std::int64_t>(types.size())).first;
          type_row.bind(type->second).bind(c.type).row();
        }
        collective.bind(id++).bind(i64(r)).bind(i64(s)).bind(i64(k)).bind(type->second)
            .bind(c.start).bind(c.end).bind(c.before.compute_ns).bind(c.before.idle_ns)
            .bind(c.before.h2d_ns).row();
      }
    }
  }
}

}  // namespace

std::string serializeSummary(const TraceReport& report, const std::vector<RankTimeline>& ranks,
                             const AnalysisOptions& options) {
  MemoryDatabase db;
  db.exec("BEGIN");
  db.exec(summary::kCreateTables);
  std::uint64_t collectives = 0;
  for (const RankTimeline& rank : ranks) {
    for (const RankStream& stream : rank.streams) collectives += stream.collectives.size();
  }
  TraceReport stored = report;
  stored.trace = nullptr;
  Insert meta(db, "INSERT INTO summary_meta VALUES (?, ?)");
  meta.bind(std::string("format")).bind(std::string(kSummaryFormatId)).row();
  meta.bind(std::string("trace")).bind(report.path).row();
  meta.bind(std::string("options")).bind(analysisOptionsKey(options)).row();
  meta.bind(std::string("report")).bind(summary::encodeReport(stored)).row();
  meta.bind(std::string("ranks")).bind(std::to_string(ranks.size())).row();
  meta.bind(std::string("collectives")).bind(std::to_string(collectives)).row();
  insertRanks(db, ranks);
  db.exec("COMMIT");
  sqlite3_int64 size = 0;
  const std::unique_ptr<unsigned char, decltype(&sqlite3_free)> bytes(
      sqlite3_serialize(db.handle(), "main", &size, 0), &sqlite3_free);
  if (!bytes) db.fail("serialize");
  return std::string(reinterpret_cast<const char*>(bytes.get()), static_cast<std::size_t>(size));
}

std::string analysisOptionsKey(const AnalysisOptions& options) {
  const Scope& s = options.scope;
  return fmt::format("device={};pid={};range={};window={};window_ns={}:{};gap_threshold_ns={};"
                     "range_detail={};steady_state={}",
                     s.device ? std::to_string(*s.device) : "", s.pid ? std::to_string(*s.pid) : "",
                     s.range.value_or(""), options.window, s.window_start, s.window_end,
                     options.gap_threshold_ns,
                     // Only --range reads range_detail: the same report whatever it is otherwise.
                     s.range ? std::to_string(options.range_detail) : "",
                     options.steady_state ? 1 : 0);
}

bool isSummaryPath(std::string_view path) {
  return path.size() >= kSummaryExtension.size() &&
         path.substr(path.size() - kSummaryExtension.size()) == kSummaryExtension;
}

}  // namespace cuoverlap
