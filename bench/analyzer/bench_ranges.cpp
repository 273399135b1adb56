// --range on hostile traces (issue 24), through the `cuoverlap` binary: the wall time of
// `analyze --range PATTERN` (text report to /dev/null) for each pattern on two traces:
//   overlapping   20,000 ops and N start/end NVTX ranges `r` of 5 ms, 50 ns apart: all overlap
//                 each other and the ops
//   long names    20,000 ops and 8 ranges of 2 ms over them, each with its own 1 MiB name
// Patterns: an exact name, a glob, a regex, a backtracking regex that matches nothing (`/(q+)+x/`,
// so the "closest names" suggestion runs too) and a plain name that matches nothing. One run
// each (exit 0, or 2 for no match); the table goes into docs/BENCHMARKS.md.
//
//   cuoverlap_bench_ranges [--dir DIR (default /tmp/cuoverlap-bench-ranges)] [--instances N (100000)]
#include <fmt/core.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "trace_generator.h"
#include "trace_schema.h"

namespace {

constexpr std::int64_t kOps = 20000;
constexpr int kLongNames = 8;
constexpr long long kFirstOp = 1000000000;  // writeSyntheticTrace's first op, in ns: 20,000 ops span 10 ms

void exec(sqlite3* db, const std::string& sql) {
  char* error = nullptr;
  if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error) != SQLITE_OK) {
    std::fprintf(stderr, "bench: %s\n", error);
    std::exit(1);
  }
}

// writeSyntheticTrace, then `rows` NVTX start/end ranges from `select` (start, end, text).
void writeTrace(const std::string& path, const std::string& insert_ranges) {
  std::filesystem::remove(path);
  cuoverlap::bench::writeSyntheticTrace(path, kOps);
  sqlite3* db = nullptr;
  if (sqlite3_open(path.c_str(), &db) != SQLITE_OK) std::exit(1);
  exec(db, "BEGIN");
  exec(db, insert_ranges);
  exec(db, "COMMIT");
  sqlite3_close(db);
}

std::string overlappingRanges(long long n) {
  const auto tid = static_cast<long long>(cuoverlap::schema::encodeGlobalTid(4242, 7));
  return fmt::format(
      "WITH RECURSIVE i(k) AS (SELECT 0 UNION ALL SELECT k + 1 FROM i WHERE k + 1 < {0}) "
      "INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid) "
      "SELECT {2} + k * 50, {2} + k * 50 + 5000000, 60, 'r', {1} FROM i", n, tid, kFirstOp);
}

std::string longNamedRanges() {
  const auto tid = static_cast<long long>(cuoverlap::schema::encodeGlobalTid(4242, 7));
  return fmt::format(
      "WITH RECURSIVE i(k) AS (SELECT 0 UNION ALL SELECT k + 1 FROM i WHERE k + 1 < {0}) "
      "INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid) "
      "SELECT {2} + k * 1000000, {2} + k * 1000000 + 2000000, 60, "
      "'tile' || k || replace(hex(zeroblob(524288)), '0', 'q'), {1} FROM i", kLongNames, tid, kFirstOp);
}

// Wall seconds and exit code of `cuoverlap analyze --range PATTERN PATH`, output discarded.
std::pair<double, int> timeRange(const std::string& path, const std::string& pattern) {
  const auto begin = std::chrono::steady_clock::now();
  const pid_t pid = fork();
  if (pid == 0) {
    if (std::freopen("/dev/null", "w", stdout) == nullptr || std::freopen("/dev/null", "w", stderr) == nullptr) {
      _exit(126);
    }
    execl(CUOVERLAP_CLI, CUOVERLAP_CLI, "analyze", "--range", pattern.c_str(), path.c_str(),
          static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - begin;
  return {elapsed.count(), WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status)};
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir = "/tmp/cuoverlap-bench-ranges";
  long long instances = 100000;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      std::printf("usage: cuoverlap_bench_ranges [--dir DIR] [--instances N]\n"
                  "  the wall time of `cuoverlap analyze --range PATTERN` on N overlapping NVTX\n"
                  "  instances and on 1 MiB range names (docs/BENCHMARKS.md)\n");
      return 0;
    }
    if (i + 1 >= argc) break;
    if (flag == "--dir") dir = argv[++i];
    else if (flag == "--instances") instances = std::stoll(argv[++i]);
  }
  std::filesystem::create_directories(dir);
  const std::string overlapping = dir + "/overlapping.sqlite";
  const std::string long_names = dir + "/long_names.sqlite";
  writeTrace(overlapping, overlappingRanges(instances));
  writeTrace(long_names, longNamedRanges());
  const std::vector<std::pair<std::string, std::string>> traces = {
      {fmt::format("{} overlapping instances", instances), overlapping},
      {fmt::format("{} names of 1 MiB", kLongNames), long_names}};
  std::printf("| trace | --range | exit | seconds |\n|---|---|---|---|\n");
  std::fflush(stdout);  // else each child flushes its copy of the buffer again
  for (const auto& trace : traces) {
    for (const std::string pattern : {"r", "tile3*", "/^(r|tile3)/", "/(q+)+x/", "nomatch"}) {
      const auto [seconds, exit_code] = timeRange(trace.second, pattern);
      std::printf("| %s | `%s` | %d | %.2f |\n", trace.first.c_str(), pattern.c_str(), exit_code, seconds);
      std::fflush(stdout);
    }
  }
  return 0;
}
