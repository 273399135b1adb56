// Reading a rank summary: the report and the ranks' headers at once; each rank's collectives
// through a CollectiveReader over the open file (one connection per summary, a 256 KiB page
// cache), a slice of row ids at a time. Every count the writer recorded is checked against the
// rows, so that a truncated file is an error naming it, never a job analysis with ranks missing
// collectives.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <memory>

#include "cuoverlap/error.h"
#include "cuoverlap/summary.h"
#include "report_codec.h"
#include "sqlite_db.h"

namespace cuoverlap {
namespace {

using sqlite::Database;
using sqlite::Statement;

struct SummaryFile {
  explicit SummaryFile(const std::string& path) : db(path) {
    sqlite3_exec(db.handle(), "PRAGMA cache_size=-256", nullptr, nullptr, nullptr);
  }
  Database db;
  std::vector<std::string> types;  // by type_id
};

class SummaryCollectives : public CollectiveReader {
 public:
  SummaryCollectives(std::shared_ptr<SummaryFile> file, std::vector<std::int64_t> first_ids)
      : file_(std::move(file)), first_ids_(std::move(first_ids)) {}
  ~SummaryCollectives() override { sqlite3_finalize(stmt_); }
  SummaryCollectives(const SummaryCollectives&) = delete;
  SummaryCollectives& operator=(const SummaryCollectives&) = delete;

  void read(std::size_t stream, std::uint64_t from, std::uint64_t to,
            std::vector<RankCollective>& out) override {
    const Database& db = file_->db;
    if (!stmt_ && sqlite3_prepare_v2(db.handle(),
                                     "SELECT type_id, start, end, compute_before_ns, idle_before_ns, "
                                     "h2d_before_ns FROM summary_collectives WHERE id >= ? AND id < ?",
                                     -1, &stmt_, nullptr) != SQLITE_OK) {
      db.fail("reading its collectives");
    }
    const std::int64_t first = first_ids_.at(stream);
    sqlite3_bind_int64(stmt_, 1, first + static_cast<std::int64_t>(from));
    sqlite3_bind_int64(stmt_, 2, first + static_cast<std::int64_t>(to));
    out.clear();
    int rc = SQLITE_ROW;
    while ((rc = sqlite3_step(stmt_)) == SQLITE_ROW) {
      const std::int64_t type = sqlite3_column_int64(stmt_, 0);
      if (type < 0 || static_cast<std::size_t>(type) >= file_->types.size()) {
        sqlite3_reset(stmt_);
        throw UserError(fmt::format("{}: a collective of an unknown type ({}): the summary is damaged",
                                    db.path(), type));
      }
      out.push_back({sqlite3_column_int64(stmt_, 1), sqlite3_column_int64(stmt_, 2),
                     file_->types[static_cast<std::size_t>(type)],
                     {sqlite3_column_int64(stmt_, 3), sqlite3_column_int64(stmt_, 4),
                      sqlite3_column_int64(stmt_, 5)}});
    }
    sqlite3_reset(stmt_);
    if (rc != SQLITE_DONE) db.fail("reading its collectives");
    if (out.size() != to - from) {
      throw UserError(fmt::format("{}: truncated: {} of the {} collectives expected at {} of "
                                  "stream {}; summarize the trace again",
                                  db.path(), out.size(), to - from, from, stream + 1));
    }
  }

 private:
  std::shared_ptr<SummaryFile> file_;
  std::vector<std::int64_t> first_ids_;
  sqlite3_stmt* stmt_ = nullptr;
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
  std::vector<std::vector<std::int64_t>> first_ids(ranks.size());
  Statement streams(db, "SELECT s.rank_row, s.context_id, s.stream_id, s.collectives, s.first_id, "
                        "c.type_id, c.start, c.end FROM summary_streams s JOIN summary_collectives "
                        "c ON c.id = s.first_id ORDER BY s.rank_row, s.stream");
  while (streams.step()) {
    const auto row = static_cast<std::size_t>(streams.int64(0));
    const auto type = static_cast<std::size_t>(streams.int64(5));
    if (row >= ranks.size() || type >= file->types.size()) {
      throw UserError(fmt::format("{}: a stream of an unknown rank or type: the summary is damaged",
                                  db.path()));
    }
    RankStream stream;
    stream.context_id = static_cast<std::uint32_t>(streams.int64(1));
    stream.stream_id = static_cast<std::uint32_t>(streams.int64(2));
    stream.count = static_cast<std::uint64_t>(streams.int64(3));
    stream.first = {streams.int64(6), streams.int64(7), file->types[type], {}};
    ranks[row].streams.push_back(std::move(stream));
    first_ids[row].push_back(streams.int64(4));
  }
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    ranks[r].reader = std::make_shared<SummaryCollectives>(file, std::move(first_ids[r]));
  }
  return ranks;
}

void checkCounts(const Database& db, const std::vector<RankTimeline>& ranks) {
  std::uint64_t collectives = 0;
  for (const RankTimeline& rank : ranks) {
    for (const RankStream& stream : rank.streams) collectives += stream.count;
  }
  Statement last(db, "SELECT count(*), coalesce(max(id) + 1, 0) FROM (SELECT id FROM "
                     "summary_collectives ORDER BY id DESC LIMIT 1)");
  last.step();
  const auto rows = static_cast<std::uint64_t>(last.int64(1));
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
