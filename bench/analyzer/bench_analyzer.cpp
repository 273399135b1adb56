// Analyzer benchmark (not a timed test): for N = 10^5, 10^6, 10^7 synthetic ops, the wall time and
// peak RSS of `cuoverlap analyze --format json` next to the floor, a process that merely steps
// through the same rows with sqlite3. Each figure is the median of 3 runs after one warm-up run of
// each (the page cache holds the file). Results: docs/BENCHMARKS.md, "Analyzer".
//
//   cuoverlap_bench_analyzer [--dir DIR (default /tmp/cuoverlap-bench)] [--sizes 100000,1000000,10000000]
//   cuoverlap_bench_analyzer gen N PATH      write a trace
//   cuoverlap_bench_analyzer floor PATH      step through the op rows
//   cuoverlap_bench_analyzer stages PATH     time and peak RSS after each analyzer stage
//   cuoverlap_bench_analyzer ranks N OPS [DIR]  a job of N rank files of OPS ops each (with NCCL
//                                            all-reduces): analyze of all N (one run after a
//                                            warm-up: minutes) on every core and on one thread,
//                                            and of one rank file alone (the memory bound)
//   cuoverlap_bench_analyzer scoped [--dir DIR] [--pairs 160000:16000,10000000:200000]
//       scoped analysis: per OPS:RANGES, a trace with a launch call per op and RANGES NVTX ranges
//       `step`; analyze with and without --range step (text, so the report stays one screen)
// The table also gives the RSS of analyzing an empty trace (the fixed cost) and bytes/op without it.
#include <sqlite3.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "cuoverlap/diagnosis.h"
#include "cuoverlap/metrics.h"
#include "cuoverlap/reader.h"
#include "trace_generator.h"

namespace {

struct Measurement {
  double seconds = 0;
  long max_rss_kib = 0;
};

Measurement runChild(const std::vector<std::string>& argv) {
  std::fflush(stdout);  // else the child's copy of the buffer is flushed again
  auto begin = std::chrono::steady_clock::now();
  pid_t pid = fork();
  if (pid == 0) {
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    if (std::freopen("/dev/null", "w", stdout) == nullptr) _exit(126);
    execv(args[0], args.data());
    _exit(127);
  }
  int status = 0;
  rusage usage{};
  wait4(pid, &status, 0, &usage);
  std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - begin;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "bench: %s failed (status %d)\n", argv[0].c_str(), status);
    std::exit(1);
  }
  return {elapsed.count(), usage.ru_maxrss};
}

Measurement median(const std::vector<std::string>& argv) {
  runChild(argv);  // warm-up: page cache, dynamic loader
  std::vector<Measurement> runs;
  for (int i = 0; i < 3; ++i) runs.push_back(runChild(argv));
  std::sort(runs.begin(), runs.end(),
            [](const Measurement& a, const Measurement& b) { return a.seconds < b.seconds; });
  return runs[1];
}

int stepThroughRows(const char* path) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) return 1;
  long long rows = 0;
  for (const char* table : {"CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY",
                            "CUPTI_ACTIVITY_KIND_MEMSET"}) {
    sqlite3_stmt* stmt = nullptr;
    std::string sql = std::string("SELECT * FROM ") + table;
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr) != SQLITE_OK) return 1;
    while (sqlite3_step(stmt) == SQLITE_ROW) ++rows;
    sqlite3_finalize(stmt);
  }
  sqlite3_close(db);
  std::printf("%lld rows\n", rows);
  return 0;
}

