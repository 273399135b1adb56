#include "trace_merge.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <set>
#include <stdexcept>
#include <unordered_map>

#include "trace_schema.h"

namespace cuoverlap::schema {
namespace {

using Session = std::map<std::string, std::string>;

class Database {
 public:
  explicit Database(const std::string& path) {
    if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOFOLLOW, nullptr) !=
        SQLITE_OK) {
      std::string why = db_ != nullptr ? sqlite3_errmsg(db_) : "out of memory";
      sqlite3_close(db_);
      throw std::runtime_error("cannot open " + path + ": " + why);
    }
  }
  ~Database() { sqlite3_close(db_); }
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  void exec(const std::string& sql) {
    char* error = nullptr;
    if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &error) != SQLITE_OK) {
      std::string why = error != nullptr ? error : "unknown error";
      sqlite3_free(error);
      throw std::runtime_error("merging traces: " + why);
    }
  }
  // Runs `sql` with text parameters; calls `row` for each result row (columns as text).
  template <typename Row>
  void query(const std::string& sql, const std::vector<std::string>& params, Row row) {
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &stmt, nullptr) != SQLITE_OK) {
      throw std::runtime_error("merging traces: " + std::string(sqlite3_errmsg(db_)));
    }
    for (std::size_t i = 0; i < params.size(); ++i) {
      sqlite3_bind_text(stmt, static_cast<int>(i + 1), params[i].c_str(), -1, SQLITE_TRANSIENT);
    }
    int rc;
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
      std::vector<std::string> values;
      for (int c = 0; c < sqlite3_column_count(stmt); ++c) {
        const unsigned char* text = sqlite3_column_text(stmt, c);
        values.emplace_back(text != nullptr ? reinterpret_cast<const char*>(text) : "");
      }
      row(values);
    }
    std::string why = sqlite3_errmsg(db_);
    sqlite3_finalize(stmt);
    if (rc != SQLITE_DONE) throw std::runtime_error("merging traces: " + why);
  }
  void run(const std::string& sql, const std::vector<std::string>& params) {
    query(sql, params, [](const std::vector<std::string>&) {});
  }
  std::int64_t integer(const std::string& sql) {
    std::int64_t value = 0;
    query(sql, {}, [&](const std::vector<std::string>& row) {
      if (!row.empty() && !row[0].empty()) value = std::stoll(row[0]);
    });
    return value;
  }
  std::vector<std::string> columns(const std::string& schema, const std::string& table) {
    std::vector<std::string> names;
    query("SELECT name FROM " + schema + ".pragma_table_info(?1)", {table},
          [&](const std::vector<std::string>& row) { names.push_back(row[0]); });
    return names;
  }
  sqlite3* handle() { return db_; }

 private:
  sqlite3* db_ = nullptr;
};

bool isStringColumn(const std::string& table, const std::string& column) {
  if (table == kKernelTable) return column == "demangledName" || column == "shortName" || column == "mangledName";
  if (table == kRuntimeTable || table == kProfilerOverheadTable) return column == "nameId";
  if (table == kNvtxTable) return column == "textId" || column == "jsonTextId";
  if (table == kUmCpuFaultTable) return column == "CpuInstruction" || column == "module";
  return false;
}

struct Offsets {
  std::uint64_t correlation = 0, domain = 0;
};

std::string columnExpression(const std::string& table, const std::string& column, const Offsets& offsets) {
  std::string c = "\"" + column + "\"";
  if (isStringColumn(table, column)) return "(SELECT new_id FROM temp.idmap WHERE old_id = " + c + ")";
  if (column == "correlationId" && offsets.correlation > 0) {
    return "CASE WHEN " + c + " IS NULL OR " + c + " = 0 THEN " + c + " ELSE " + c + " + " +
           std::to_string(offsets.correlation) + " END";
  }
  if (table == kNvtxTable && column == "domainId" && offsets.domain > 0) {
    return "CASE WHEN " + c + " IS NULL OR " + c + " = 0 THEN " + c + " ELSE " + c + " + " +
           std::to_string(offsets.domain) + " END";
  }
  return c;
}

class Merger {
 public:
  explicit Merger(Database& out) : out_(out) {
    out_.query("SELECT name FROM main.sqlite_master WHERE type = 'table'", {},
               [&](const std::vector<std::string>& row) {
                 const std::string& name = row[0];
                 if (name == kStringIds || name == kSessionTable || name == kProcessSessionTable ||
                     name.rfind("ENUM_", 0) == 0) {
                   return;
                 }
                 tables_.push_back(name);
               });
    out_.exec("CREATE TEMP TABLE idmap (old_id INTEGER PRIMARY KEY, new_id INTEGER NOT NULL)");
  }

