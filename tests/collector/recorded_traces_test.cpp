// The traces the collector recorded on a GPU (tests/data/*.sqlite.gz, scripts/record_goldens.sh),
// read back through the analyzer and checked against numbers computed here, independently, with
// SQL over the same file (inflated to a scratch directory: SQLite reads only plain files): op
// counts, span, sum of durations and busy time (union of intervals by a plain loop over the rows).
// Plus schema facts every recorded trace must satisfy. No GPU needed.
#include <sqlite3.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "cuoverlap/analysis.h"
#include "cuoverlap/reader.h"
#include "../scratch_dir.h"
#include "../trace_files.h"

namespace {

namespace fs = std::filesystem;

// Read-only SQL over one trace file.
class Sql {
 public:
  explicit Sql(const std::string& path) {
    if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
      sqlite3_close(db_);
      db_ = nullptr;
    }
  }
  ~Sql() { sqlite3_close(db_); }
  Sql(const Sql&) = delete;
  Sql& operator=(const Sql&) = delete;
  bool isOpen() const { return db_ != nullptr; }

  // Every row's integer columns; an unprepared statement fails the test with its message.
  std::vector<std::vector<std::int64_t>> rows(const std::string& sql) const {
    sqlite3_stmt* stmt = nullptr;
    int rc = sqlite3_prepare_v2(db_, sql.c_str(), -1, &stmt, nullptr);
    INFO(sql << ": " << sqlite3_errmsg(db_));
    REQUIRE(rc == SQLITE_OK);
    std::vector<std::vector<std::int64_t>> result;
    while (sqlite3_step(stmt) == SQLITE_ROW) {
      std::vector<std::int64_t> row;
      for (int c = 0; c < sqlite3_column_count(stmt); ++c) row.push_back(sqlite3_column_int64(stmt, c));
      result.push_back(std::move(row));
    }
    sqlite3_finalize(stmt);
    return result;
  }
  std::int64_t integer(const std::string& sql) const {
    auto all = rows(sql);
    return all.empty() || all[0].empty() ? 0 : all[0][0];
  }
  std::string text(const std::string& sql) const {
    sqlite3_stmt* stmt = nullptr;
    std::string value;
    if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &stmt, nullptr) == SQLITE_OK &&
        sqlite3_step(stmt) == SQLITE_ROW && sqlite3_column_text(stmt, 0) != nullptr) {
      value = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
    }
    sqlite3_finalize(stmt);
    return value;
  }
  std::string session(const std::string& key) const {
    return text("SELECT value FROM CUOVERLAP_SESSION WHERE key = '" + key + "'");
  }

 private:
  sqlite3* db_ = nullptr;
};

// docs/metrics.md: an op counts when start > 0 and end >= start.
std::string validOps(const std::string& table, int device) {
  return "SELECT start, end FROM " + table + " WHERE start > 0 AND end >= start AND deviceId = " +
         std::to_string(device);
}

std::string allValidOps(int device) {
  return validOps("CUPTI_ACTIVITY_KIND_KERNEL", device) + " UNION ALL " +
         validOps("CUPTI_ACTIVITY_KIND_MEMCPY", device) + " UNION ALL " +
         validOps("CUPTI_ACTIVITY_KIND_MEMSET", device);
}

// Length of the union of [start, end) intervals, by sorting and merging.
std::int64_t unionLength(std::vector<std::vector<std::int64_t>> intervals) {
  std::sort(intervals.begin(), intervals.end());
  std::int64_t total = 0, open_start = 0, open_end = 0;
  bool open = false;
  for (const auto& iv : intervals) {
    if (open && iv[0] <= open_end) {
      open_end = std::max(open_end, iv[1]);
      continue;
    }
    if (open) total += open_end - open_start;
    open_start = iv[0];
    open_end = iv[1];
    open = true;
  }
  return open ? total + open_end - open_start : total;
}

std::vector<std::string> recordedTraces() {
  std::vector<std::string> paths;
  for (const auto& entry : fs::directory_iterator(CUOVERLAP_TEST_DATA)) {
    if (entry.is_regular_file() && cuoverlap_test::isTraceFile(entry.path())) paths.push_back(entry.path());
  }
  std::sort(paths.begin(), paths.end());
  return paths;
}

void checkDeviceAgainstSql(const Sql& sql, const cuoverlap::DeviceMetrics& m) {
  int d = m.device_id;
  INFO("device " << d);
  auto count = [&](const std::string& table) {
    return static_cast<std::uint64_t>(sql.integer("SELECT count(*) FROM (" + validOps(table, d) + ")"));
  };
  CHECK(m.kernels == count("CUPTI_ACTIVITY_KIND_KERNEL"));
  CHECK(m.memcpys == count("CUPTI_ACTIVITY_KIND_MEMCPY"));
  CHECK(m.memsets == count("CUPTI_ACTIVITY_KIND_MEMSET"));
  std::string ops = "(" + allValidOps(d) + ")";
  CHECK(m.first_start == sql.integer("SELECT min(start) FROM " + ops));
  CHECK(m.last_end == sql.integer("SELECT max(end) FROM " + ops));
  CHECK(m.span_ns == sql.integer("SELECT max(end) - min(start) FROM " + ops));
  CHECK(m.sum_ns == sql.integer("SELECT sum(end - start) FROM " + ops));
  std::int64_t busy = unionLength(sql.rows("SELECT start, end FROM " + ops));
  CHECK(m.busy_ns == busy);
  CHECK(m.idle_ns == m.span_ns - busy);
  std::int64_t compute = unionLength(sql.rows(validOps("CUPTI_ACTIVITY_KIND_KERNEL", d)));
  REQUIRE(!m.engines.empty());
  CHECK(m.engines[static_cast<std::size_t>(cuoverlap::Engine::kCompute)].busy_ns == compute);
}

