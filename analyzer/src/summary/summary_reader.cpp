// Reading a rank summary: the report and the ranks' headers at once; each rank's collectives
// through a CollectiveReader over the open file (one connection per summary, a 256 KiB page
// cache), a block at a time as the job analysis asks for slices. Every count the writer recorded is checked against the
// rows, so that a truncated file is an error naming it, never a job analysis with ranks missing
// collectives.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <memory>

#include "cuoverlap/error.h"
#include "cuoverlap/summary.h"
#include "collective_block.h"
#include "report_codec.h"
#include "summary_schema.h"
#include "sqlite_db.h"

namespace cuoverlap {
namespace {

using sqlite::Database;
using sqlite::Statement;

// A job keeps every summary open while it streams their collectives: 4,096 connections. Each
// gets no lookaside memory (SQLite's default 120 KiB per connection) and a page cache of 16
// pages: a slice reads one or two pages of a file, in order.
struct SummaryFile {
  explicit SummaryFile(const std::string& path) : db(path) {
    sqlite3_db_config(db.handle(), SQLITE_DBCONFIG_LOOKASIDE, nullptr, 0, 0);
    sqlite3_exec(db.handle(), "PRAGMA cache_size=16", nullptr, nullptr, nullptr);
  }
  Database db;
  std::vector<std::string> types;  // by type_id
};

class SummaryCollectives : public CollectiveReader {
 public:
  SummaryCollectives(std::shared_ptr<SummaryFile> file, std::int64_t rank_row,
                     std::vector<Ns> first_starts)
      : file_(std::move(file)), rank_row_(rank_row), first_starts_(std::move(first_starts)) {}
  ~SummaryCollectives() override { sqlite3_finalize(stmt_); }
  SummaryCollectives(const SummaryCollectives&) = delete;
  SummaryCollectives& operator=(const SummaryCollectives&) = delete;

  // One query per stream, stepped a block at a time as the slices ask for more: the job analysis
  // reads a stream's slices in order, so that each block is read and decoded once. A slice
  // before the last one restarts the stream.
  void read(std::size_t stream, std::uint64_t from, std::uint64_t to,
            std::vector<RankCollective>& out) override {
    out.clear();
    if (stream != stream_ || from < next_) restart(stream);
    while (next_ < to) {
      // A whole block inside the slice (the usual case: slices are whole blocks) goes straight in.
      if (taken_ == pending_.size() && next_ >= from && next_ + summary::kCollectivesPerBlock <= to) {
        nextBlock(to, out);
        continue;
      }
      if (taken_ == pending_.size()) nextBlock(to, pending_);
      if (next_ >= from) out.push_back(std::move(pending_[taken_]));
      ++taken_;
      ++next_;
    }
  }

 private:
  void restart(std::size_t stream) {
    const Database& db = file_->db;
    if (!stmt_ && sqlite3_prepare_v2(db.handle(),
                                     "SELECT first_sequence, count, data FROM summary_collectives "
                                     "WHERE rank_row = ? AND stream = ? ORDER BY first_sequence",
                                     -1, &stmt_, nullptr) != SQLITE_OK) {
      db.fail("reading its collectives");
    }
    sqlite3_reset(stmt_);
    sqlite3_bind_int64(stmt_, 1, rank_row_);
    sqlite3_bind_int64(stmt_, 2, static_cast<std::int64_t>(stream));
    stream_ = stream;
    next_ = 0;
    pending_.clear();
    taken_ = 0;
    previous_start_ = first_starts_.at(stream);
  }

  // Decodes the stream's next block: appended to `out` when it is the caller's slice (next_
  // advances past it), else into pending_ (taken one by one); `to` for the message when there
  // is none.
  void nextBlock(std::uint64_t to, std::vector<RankCollective>& into) {
    const Database& db = file_->db;
    const int rc = sqlite3_step(stmt_);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) db.fail("reading its collectives");
    if (rc == SQLITE_DONE) {
      throw UserError(fmt::format("{}: truncated: {} of the {} collectives expected on stream {}; "
                                  "summarize the trace again",
                                  db.path(), next_, to, stream_ + 1));
    }
    const auto first = static_cast<std::uint64_t>(sqlite3_column_int64(stmt_, 0));
    const std::int64_t count = sqlite3_column_int64(stmt_, 1);
    const auto* data = static_cast<const char*>(sqlite3_column_blob(stmt_, 2));
    const std::string_view bytes(data ? data : "", static_cast<std::size_t>(sqlite3_column_bytes(stmt_, 2)));
    const bool direct = &into != &pending_;
    pending_.clear();
    taken_ = 0;
    if (first != next_ || count <= 0 ||
        static_cast<std::uint64_t>(count) > summary::kCollectivesPerBlock ||
        !summary::decodeBlock(bytes, static_cast<std::uint64_t>(count), previous_start_,
                              file_->types, into)) {
      throw UserError(fmt::format("{}: damaged collectives at {} of stream {}; summarize the "
                                  "trace again",
                                  db.path(), next_, stream_ + 1));
    }
    previous_start_ = into.back().start;
    if (direct) next_ += static_cast<std::uint64_t>(count);
  }