  void addPart(const std::string& path) {
    out_.run("ATTACH ?1 AS part", {path});
    try {
      out_.exec("BEGIN");
      Session session = readSession(path);
      mapStrings();
      for (const std::string& table : tables_) copyTable(table);
      for (const auto& [key, value] : session) {
        out_.run("INSERT OR REPLACE INTO main.CUOVERLAP_PROCESS_SESSION VALUES (?1, ?2, ?3)",
                 {session.at(std::string(session_key::kPid)), key, value});
      }
      advanceOffsets();
      out_.exec("DELETE FROM temp.idmap");
      out_.exec("COMMIT");
      sessions_.push_back(std::move(session));
    } catch (...) {
      sqlite3_exec(out_.handle(), "ROLLBACK", nullptr, nullptr, nullptr);
      sqlite3_exec(out_.handle(), "DETACH part", nullptr, nullptr, nullptr);
      throw;
    }
    out_.exec("DETACH part");
  }

  const std::vector<Session>& sessions() const { return sessions_; }

 private:
  bool partHas(const std::string& table) {
    return out_.integer("SELECT count(*) FROM part.sqlite_master WHERE type = 'table' AND name = '" +
                        table + "'") > 0;
  }

  Session readSession(const std::string& path) {
    Session session;
    if (partHas(std::string(kSessionTable))) {
      out_.query("SELECT key, value FROM part.CUOVERLAP_SESSION", {},
                 [&](const std::vector<std::string>& row) { session[row[0]] = row[1]; });
    }
    if (session.count(std::string(session_key::kPid)) == 0) {
      throw std::runtime_error(path + " is not a cuoverlap trace (no pid in its session table)");
    }
    return session;
  }

  void mapStrings() {
    if (!partHas(std::string(kStringIds))) return;
    std::vector<std::pair<std::string, std::string>> rows;
    out_.query("SELECT id, value FROM part.StringIds", {},
               [&](const std::vector<std::string>& row) { rows.emplace_back(row[0], row[1]); });
    for (const auto& [old_id, value] : rows) {
      auto [it, inserted] = strings_.emplace(value, static_cast<std::int64_t>(strings_.size()) + 1);
      if (inserted) out_.run("INSERT INTO main.StringIds VALUES (?1, ?2)", {std::to_string(it->second), value});
      out_.run("INSERT INTO temp.idmap VALUES (?1, ?2)", {old_id, std::to_string(it->second)});
    }
  }

  void copyTable(const std::string& table) {
    if (!partHas(table)) return;
    std::vector<std::string> part_columns = out_.columns("part", table);
    std::set<std::string> available(part_columns.begin(), part_columns.end());
    std::string names, expressions;
    for (const std::string& column : out_.columns("main", table)) {
      if (available.count(column) == 0) continue;
      names += (names.empty() ? "\"" : ", \"") + column + "\"";
      expressions += (expressions.empty() ? "" : ", ") + columnExpression(table, column, offsets_);
    }
    if (names.empty()) return;
    std::string sql = "INSERT INTO main.\"" + table + "\" (" + names + ") SELECT " + expressions +
                      " FROM part.\"" + table + "\"";
    if (table == kGpuTable) sql += " WHERE id NOT IN (SELECT id FROM main.TARGET_INFO_GPU)";
    out_.exec(sql);
  }

  void advanceOffsets() {
    std::uint64_t largest = 0;
    for (const std::string& table : tables_) {
      if (!partHas(table)) continue;
      std::vector<std::string> columns = out_.columns("part", table);
      if (std::find(columns.begin(), columns.end(), "correlationId") == columns.end()) continue;
      auto value = out_.integer("SELECT max(correlationId) FROM part.\"" + table + "\"");
      largest = std::max(largest, static_cast<std::uint64_t>(std::max<std::int64_t>(value, 0)));
    }
    offsets_.correlation += largest;
    if (offsets_.correlation > 0xFFFFFFFFull) {
      throw std::runtime_error("merging traces: correlation ids of all processes exceed 32 bits");
    }
    if (partHas(std::string(kNvtxTable))) {
      offsets_.domain += static_cast<std::uint64_t>(
          std::max<std::int64_t>(out_.integer("SELECT max(domainId) FROM part.NVTX_EVENTS"), 0));
    }
  }

  Database& out_;
  std::vector<std::string> tables_;
  std::unordered_map<std::string, std::int64_t> strings_;
  Offsets offsets_;
  std::vector<Session> sessions_;
};

