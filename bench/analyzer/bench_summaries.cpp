// Rank-summary benchmark (issue 23; results: docs/BENCHMARKS.md, "Rank summaries"). Prints tables:
//
//   cuoverlap_bench_summaries merge RANKS COLLECTIVES [DIR]
//       writes RANKS summaries directly (not from traces: 4,096 traces of 10^6 ops would be about
//       250 GB and hours to analyze): each holds the report of a recorded FSDP rank
//       (tests/data/ddp/fsdp_rank0.sqlite.gz, relabelled) standing for a rank of 10^6 ops, and
//       COLLECTIVES collectives on two communicators (4/5 all-reduces, 1/5 all-gathers, one every
//       millisecond), rank 17 late by 200 µs with its GPU idle before every third all-reduce.
//       Then `cuoverlap analyze --format json` and `cuoverlap gate` of all of them, each timed as
//       a child process: wall, user + system CPU, peak RSS.
//   cuoverlap_bench_summaries size OPS [DIR]
//       a synthetic rank trace of OPS ops (trace_generator.h: every 50th op an NCCL all-reduce),
//       `analyze --format json` against `summarize` of it (wall, CPU, RSS, median of 3), and the
//       summary's size against the trace's.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "cuoverlap/job.h"
#include "cuoverlap/reader.h"
#include "cuoverlap/summary.h"
#include "trace_generator.h"

namespace {

using cuoverlap::Ns;
namespace fs = std::filesystem;

struct Measurement {
  double wall_s = 0;
  double cpu_s = 0;
  double rss_mib = 0;
};

Measurement runChild(const std::vector<std::string>& argv) {
  std::fflush(stdout);
  const auto begin = std::chrono::steady_clock::now();
  const pid_t pid = fork();
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
  const std::chrono::duration<double> wall = std::chrono::steady_clock::now() - begin;
  if (!WIFEXITED(status) || (WEXITSTATUS(status) != 0 && WEXITSTATUS(status) != 1)) {
    std::fprintf(stderr, "bench: %s %s failed (status %d)\n", argv[0].c_str(), argv[1].c_str(), status);
    std::exit(1);
  }
  const auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6; };
  return {wall.count(), seconds(usage.ru_utime) + seconds(usage.ru_stime), usage.ru_maxrss / 1024.0};
}

Measurement median(const std::vector<std::string>& argv, int runs) {
  std::vector<Measurement> all;
  for (int i = 0; i < runs; ++i) all.push_back(runChild(argv));
  std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.wall_s < b.wall_s; });
  return all[all.size() / 2];
}

constexpr Ns kMs = 1'000'000;
constexpr int kLateRank = 17;