  std::shared_ptr<SummaryFile> file_;
  std::int64_t rank_row_ = 0;
  std::vector<Ns> first_starts_;  // per stream
  sqlite3_stmt* stmt_ = nullptr;
  std::size_t stream_ = static_cast<std::size_t>(-1);
  std::uint64_t next_ = 0;                // the sequence number of pending_[taken_]
  std::vector<RankCollective> pending_;   // the last block decoded
  std::size_t taken_ = 0;
  Ns previous_start_ = 0;                 // the start of the last collective decoded
};

std::string metaValue(const Database& db, const char* key, bool required = true) {
  Statement st(db, fmt::format("SELECT value FROM summary_meta WHERE key = '{}'", key));
  if (st.step()) return std::string(st.text(0));
  if (required) throw UserError(fmt::format("{}: truncated: the summary has no '{}'", db.path(), key));
  return {};
}

std::uint64_t metaCount(const Database& db, const char* key) {
  const std::string text = metaValue(db, key);
  try {
    return std::stoull(text);
  } catch (const std::exception&) {
    throw UserError(fmt::format("{}: '{}' is not a count: {}", db.path(), key, text));
  }
}

void checkFormat(const Database& db) {
  if (!db.hasTable("summary_meta")) {
    throw UserError(fmt::format("{}: not a cuoverlap rank summary (no summary_meta table)", db.path()));
  }
  const std::string format = metaValue(db, "format");
  if (format != kSummaryFormatId) {
    throw UserError(fmt::format("{}: a summary of format '{}'; this cuoverlap reads '{}': summarize "
                                "the trace again with this version",
                                db.path(), format, kSummaryFormatId));
  }
  for (const char* table : {"summary_ranks", "summary_streams", "summary_collective_types",
                            "summary_collectives"}) {
    if (!db.hasTable(table)) throw UserError(fmt::format("{}: truncated: no table {}", db.path(), table));
  }
}

std::optional<std::int32_t> optionalInt(const Statement& st, int column) {
  if (st.isNull(column)) return std::nullopt;
  return static_cast<std::int32_t>(st.int64(column));
}

// The ranks' headers and streams; their collectives stay in the file.
std::vector<RankTimeline> readRanks(const std::shared_ptr<SummaryFile>& file, const std::string& trace,
                                    std::size_t file_index) {
  const Database& db = file->db;
  std::vector<RankTimeline> ranks;
  Statement rows(db, "SELECT pid, launcher_rank, world_size, host, device_id, metrics "
                     "FROM summary_ranks ORDER BY rank_row");
  while (rows.step()) {
    RankTimeline rank;
    rank.path = trace;
    rank.file_index = file_index;
    rank.pid = static_cast<std::uint32_t>(rows.int64(0));
    rank.rank = optionalInt(rows, 1);
    rank.world_size = optionalInt(rows, 2);
    rank.host = std::string(rows.text(3));
    rank.device_id = static_cast<std::uint16_t>(rows.int64(4));
    rank.metrics = summary::decodeMetrics(std::string(rows.text(5)));
    ranks.push_back(std::move(rank));
  }
  std::vector<std::vector<Ns>> first_starts(ranks.size());
  Statement streams(db, "SELECT rank_row, stream, context_id, stream_id, collectives, "
                        "first_type_id, first_start, first_end FROM summary_streams "
                        "ORDER BY rank_row, stream");
  while (streams.step()) {
    const auto row = static_cast<std::size_t>(streams.int64(0));
    const auto type = static_cast<std::size_t>(streams.int64(5));
    if (row >= ranks.size() || type >= file->types.size() || streams.int64(4) <= 0 ||
        static_cast<std::size_t>(streams.int64(1)) != ranks[row].streams.size()) {
      throw UserError(fmt::format("{}: a stream out of order, or of an unknown rank or type: the "
                                  "summary is damaged", db.path()));
    }
    RankStream stream;
    stream.context_id = static_cast<std::uint32_t>(streams.int64(2));
    stream.stream_id = static_cast<std::uint32_t>(streams.int64(3));
    stream.count = static_cast<std::uint64_t>(streams.int64(4));
    stream.first = {streams.int64(6), streams.int64(7), file->types[type], {}, {}};
    ranks[row].streams.push_back(std::move(stream));
    first_starts[row].push_back(streams.int64(6));
  }
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    ranks[r].reader = std::make_shared<SummaryCollectives>(file, static_cast<std::int64_t>(r),
                                                           std::move(first_starts[r]));
  }
  return ranks;
}

void checkCounts(const Database& db, const std::vector<RankTimeline>& ranks) {
  std::uint64_t collectives = 0;
  for (const RankTimeline& rank : ranks) {
    for (const RankStream& stream : rank.streams) collectives += stream.count;
  }
  Statement stored(db, "SELECT coalesce(sum(count), 0) FROM summary_collectives");
  stored.step();
  const auto rows = static_cast<std::uint64_t>(stored.int64(0));
  if (ranks.size() != metaCount(db, "ranks") || collectives != metaCount(db, "collectives") ||
      rows != collectives) {
    throw UserError(fmt::format("{}: truncated: {} ranks and {} collectives where it recorded {} "
                                "and {}; summarize the trace again",
                                db.path(), ranks.size(), rows, metaCount(db, "ranks"),
                                metaCount(db, "collectives")));
  }
}

}  // namespace

RankSummary openSummary(const std::string& path, std::size_t file_index) {
  auto file = std::make_shared<SummaryFile>(path);
  const Database& db = file->db;
  checkFormat(db);
  RankSummary summary;
  try {
    summary.trace_path = metaValue(db, "trace");
    summary.options = metaValue(db, "options");
    summary.report = summary::decodeReport(metaValue(db, "report"));
    Statement types(db, "SELECT type_id, name FROM summary_collective_types ORDER BY type_id");
    while (types.step()) {
      if (types.int64(0) != static_cast<std::int64_t>(file->types.size())) {
        throw UserError(fmt::format("{}: collective types out of order: the summary is damaged", path));
      }
      file->types.emplace_back(types.text(1));
    }
    summary.ranks = readRanks(file, summary.trace_path, file_index);
  } catch (const nlohmann::json::exception& e) {
    throw UserError(fmt::format("{}: a damaged summary (its report does not read back: {})", path, e.what()));
  }
  checkCounts(db, summary.ranks);
  return summary;
}

}  // namespace cuoverlap