bool isSummedKey(const std::string& key) {
  namespace k = session_key;
  return key.rfind(std::string(k::kRecordsPrefix), 0) == 0 || key == k::kDroppedRecords ||
         key == k::kFlushes || key == k::kOverheadNs || key == k::kCuptiOverheadNs ||
         key == k::kWriterBusyNs || key == k::kCaptureWindows || key == k::kGpuMetricsSamples ||
         key == k::kGpuMetricsLost;
}

// The job's GPU metrics (CUOVERLAP_GPU_METRICS): the interval (the first process's),
// the GPUs any process sampled, every process's distinct reasons a GPU was not sampled.
void mergeGpuMetrics(const std::vector<Session>& parts, Session& job) {
  namespace k = session_key;
  std::set<std::string> devices, errors;
  bool any = false;
  for (const Session& part : parts) {
    auto interval = part.find(std::string(k::kGpuMetricsIntervalNs));
    if (interval == part.end()) continue;
    any = true;
    job.emplace(interval->first, interval->second);
    auto list = part.find(std::string(k::kGpuMetricsDevices));
    for (std::size_t from = 0; list != part.end() && from < list->second.size();) {
      const std::size_t comma = std::min(list->second.find(',', from), list->second.size());
      if (comma > from) devices.insert(list->second.substr(from, comma - from));
      from = comma + 1;
    }
    auto error = part.find(std::string(k::kGpuMetricsError));
    if (error != part.end() && !error->second.empty()) errors.insert(error->second);
  }
  if (!any) return;
  std::string joined;
  for (const std::string& d : devices) joined += (joined.empty() ? "" : ",") + d;
  job[std::string(k::kGpuMetricsDevices)] = joined;
  joined.clear();
  for (const std::string& e : errors) joined += (joined.empty() ? "" : "; ") + e;
  job[std::string(k::kGpuMetricsError)] = joined;
}

// The job's capture window: the spec (the same in every process), opened if any process's did,
// from the earliest opening to the latest closing; instances: the most any process ran.
void mergeCapture(const std::vector<Session>& parts, Session& job) {
  namespace k = session_key;
  std::uint64_t open = UINT64_MAX, close = 0, instances = 0;
  bool any = false, opened = false, counted = false;
  for (const Session& part : parts) {
    auto spec = part.find(std::string(k::kCapture));
    if (spec == part.end()) continue;
    if (!any) job[spec->first] = spec->second;
    any = true;
    auto number = [&part](std::string_view key, std::uint64_t fallback) -> std::uint64_t {
      auto it = part.find(std::string(key));
      return it == part.end() ? fallback : static_cast<std::uint64_t>(std::strtoull(it->second.c_str(), nullptr, 10));
    };
    if (number(k::kCaptureOpened, 0) == 1) {
      opened = true;
      open = std::min(open, number(k::kCaptureOpenNs, UINT64_MAX));
      close = std::max(close, number(k::kCaptureCloseNs, 0));
    }
    if (part.count(std::string(k::kCaptureInstances)) != 0) {
      counted = true;
      instances = std::max(instances, number(k::kCaptureInstances, 0));
    }
  }
  if (!any) return;
  job[std::string(k::kCaptureOpened)] = opened ? "1" : "0";
  if (opened && open != UINT64_MAX) job[std::string(k::kCaptureOpenNs)] = std::to_string(open);
  if (opened && close > 0) job[std::string(k::kCaptureCloseNs)] = std::to_string(close);
  if (counted) job[std::string(k::kCaptureInstances)] = std::to_string(instances);
}

// The job's session: totals, earliest start, latest end, complete only if every process is.
Session jobSession(const std::vector<Session>& parts, const MergeOptions& options) {
  namespace k = session_key;
  Session job;
  const Session& first = parts.front();
  for (std::string_view key : {k::kSchema, k::kHost, k::kCollectorVersion, k::kCuptiVersion,
                               k::kDriverVersion, k::kApiTracing}) {
    auto it = first.find(std::string(key));
    if (it != first.end()) job[it->first] = it->second;
  }
  job[std::string(k::kCommand)] = options.command;
  job[std::string(k::kPid)] = std::to_string(options.root_pid);
  job[std::string(k::kProcesses)] = std::to_string(parts.size());
  bool complete = true;
  std::map<std::string, std::uint64_t> sums;
  std::uint64_t start = UINT64_MAX, end = 0;
  for (const Session& part : parts) {
    complete = complete && part.count(std::string(k::kComplete)) != 0 && part.at(std::string(k::kComplete)) == "1";
    for (const auto& [key, value] : part) {
      std::uint64_t number = std::strtoull(value.c_str(), nullptr, 10);
      if (isSummedKey(key)) sums[key] += number;
      if (key == k::kStartNs && number > 0) start = std::min(start, number);
      if (key == k::kEndNs) end = std::max(end, number);
    }
  }
  for (const auto& [key, value] : sums) job[key] = std::to_string(value);
  if (start != UINT64_MAX) job[std::string(k::kStartNs)] = std::to_string(start);
  if (end > 0) job[std::string(k::kEndNs)] = std::to_string(end);
  if (complete) job[std::string(k::kComplete)] = "1";
  mergeCapture(parts, job);
  mergeGpuMetrics(parts, job);
  return job;
}