// Where the time and memory go: read, metrics, diagnosis (gaps and findings from one shared
// device view, as analyzeTrace runs them), each reported as it finishes.
int printStages(const std::string& path) {
  using Clock = std::chrono::steady_clock;
  auto begin = Clock::now();
  auto report = [&](const char* stage) {
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    std::chrono::duration<double> t = Clock::now() - begin;
    std::printf("%-10s %7.2f s  peak RSS %6.0f MiB\n", stage, t.count(), usage.ru_maxrss / 1024.0);
  };
  cuoverlap::Trace trace = cuoverlap::readTrace(path);
  report("read");
  cuoverlap::Scope scope;
  std::vector<cuoverlap::DeviceReport> devices(1);
  devices[0].metrics = cuoverlap::computeDeviceMetrics(trace, scope, 0);
  report("metrics");
  std::vector<cuoverlap::Finding> findings;
  devices[0].gaps = cuoverlap::diagnoseDevice(trace, scope, 0, 10'000, findings);
  cuoverlap::sortFindingsByCost(findings);
  report("diagnosis");
  return 0;
}

// Linear-time scoping (issue 11): --range over many instances against the unscoped analysis of
// the same file. Before WindowIndex, 16k instances over 160k ops took 290 s.
// The usage in this file's header comment.
void printUsage() {
  std::printf(
      "usage: cuoverlap_bench_analyzer [--dir DIR (default /tmp/cuoverlap-bench)] [--sizes 100000,1000000,10000000]\n"
      "       cuoverlap_bench_analyzer gen N PATH        write a synthetic trace of N ops\n"
      "       cuoverlap_bench_analyzer floor PATH        step through the op rows with sqlite3\n"
      "       cuoverlap_bench_analyzer stages PATH       time and peak RSS after each analyzer stage\n"
      "       cuoverlap_bench_analyzer ranks N OPS [DIR] a job of N rank files of OPS ops each\n"
      "       cuoverlap_bench_analyzer scoped [--dir DIR] [--pairs 160000:16000,10000000:200000]\n"
      "With no command: analyze of 10^5..10^7 synthetic ops against the floor, median of 3 runs\n"
      "(minutes). Results: docs/BENCHMARKS.md, \"Analyzer\".\n");
}

int runScoped(const std::string& dir, const std::string& pairs) {
  std::printf("| ops | ranges | analyze s | analyze --range step s | ratio | RSS MiB | --range RSS MiB |\n"
              "|---|---|---|---|---|---|---|\n");
  std::size_t pos = 0;
  while (pos < pairs.size()) {
    std::size_t comma = pairs.find(',', pos);
    const std::string pair = pairs.substr(pos, comma - pos);
    pos = comma == std::string::npos ? pairs.size() : comma + 1;
    const long long ops = std::stoll(pair.substr(0, pair.find(':')));
    const long long ranges = std::stoll(pair.substr(pair.find(':') + 1));
    const std::string path = dir + "/scoped_" + std::to_string(ops) + "_" + std::to_string(ranges) + ".sqlite";
    if (!std::filesystem::exists(path)) cuoverlap::bench::writeSyntheticTraceWithRanges(path, ops, ranges);
    const Measurement whole = median({CUOVERLAP_CLI, "analyze", path});
    const Measurement scoped = median({CUOVERLAP_CLI, "analyze", "--range", "step", path});
    std::printf("| %lld | %lld | %.2f | %.2f | %.2f | %.0f | %.0f |\n", ops, ranges, whole.seconds,
                scoped.seconds, scoped.seconds / whole.seconds, whole.max_rss_kib / 1024.0,
                scoped.max_rss_kib / 1024.0);
    std::fflush(stdout);
  }
  return 0;
}

std::vector<long long> parseSizes(const std::string& list) {
  std::vector<long long> sizes;
  std::size_t pos = 0;
  while (pos < list.size()) {
    std::size_t comma = list.find(',', pos);
    sizes.push_back(std::stoll(list.substr(pos, comma - pos)));
    pos = comma == std::string::npos ? list.size() : comma + 1;
  }
  return sizes;
}

int benchRanks(int ranks, long long ops, const std::string& dir) {
  std::filesystem::create_directories(dir);
  std::vector<std::string> files;
  for (int r = 0; r < ranks; ++r) {
    files.push_back(dir + "/rank_" + std::to_string(ops) + "_" + std::to_string(r) + ".sqlite");
    if (!std::filesystem::exists(files.back())) {
      cuoverlap::bench::writeSyntheticRankTrace(files.back(), ops, r);
    }
  }
  auto analyze = [&](const std::vector<std::string>& inputs, const char* threads) {
    std::vector<std::string> argv = {CUOVERLAP_CLI, "analyze", "--format", "json", "--threads", threads};
    argv.insert(argv.end(), inputs.begin(), inputs.end());
    runChild(argv);  // warm-up: page cache
    return runChild(argv);
  };
  const Measurement one = analyze({files.front()}, "1");
  const Measurement all = analyze(files, "0");
  const Measurement serial = analyze(files, "1");
  std::printf("| ranks x ops | cores | analyze s (all cores) | analyze s (1 thread) | peak RSS MiB "
              "(all cores) | peak RSS MiB (1 thread) | one rank: s, RSS MiB |\n"
              "|---|---|---|---|---|---|---|\n");
  std::printf("| %d x %lld | %u | %.1f | %.1f | %.0f | %.0f | %.2f, %.0f |\n", ranks, ops,
              std::thread::hardware_concurrency(), all.seconds, serial.seconds,
              all.max_rss_kib / 1024.0, serial.max_rss_kib / 1024.0, one.seconds,
              one.max_rss_kib / 1024.0);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (!args.empty() && (args[0] == "--help" || args[0] == "-h" || args[0] == "help")) {
    printUsage();
    return 0;
  }
  if (args.size() == 3 && args[0] == "gen") {
    cuoverlap::bench::writeSyntheticTrace(args[2], std::stoll(args[1]));
    return 0;
  }
  if (args.size() == 2 && args[0] == "floor") return stepThroughRows(args[1].c_str());
  if (args.size() == 2 && args[0] == "stages") return printStages(args[1]);
  if ((args.size() == 3 || args.size() == 4) && args[0] == "ranks") {
    return benchRanks(std::stoi(args[1]), std::stoll(args[2]),
                      args.size() == 4 ? args[3] : "/tmp/cuoverlap-bench-ranks");
  }
  std::string dir = "/tmp/cuoverlap-bench";
  std::string sizes = "100000,1000000,10000000";
  std::string pairs = "160000:16000,10000000:200000";
  const bool scoped = !args.empty() && args[0] == "scoped";
  for (std::size_t i = scoped ? 1 : 0; i + 1 < args.size(); i += 2) {
    if (args[i] == "--dir") dir = args[i + 1];
    if (args[i] == "--sizes") sizes = args[i + 1];
    if (args[i] == "--pairs") pairs = args[i + 1];
  }
  std::filesystem::create_directories(dir);
  if (scoped) return runScoped(dir, pairs);
  std::string self = std::filesystem::canonical("/proc/self/exe").string();
  // The fixed cost (binary, libraries, SQLite's page cache, allocator arenas): analyze of a trace
  // with no ops. Per-op figures are given with and without it, since it dominates at small N.
  const std::string empty_path = dir + "/synthetic_0.sqlite";
  if (!std::filesystem::exists(empty_path)) cuoverlap::bench::writeSyntheticTrace(empty_path, 0);
  const Measurement empty = median({CUOVERLAP_CLI, "analyze", "--format", "json", empty_path});
  std::printf("empty trace: analyze %.3f s, peak RSS %.1f MiB\n\n", empty.seconds,
              empty.max_rss_kib / 1024.0);
  std::printf("| ops | floor s | analyze s | analyze / floor | floor RSS MiB | analyze RSS MiB | "
              "analyze RSS bytes/op | (RSS - empty) bytes/op |\n|---|---|---|---|---|---|---|---|\n");
  for (long long n : parseSizes(sizes)) {
    std::string path = dir + "/synthetic_" + std::to_string(n) + ".sqlite";
    if (!std::filesystem::exists(path)) cuoverlap::bench::writeSyntheticTrace(path, n);
    Measurement floor = median({self, "floor", path});
    Measurement analyze = median({CUOVERLAP_CLI, "analyze", "--format", "json", path});
    std::printf("| %lld | %.2f | %.2f | %.2f | %.0f | %.0f | %.0f | %.0f |\n", n, floor.seconds,
                analyze.seconds, analyze.seconds / floor.seconds, floor.max_rss_kib / 1024.0,
                analyze.max_rss_kib / 1024.0, analyze.max_rss_kib * 1024.0 / static_cast<double>(n),
                (analyze.max_rss_kib - empty.max_rss_kib) * 1024.0 / static_cast<double>(n));
    std::fflush(stdout);
  }
  return 0;
}
