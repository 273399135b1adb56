// cuoverlap-scan: the prefix-scan family. Arguments are parsed before any CUDA call, so --help
// and argument errors work on a machine without a GPU.
#include <cstdio>
#include <stdexcept>

#include <CLI/CLI.hpp>

#include "scan_commands.h"

namespace {

constexpr const char* kAlgorithms = "hillis-steele | blelloch | blelloch-padded | lookback | cub";

CLI::App* addRunCommand(CLI::App& app, cuoverlap::ScanRunOptions& run) {
  CLI::App* command = app.add_subcommand("run", "one scan, verified, with NVTX phases h2d/compute/d2h");
  command->add_option("--algorithm", run.algorithm, kAlgorithms)
      ->check(CLI::IsMember({"hillis-steele", "blelloch", "blelloch-padded", "lookback", "cub"}));
  command->add_option("--type", run.type, "int | float")->check(CLI::IsMember({"int", "float"}));
  command->add_flag("--exclusive", run.exclusive, "exclusive instead of inclusive scan");
  command->add_option("-n,--elements", run.n, "number of elements (any length)")->check(CLI::Range(1ull, 1ull << 30));
  command->add_option("--repetitions", run.repetitions, "timed repetitions")->check(CLI::Range(1, 1000));
  return command;
}

CLI::App* addBenchCommand(CLI::App& app, cuoverlap::ScanBenchOptions& bench) {
  CLI::App* command = app.add_subcommand("bench", "benchmark table (Markdown): CPU ms, GPU ms, speedup, "
                                                  "GB/s, ratio to CUB, for 2^min..2^max elements");
  command->add_option("--min-log2", bench.min_log2)->check(CLI::Range(1, 30));
  command->add_option("--max-log2", bench.max_log2)->check(CLI::Range(1, 30));
  command->add_option("--step", bench.step, "log2 step between rows")->check(CLI::Range(1, 10));
  command->add_option("--repetitions", bench.repetitions)->check(CLI::Range(1, 1000));
  return command;
}

CLI::App* addStreamedCommand(CLI::App& app, cuoverlap::ScanStreamedOptions& streamed) {
  CLI::App* command = app.add_subcommand("streamed", "scan a pinned host array tile by tile, "
                                                     "pipelining H2D / scan / D2H over streams");
  command->add_option("-n,--elements", streamed.n)->check(CLI::Range(1ull, 1ull << 30));
  command->add_option("--tile", streamed.tile, "elements per tile")->check(CLI::Range(1ull, 1ull << 28));
  command->add_option("--streams", streamed.streams)->check(CLI::Range(1, 16));
  return command;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace cuoverlap;
  CLI::App app{"cuoverlap-scan: prefix scans (Hillis-Steele, Blelloch, decoupled look-back, CUB), "
               "verified against a host reference"};
  app.require_subcommand(1);
  ScanRunOptions run;
  CLI::App* run_cmd = addRunCommand(app, run);
  std::size_t check_max_n = (std::size_t(1) << 24) + 3;
  CLI::App* check_cmd = app.add_subcommand("check", "every algorithm x inclusive/exclusive x int32/float "
                                                    "on awkward lengths; exit 1 on any mismatch");
  check_cmd->add_option("--max-n", check_max_n, "largest length checked")->check(CLI::Range(1ull, 1ull << 30));
  ScanBenchOptions bench;
  CLI::App* bench_cmd = addBenchCommand(app, bench);
  int tune_repetitions = 20;
  CLI::App* tune_cmd = app.add_subcommand("tune", "every look-back tile shape against CUB at 2^24 and 2^28");
  tune_cmd->add_option("--repetitions", tune_repetitions)->check(CLI::Range(1, 1000));
  ScanStreamedOptions streamed;
  addStreamedCommand(app, streamed);

  CLI11_PARSE(app, argc, argv);
  if (bench.min_log2 > bench.max_log2) {
    std::fprintf(stderr, "error: --min-log2 is larger than --max-log2\n");
    return 2;
  }
  if (run_cmd->parsed()) return runScanOnce(run);
  if (check_cmd->parsed()) return runScanCheck(check_max_n);
  if (bench_cmd->parsed()) return runScanBench(bench);
  if (tune_cmd->parsed()) return runScanTune(tune_repetitions);
  return runScanStreamed(streamed);
}