std::string createTemporary(const std::string& output) {
  std::string path = output + ".merging-" + std::to_string(getpid());
  for (const char* suffix : {"", "-journal", "-wal", "-shm"}) ::unlink((path + suffix).c_str());
  int fd = ::open(path.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) throw std::runtime_error("cannot create " + path + ": " + std::strerror(errno));
  ::close(fd);
  return path;
}

void writeMerged(const std::string& path, const std::vector<std::string>& parts,
                 const MergeOptions& options) {
  Database out(path);
  out.exec("PRAGMA journal_mode=MEMORY; PRAGMA synchronous=OFF;");
  out.exec(std::string("BEGIN;") + kCreateTables + kCreateCollectorTables + kCreateGpuMetricTables +
           kCreateProcessSessionTable + "COMMIT;");
  Merger merger(out);
  for (const std::string& part : parts) merger.addPart(part);
  // GPU metrics' tables exist only where some process sampled them, as in a process's own file.
  if (out.integer("SELECT count(*) FROM (SELECT 1 FROM main.TARGET_INFO_GPU_METRICS LIMIT 1)") == 0) {
    out.exec("DROP TABLE main.GPU_METRICS; DROP TABLE main.TARGET_INFO_GPU_METRICS;");
  }
  for (const auto& [key, value] : jobSession(merger.sessions(), options)) {
    out.run("INSERT OR REPLACE INTO main.CUOVERLAP_SESSION VALUES (?1, ?2)", {key, value});
  }
  out.exec("PRAGMA journal_mode=DELETE");
}

// One process: its file becomes the output (no copy), with the same tables a merge writes.
void adoptSinglePart(const std::string& path, const MergeOptions& options) {
  Database db(path);
  db.exec("BEGIN");
  db.exec(kCreateProcessSessionTable);
  Session session;
  db.query("SELECT key, value FROM CUOVERLAP_SESSION", {},
           [&](const std::vector<std::string>& row) { session[row[0]] = row[1]; });
  auto pid = session.find(std::string(session_key::kPid));
  if (pid == session.end()) {
    throw std::runtime_error(path + " is not a cuoverlap trace (no pid in its session table)");
  }
  for (const auto& [key, value] : session) {
    db.run("INSERT INTO CUOVERLAP_PROCESS_SESSION VALUES (?1, ?2, ?3)", {pid->second, key, value});
  }
  db.exec("DELETE FROM CUOVERLAP_SESSION");
  for (const auto& [key, value] : jobSession({session}, options)) {
    db.run("INSERT INTO CUOVERLAP_SESSION VALUES (?1, ?2)", {key, value});
  }
  db.exec("COMMIT");
  db.exec("PRAGMA journal_mode=DELETE");
}

void moveIntoPlace(const std::string& from, const std::string& output, bool replace) {
  // Side files of an older database of the same name would be replayed into ours.
  for (const char* suffix : {"-journal", "-wal", "-shm"}) ::unlink((output + suffix).c_str());
  if (replace) {
    if (::rename(from.c_str(), output.c_str()) != 0) {
      throw std::runtime_error("cannot write " + output + ": " + std::strerror(errno));
    }
    return;
  }
  if (::link(from.c_str(), output.c_str()) != 0) {
    throw std::runtime_error(errno == EEXIST ? "'" + output + "' appeared during the run (not overwritten)"
                                             : "cannot write " + output + ": " + std::strerror(errno));
  }
  ::unlink(from.c_str());
}

}  // namespace

void adoptTraceFile(const std::string& part, const std::string& output, const MergeOptions& options) {
  adoptSinglePart(part, options);
  moveIntoPlace(part, output, options.replace);
}

void mergeTraceFiles(const std::vector<std::string>& parts, const std::string& output,
                     const MergeOptions& options) {
  if (parts.empty()) throw std::runtime_error("no trace to merge");
  std::string temporary = createTemporary(output);
  try {
    writeMerged(temporary, parts, options);
    moveIntoPlace(temporary, output, options.replace);
  } catch (...) {
    for (const char* suffix : {"", "-journal"}) ::unlink((temporary + suffix).c_str());
    throw;
  }
}

}  // namespace cuoverlap::schema