void checkSchemaFacts(const Sql& sql) {
  CHECK(sql.session("complete") == "1");
  CHECK(sql.session("dropped_records") == "0");
  CHECK(sql.session("records.incomplete") == "0");
  // Every context names its legacy default stream, and that stream is recorded with flag 3 (null).
  CHECK(sql.integer("SELECT count(*) FROM TARGET_INFO_CUDA_CONTEXT_INFO") > 0);
  CHECK(sql.integer("SELECT count(*) FROM TARGET_INFO_CUDA_CONTEXT_INFO c WHERE NOT EXISTS (SELECT 1 "
                    "FROM TARGET_INFO_CUDA_STREAM s WHERE s.contextId = c.contextId AND "
                    "s.streamId = c.nullStreamId AND s.flag = 3)") == 0);
  for (const char* column : {"demangledName", "shortName", "mangledName"}) {
    INFO(column);
    CHECK(sql.integer(std::string("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k WHERE NOT EXISTS "
                                  "(SELECT 1 FROM StringIds s WHERE s.id = k.") + column + ")") == 0);
  }
  CHECK(sql.integer("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME r WHERE NOT EXISTS "
                    "(SELECT 1 FROM StringIds s WHERE s.id = r.nameId)") == 0);
  // Kernels and copies are what the records.* counters say were written.
  CHECK(sql.integer("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL") == std::stoll(sql.session("records.kernel")));
  CHECK(sql.integer("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY") == std::stoll(sql.session("records.memcpy")));
}

}  // namespace

TEST_CASE("recorded traces: analyzer metrics equal SQL over the same file, schema facts hold") {
  std::vector<std::string> paths = recordedTraces();
  // scripts/record_goldens.sh records 15 streams scenarios and 2 scan runs.
  REQUIRE(paths.size() >= 17);
  for (const std::string& path : paths) {
    INFO(path);
    const std::string plain = cuoverlap_test::scratchDir("cuoverlap_recorded_") + "/" +
                              cuoverlap_test::traceName(path) + cuoverlap_test::kPlainSuffix;
    REQUIRE(cuoverlap_test::inflateTrace(path, plain));
    Sql sql(plain);
    REQUIRE(sql.isOpen());
    checkSchemaFacts(sql);
    cuoverlap::Trace trace = cuoverlap::readTrace(path);
    CHECK(trace.source == cuoverlap::TraceSource::kCuoverlap);
    // Single-process files written before issue 10 still describe their one process.
    REQUIRE(trace.processes.size() == 1);
    CHECK(static_cast<std::int64_t>(trace.processes[0].pid) ==
          sql.rows("SELECT CAST(value AS INTEGER) FROM CUOVERLAP_SESSION WHERE key = 'pid'").at(0).at(0));
    CHECK_FALSE(trace.processes[0].command.empty());
    CHECK_FALSE(trace.processes[0].rank.has_value());
    cuoverlap::TraceReport report = cuoverlap::analyzeTrace(trace, cuoverlap::AnalysisOptions{});
    std::vector<std::int64_t> sql_devices;
    for (const auto& row : sql.rows("SELECT DISTINCT deviceId FROM (SELECT deviceId, start, end FROM "
                                    "CUPTI_ACTIVITY_KIND_KERNEL UNION ALL SELECT deviceId, start, end FROM "
                                    "CUPTI_ACTIVITY_KIND_MEMCPY UNION ALL SELECT deviceId, start, end FROM "
                                    "CUPTI_ACTIVITY_KIND_MEMSET) WHERE start > 0 AND end >= start ORDER BY 1")) {
      sql_devices.push_back(row[0]);
    }
    REQUIRE(report.devices.size() == sql_devices.size());
    REQUIRE(!sql_devices.empty());
    for (std::size_t i = 0; i < sql_devices.size(); ++i) {
      CHECK(report.devices[i].metrics.device_id == sql_devices[i]);
      checkDeviceAgainstSql(sql, report.devices[i].metrics);
    }
  }
}

TEST_CASE("union length helper: overlapping, touching and nested intervals") {
  CHECK(unionLength({}) == 0);
  CHECK(unionLength({{10, 20}, {15, 30}, {40, 50}}) == 30);
  CHECK(unionLength({{10, 20}, {20, 30}}) == 20);
  CHECK(unionLength({{10, 100}, {20, 30}, {90, 95}}) == 90);
}
