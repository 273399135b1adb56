// The subcommands of cuoverlap-scan; each returns the process exit code (0: verified).
#pragma once

#include <cstddef>
#include <string>

namespace cuoverlap {

struct ScanRunOptions {
  std::string algorithm = "lookback";
  std::string type = "int";  // int | float
  bool exclusive = false;
  std::size_t n = std::size_t(1) << 24;
  int repetitions = 10;
};

struct ScanBenchOptions {
  int min_log2 = 10;
  int max_log2 = 28;
  int step = 2;
  int repetitions = 20;
};

struct ScanStreamedOptions {
  std::size_t n = std::size_t(1) << 26;
  std::size_t tile = std::size_t(1) << 22;
  int streams = 3;
};

int runScanOnce(const ScanRunOptions& options);
int runScanCheck(std::size_t max_n);
int runScanBench(const ScanBenchOptions& options);
int runScanTune(int repetitions);
int runScanStreamed(const ScanStreamedOptions& options);

}  // namespace cuoverlap