cuoverlap::RankTimeline syntheticRank(int rank, int ranks, std::uint64_t collectives) {
  cuoverlap::RankTimeline timeline;
  timeline.pid = static_cast<std::uint32_t>(1000 + rank % 8);
  timeline.rank = rank;
  timeline.world_size = ranks;
  timeline.host = "node" + std::to_string(rank / 8);
  const Ns origin = 1'800'000'000'000'000'000;
  timeline.metrics.first_start = origin;
  timeline.metrics.last_end = origin + static_cast<Ns>(collectives + 1) * kMs;
  timeline.metrics.span_ns = timeline.metrics.last_end - origin;
  timeline.metrics.kernels = 1'000'000;
  timeline.metrics.engines.resize(6);
  for (int s = 0; s < 2; ++s) {
    cuoverlap::RankStream stream;
    stream.context_id = 1;
    stream.stream_id = static_cast<std::uint32_t>(20 + s);
    const std::uint64_t count = s == 0 ? collectives * 4 / 5 : collectives - collectives * 4 / 5;
    for (std::uint64_t k = 0; k < count; ++k) {
      const Ns step = origin + static_cast<Ns>(s == 0 ? k * 5 / 4 : k * 5 + 4) * kMs;
      const bool late = s == 0 && rank == kLateRank && k % 3 == 0;
      const Ns start = step + 600'000 + (late ? 200'000 : (rank * 37) % 9 * 1000);
      stream.collectives.push_back({start, step + 900'000,
                                    s == 0 ? "AllReduce bf16" : "AllGather bf16",
                                    {600'000, 100'000 + (late ? 200'000 : 0), 0}, {}});
    }
    stream.count = stream.collectives.size();
    stream.first = stream.collectives.front();
    timeline.streams.push_back(std::move(stream));
  }
  return timeline;
}

int benchMerge(int ranks, std::uint64_t collectives, const std::string& dir) {
  fs::create_directories(dir);
  const cuoverlap::Trace template_trace =
      cuoverlap::readTrace(std::string(CUOVERLAP_TEST_DATA) + "/ddp/fsdp_rank0.sqlite.gz");
  const cuoverlap::TraceReport report = cuoverlap::analyzeTrace(template_trace, {});
  std::vector<std::string> files(static_cast<std::size_t>(ranks));
  std::atomic<int> next{0};
  const auto started = std::chrono::steady_clock::now();
  const auto work = [&] {
    for (int r = next++; r < ranks; r = next++) {
      std::string& path = files[static_cast<std::size_t>(r)];
      path = dir + "/rank" + std::to_string(r) + ".cosum";
      if (fs::exists(path)) continue;
      cuoverlap::TraceReport mine = report;
      mine.path = "/local/traces/rank" + std::to_string(r) + ".sqlite";
      const std::vector<cuoverlap::RankTimeline> timeline{syntheticRank(r, ranks, collectives)};
      std::ofstream(path + ".part", std::ios::binary)
          << cuoverlap::serializeSummary(mine, timeline, cuoverlap::AnalysisOptions{});
      fs::rename(path + ".part", path);
    }
  };
  std::thread helper(work);
  work();
  helper.join();
  const std::chrono::duration<double> generated = std::chrono::steady_clock::now() - started;
  std::uintmax_t bytes = 0;
  for (const std::string& f : files) bytes += fs::file_size(f);
  std::printf("%d summaries of %llu collectives: %.1f MiB in all (%.0f KiB each), written in %.0f s\n\n",
              ranks, static_cast<unsigned long long>(collectives), bytes / 1048576.0,
              bytes / 1024.0 / ranks, generated.count());
  std::vector<std::string> analyze{CUOVERLAP_CLI, "analyze", "--format", "json", "--threads", "2"};
  analyze.insert(analyze.end(), files.begin(), files.end());
  std::vector<std::string> gate{CUOVERLAP_CLI, "gate", "--max-rank-skew", "1ms"};
  gate.insert(gate.end(), files.begin(), files.end());
  runChild(analyze);  // warm-up: the page cache
  std::printf("| command | ranks x collectives | wall s | CPU s (user + sys) | peak RSS MiB |\n"
              "|---|---|---|---|---|\n");
  for (const auto& [name, argv] : {std::make_pair("analyze --format json", analyze),
                                   std::make_pair("gate --max-rank-skew 1ms", gate)}) {
    const Measurement m = runChild(argv);
    std::printf("| %s | %d x %llu | %.1f | %.1f | %.0f |\n", name, ranks,
                static_cast<unsigned long long>(collectives), m.wall_s, m.cpu_s, m.rss_mib);
  }
  return 0;
}

int benchSize(long long ops, const std::string& dir) {
  fs::create_directories(dir);
  const std::string trace = dir + "/rank_" + std::to_string(ops) + ".sqlite";
  if (!fs::exists(trace)) cuoverlap::bench::writeSyntheticRankTrace(trace, ops, 0);
  const std::string summary = dir + "/rank_" + std::to_string(ops) + ".cosum";
  runChild({CUOVERLAP_CLI, "analyze", "--format", "json", trace});  // warm-up: the page cache
  const Measurement analyze = median({CUOVERLAP_CLI, "analyze", "--format", "json", trace}, 3);
  const Measurement summarize =
      median({CUOVERLAP_CLI, "summarize", "-q", "--force", trace, "-o", summary}, 3);
  const double trace_mb = static_cast<double>(fs::file_size(trace)) / 1e6;
  const double summary_mb = static_cast<double>(fs::file_size(summary)) / 1e6;
  std::printf("| ops | trace MB | summary MB | summary / trace | analyze: wall s, CPU s, RSS MiB "
              "| summarize: wall s, CPU s, RSS MiB |\n|---|---|---|---|---|---|\n");
  std::printf("| %lld | %.1f | %.2f | %.2f%% | %.2f, %.2f, %.0f | %.2f, %.2f, %.0f |\n", ops,
              trace_mb, summary_mb, 100.0 * summary_mb / trace_mb, analyze.wall_s, analyze.cpu_s,
              analyze.rss_mib, summarize.wall_s, summarize.cpu_s, summarize.rss_mib);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  if ((args.size() == 3 || args.size() == 4) && args[0] == "merge") {
    return benchMerge(std::stoi(args[1]), std::stoull(args[2]),
                      args.size() == 4 ? args[3] : "/tmp/cuoverlap-bench-summaries");
  }
  if ((args.size() == 2 || args.size() == 3) && args[0] == "size") {
    return benchSize(std::stoll(args[1]), args.size() == 3 ? args[2] : "/tmp/cuoverlap-bench");
  }
  std::fprintf(stderr, "usage: cuoverlap_bench_summaries merge RANKS COLLECTIVES [DIR] | size OPS [DIR]\n");
  return 2;
}
