// `cuoverlap record` on process trees, without a GPU: fake_traced_app plays the traced processes
// with the collector's own output code (registration, naming, TraceWriter). Checks the merged
// file (one trace, every process, ids consistent), per-process files (%r, %p), waiting for a
// descendant that outlives the program, and that record trusts only what this run wrote (stale
// files, symlinks, a session naming another pid, a killed process).
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "collector_env.h"
#include "cuoverlap/reader.h"
#include "trace_merge.h"
#include "../scratch_dir.h"

namespace {

const std::string& scratchDir() { return cuoverlap_test::scratchDir("cuoverlap_job_test_"); }

std::string readAll(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

struct Run {
  int exit_code = -1;
  std::string err;
};

Run record(const std::string& args, const std::string& app_args) {
  std::string err = scratchDir() + "/stderr.txt";
  std::string command = std::string("CUOVERLAP_COLLECTOR=") + CUOVERLAP_COLLECTOR_LIB + " " + CUOVERLAP_CLI +
                        " record " + args + " -- " + CUOVERLAP_FAKE_APP + " " + app_args + " 2> " + err;
  int status = std::system(command.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, readAll(err)};
}

bool exists(const std::string& path) {
  struct stat info {};
  return ::lstat(path.c_str(), &info) == 0;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

std::size_t countOf(const std::string& text, const std::string& part) {
  std::size_t n = 0;
  for (std::size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

std::int64_t sqlInt(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  std::int64_t value = -1;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr) == SQLITE_OK && sqlite3_step(stmt) == SQLITE_ROW) {
      value = sqlite3_column_int64(stmt, 0);
    }
    sqlite3_finalize(stmt);
  }
  sqlite3_close(db);
  return value;
}

// Files left in the scratch directory whose name starts with `prefix` (parts, temporaries).
std::size_t leftovers(const std::string& prefix) {
  std::string listing = scratchDir() + "/ls.txt";
  std::string command = "ls -a " + scratchDir() + " > " + listing;
  REQUIRE(std::system(command.c_str()) == 0);
  std::istringstream lines(readAll(listing));
  std::size_t n = 0;
  for (std::string line; std::getline(lines, line);) n += line.rfind(prefix, 0) == 0;
  return n;
}

const char* kJoinedKernels =
    "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN CUPTI_ACTIVITY_KIND_RUNTIME r "
    "ON r.correlationId = k.correlationId AND (r.globalTid >> 24) = (k.globalPid >> 24)";

}  // namespace

TEST_CASE("merged: one file holds every traced process of the tree, ids consistent") {
  std::string out = scratchDir() + "/tree.sqlite";
  Run run = record("-o " + out, "tree");
  INFO(run.err);
  CHECK(run.exit_code == 0);
  REQUIRE(exists(out));
  CHECK(leftovers("tree.sqlite.") == 0);  // no parts directory, no temporary
  CHECK(sqlInt(out, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL") == 2 + 3 + 4);
  CHECK(sqlInt(out, "SELECT count(DISTINCT globalPid) FROM CUPTI_ACTIVITY_KIND_KERNEL") == 3);
  CHECK(sqlInt(out, "SELECT count(DISTINCT pid) FROM CUOVERLAP_PROCESS_SESSION") == 3);
  // Every kernel joins its own launch, by correlation id alone as well as with the pid.
  CHECK(sqlInt(out, kJoinedKernels) == 9);
  CHECK(sqlInt(out, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN CUPTI_ACTIVITY_KIND_RUNTIME r "
                    "ON r.correlationId = k.correlationId") == 9);
  CHECK(sqlInt(out, "SELECT count(DISTINCT correlationId) FROM CUPTI_ACTIVITY_KIND_KERNEL") == 9);
  // StringIds: one row per distinct string, every id a kernel or call uses resolves.
  CHECK(sqlInt(out, "SELECT count(*) - count(DISTINCT value) FROM StringIds") == 0);
  CHECK(sqlInt(out, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.shortName "
                    "WHERE s.value = 'child'") == 1 + 2);
  CHECK(sqlInt(out, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id = r.nameId "
                    "WHERE s.value = 'cudaLaunchKernel_v7000'") == 9);
  CHECK(sqlInt(out, "SELECT count(*) FROM TARGET_INFO_GPU") == 1);
  CHECK(sqlInt(out, "SELECT count(*) FROM TARGET_INFO_CUDA_STREAM") == 6);
  CHECK(sqlInt(out, "SELECT value FROM CUOVERLAP_SESSION WHERE key = 'processes'") == 3);
  CHECK(sqlInt(out, "SELECT value FROM CUOVERLAP_SESSION WHERE key = 'records.kernel'") == 9);
  CHECK(sqlInt(out, "SELECT value FROM CUOVERLAP_SESSION WHERE key = 'complete'") == 1);
  CHECK(sqlInt(out, "SELECT count(*) FROM CUOVERLAP_PROCESS_SESSION WHERE key = 'rank'") == 2);
  CHECK(contains(run.err, "processes: 3"));
  CHECK(contains(run.err, " rank 0/2 (local 0): "));
  CHECK(contains(run.err, " rank 1/2 (local 1): "));

  cuoverlap::Trace trace = cuoverlap::readTrace(out);
  REQUIRE(trace.processes.size() == 3);
  int ranked = 0;
  for (const cuoverlap::ProcessInfo& process : trace.processes) {
    CHECK(process.pid != 0);
    CHECK(contains(process.command, "fake_traced_app tree"));
    if (process.rank) {
      ++ranked;
      CHECK(process.world_size == 2);
      CHECK(process.local_rank == process.rank);
    }
  }
  CHECK(ranked == 2);
  CHECK(trace.ops.size() == 9);
}

TEST_CASE("merged: record waits for a traced descendant that outlives the program") {
  std::string out = scratchDir() + "/orphan.sqlite";
  Run run = record("-o " + out, "orphan 1500");
  INFO(run.err);
  CHECK(run.exit_code == 0);
  // The orphan's 4 kernels are traced 1.5 s after the program returned: in the merged file only
  // if record waited for it. (The "waiting ..." notice comes after 1 s of waiting, which a loaded
  // machine may not reach: the program itself can take most of the 1.5 s to exit.)
  CHECK(sqlInt(out, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL") == 1 + 4);
  CHECK(sqlInt(out, "SELECT value FROM CUOVERLAP_SESSION WHERE key = 'processes'") == 2);
}

TEST_CASE("per process: %r names one file per rank; a process without a rank gets pid<PID>") {
  std::string pattern = scratchDir() + "/rank-%r.sqlite";
  std::string stale = scratchDir() + "/rank-1.sqlite";
  { std::ofstream(stale) << "an older run's file"; }
  Run run = record("-o " + pattern, "tree");
  INFO(run.err);
  CHECK(run.exit_code == 0);
  CHECK(sqlInt(scratchDir() + "/rank-0.sqlite", "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL") == 3);
  CHECK(sqlInt(scratchDir() + "/rank-0.sqlite", "SELECT value FROM CUOVERLAP_SESSION WHERE key = 'rank'") == 0);
  // rank-1.sqlite was taken: the rank-1 process wrote rank-1-pid<PID>.sqlite; the stale file is
  // neither overwritten nor reported.
  CHECK(readAll(stale) == "an older run's file");
  CHECK(countOf(run.err, "cuoverlap: trace ") == 3);
  CHECK(countOf(run.err, "rank-1-pid") == 1);
  CHECK_FALSE(contains(run.err, "trace " + stale + "\n"));
  CHECK(countOf(run.err, "/rank-pid") == 1);  // the parent, without a rank
  cuoverlap::Trace trace = cuoverlap::readTrace(scratchDir() + "/rank-0.sqlite");
  REQUIRE(trace.processes.size() == 1);
  CHECK(trace.processes[0].rank == 0);
  CHECK(trace.processes[0].world_size == 2);
}

TEST_CASE("per process: %p gives one file per process") {
  Run run = record("-o " + scratchDir() + "/pid-%p.sqlite", "tree");
  INFO(run.err);
  CHECK(run.exit_code == 0);
  CHECK(countOf(run.err, "cuoverlap: trace " + scratchDir() + "/pid-") == 3);
}

TEST_CASE("record refuses an existing output, a symlink included, and replaces only the link with --force") {
  std::string target = scratchDir() + "/precious.txt", link = scratchDir() + "/linked.sqlite";
  { std::ofstream(target) << "precious"; }
  REQUIRE(::symlink(target.c_str(), link.c_str()) == 0);
  Run refused = record("-o " + link, "one 2");
  INFO(refused.err);
  CHECK(refused.exit_code == 2);
  CHECK(contains(refused.err, "exists; use --force"));
  Run forced = record("--force -o " + link, "one 2");
  INFO(forced.err);
  CHECK(forced.exit_code == 3);
  CHECK(readAll(target) == "precious");
  struct stat info {};
  REQUIRE(::lstat(link.c_str(), &info) == 0);
  CHECK(S_ISREG(info.st_mode));
  CHECK(sqlInt(link, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL") == 2);
}

TEST_CASE("record ignores a trace whose session names another process") {
  std::string out = scratchDir() + "/lie.sqlite";
  Run run = record("-o " + out, "lie");
  INFO(run.err);
  CHECK(run.exit_code == 0);
  CHECK(contains(run.err, "its session names another process"));
  CHECK(contains(run.err, "no trace written to " + out));
  CHECK_FALSE(exists(out));
}

TEST_CASE("a killed process: its last commit is merged, the job is marked incomplete") {
  std::string out = scratchDir() + "/killed.sqlite";
  Run run = record("-o " + out, "killed 5");
  INFO(run.err);
  CHECK(run.exit_code == 128 + 9);
  CHECK(sqlInt(out, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL") == 5);
  CHECK(sqlInt(out, "SELECT count(*) FROM CUOVERLAP_SESSION WHERE key = 'complete'") == 0);
  CHECK(contains(run.err, "ended before the collector finished"));
}

TEST_CASE("merge refuses a file that is not a cuoverlap trace and leaves no output") {
  std::string bogus = scratchDir() + "/bogus.sqlite", out = scratchDir() + "/bogus_merged.sqlite";
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(bogus.c_str(), &db) == SQLITE_OK);
  sqlite3_exec(db, "CREATE TABLE t (x)", nullptr, nullptr, nullptr);
  sqlite3_close(db);
  CHECK_THROWS_WITH(cuoverlap::schema::mergeTraceFiles({bogus}, out, {}),
                    Catch::Contains("not a cuoverlap trace"));
  CHECK_FALSE(exists(out));
  CHECK(leftovers("bogus_merged") == 0);
}

TEST_CASE("record --summary: a rank summary beside each trace, the same report as the traces") {
  const std::string dir = scratchDir() + "/summary";
  REQUIRE(std::system(("mkdir -p " + dir).c_str()) == 0);
  Run run = record("--summary -o " + dir + "/rank%r.sqlite", "tree");
  INFO(run.err);
  CHECK(run.exit_code == 0);
  CHECK(countOf(run.err, "  summary: " + dir + "/rank") == 3);
  REQUIRE(exists(dir + "/rank0.cosum"));
  const std::string json = scratchDir() + "/summary.json";
  const std::string traces = json + ".traces";
  const std::string analyze = std::string(CUOVERLAP_CLI) + " analyze --format json ";
  REQUIRE(std::system((analyze + dir + "/*.cosum > " + json).c_str()) == 0);
  REQUIRE(std::system((analyze + dir + "/*.sqlite > " + traces).c_str()) == 0);
  CHECK(readAll(json) == readAll(traces));
  CHECK(contains(readAll(json), "\"path\": \"" + dir + "/rank0.sqlite\""));
}
