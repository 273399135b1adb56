// Writing a rank summary: the tables of summary_schema.h in an in-memory database, one
// transaction, serialized to the bytes of a SQLite file (written by the caller through its one
// output path). Collectives go in blocks per stream (collective_block.h), keyed by their first
// sequence number, so that the reader takes a slice by one range of keys.
#include <sqlite3.h>

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <memory>

#include "cuoverlap/error.h"
#include "cuoverlap/summary.h"
#include "report_codec.h"
#include "collective_block.h"
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
  Insert& bindBlob(const std::string& value) {
    sqlite3_bind_blob(stmt_, ++column_, value.data(), static_cast<int>(value.size()), SQLITE_TRANSIENT);
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

// Numbers collective types as they first appear.
class TypeTable {
 public:
  explicit TypeTable(MemoryDatabase& db) : insert_(db, "INSERT INTO summary_collective_types VALUES (?, ?)") {}
  std::uint64_t operator()(const std::string& type) {
    auto it = ids_.find(type);
    if (it == ids_.end()) {
      it = ids_.emplace(type, ids_.size()).first;
      insert_.bind(i64(it->second)).bind(type).row();
    }
    return it->second;
  }

 private:
  Insert insert_;
  std::map<std::string, std::uint64_t> ids_;
};

void insertStream(Insert& streams, Insert& blocks, TypeTable& types, std::size_t r, std::size_t s,
                  const RankStream& stream) {
  const std::vector<RankCollective>& all = stream.collectives;
  const RankCollective& first = all.front();
  streams.bind(i64(r)).bind(i64(s)).bind(std::int64_t{stream.context_id})
      .bind(std::int64_t{stream.stream_id}).bind(i64(all.size())).bind(i64(types(first.type)))
      .bind(first.start).bind(first.end).row();
  std::string data;
  for (std::size_t from = 0; from < all.size(); from += summary::kCollectivesPerBlock) {
    const std::size_t to = std::min<std::size_t>(all.size(), from + summary::kCollectivesPerBlock);
    data.clear();
    summary::encodeBlock(all, from, to, from == 0 ? first.start : all[from - 1].start,
                         [&](const std::string& type) { return types(type); }, data);
    blocks.bind(i64(r)).bind(i64(s)).bind(i64(from)).bind(i64(to - from)).bindBlob(data).row();
  }
}

void insertRanks(MemoryDatabase& db, const std::vector<RankTimeline>& ranks) {
  Insert rank_row(db, "INSERT INTO summary_ranks VALUES (?, ?, ?, ?, ?, ?, ?)");
  Insert streams(db, "INSERT INTO summary_streams VALUES (?, ?, ?, ?, ?, ?, ?, ?)");
  Insert blocks(db, "INSERT INTO summary_collectives VALUES (?, ?, ?, ?, ?)");
  TypeTable types(db);
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    const RankTimeline& rank = ranks[r];
    rank_row.bind(i64(r)).bind(std::int64_t{rank.pid}).bind(rank.rank).bind(rank.world_size)
        .bind(rank.host).bind(std::int64_t{rank.device_id}).bind(summary::encodeMetrics(rank.metrics))
        .row();
    for (std::size_t s = 0; s < rank.streams.size(); ++s) {
      if (!rank.streams[s].collectives.empty()) insertStream(streams, blocks, types, r, s, rank.streams[s]);
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
  meta.bind(std::string("collectives_per_block")).bind(std::to_string(summary::kCollectivesPerBlock)).row();
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
                     options.steady_state ? 1 : 0) +
         // Only when given: the summaries made without --iterations keep their key.
         (options.iterations ? ";iterations=" + *options.iterations : std::string());
}

bool isSummaryPath(std::string_view path) {
  return path.size() >= kSummaryExtension.size() &&
         path.substr(path.size() - kSummaryExtension.size()) == kSummaryExtension;
}

}  // namespace cuoverlap
