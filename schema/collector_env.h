// The contract between `cuoverlap record` and the collector library: the environment variables
// that carry the options, the output-name expansion both sides must agree on, and where a
// process's rank comes from.
#pragma once

#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

namespace cuoverlap::schema {

inline constexpr const char* kEnvOutput = "CUOVERLAP_OUTPUT";  // output path pattern
inline constexpr const char* kEnvQuiet = "CUOVERLAP_QUIET";    // "1": no notice on stderr
inline constexpr const char* kEnvCommand = "CUOVERLAP_COMMAND";  // command line, for the session
// Set by `record`: a directory it created for this run. Each traced process registers there as
// <pid>.lock (holding its trace's path, flock-ed while the process writes), so that record knows
// every file written and waits for every traced descendant, even one that outlives its child.
inline constexpr const char* kEnvRunDir = "CUOVERLAP_RUN_DIR";
// Created in the run directory by a collector that warned it could not trace its process, so that
// `record`, finding no trace, says whether a warning was printed at all.
inline constexpr const char* kCollectorWarnedFile = "collector-warned";
// The pid of the process `record` started; a traced process whose pid is this one keeps the
// command line record was given (others read their own /proc/self/cmdline).
inline constexpr const char* kEnvRootPid = "CUOVERLAP_ROOT_PID";
// "lean" (default): only the runtime/driver calls the analysis reads; "all": every call.
inline constexpr const char* kEnvApi = "CUOVERLAP_API";
// Overhead knobs (docs/collector.md, "Overhead by design"): unset means the default.
inline constexpr const char* kEnvHostBufferKb = "CUOVERLAP_HOST_BUFFER_KB";        // 4096
inline constexpr const char* kEnvDeviceBufferKb = "CUOVERLAP_DEVICE_BUFFER_KB";    // 8192
inline constexpr const char* kEnvDeviceBufferPool = "CUOVERLAP_DEVICE_BUFFER_POOL";  // 250
inline constexpr const char* kEnvPerThreadBuffers = "CUOVERLAP_PER_THREAD_BUFFERS";  // 1
inline constexpr const char* kEnvCommitMs = "CUOVERLAP_COMMIT_MS";  // 100: flush + commit period
inline constexpr const char* kEnvCuptiFlushMs = "CUOVERLAP_CUPTI_FLUSH_MS";  // 0: CUPTI decides
// "0": no op buffers (CUOVERLAP_OP_BUFFERS: the memory each kernel, copy and memset touched);
// default 1, recorded.
inline constexpr const char* kEnvOpBuffers = "CUOVERLAP_OP_BUFFERS";
// "0": no allocations and frees (CUDA_GPU_MEMORY_USAGE_EVENTS, CUPTI's MEMORY2 records); default 1.
inline constexpr const char* kEnvMemoryUsage = "CUOVERLAP_MEMORY_USAGE";
// GPU metrics by PM sampling: the sampling interval in microseconds (0 or unset: off).
inline constexpr const char* kEnvGpuMetricsUs = "CUOVERLAP_GPU_METRICS";
// "1": when the process exits (exit, return from main, quick_exit) and its trace is finished,
// the collector runs `cuoverlap summarize` on it and waits for it (docs/summaries.md, "Ranks
// launched without record"). Ignored under `record`, which summarizes itself (--summary, or this
// variable in record's own environment).
inline constexpr const char* kEnvSummary = "CUOVERLAP_SUMMARY";
inline constexpr const char* kEnvSummaryTimeout = "CUOVERLAP_SUMMARY_TIMEOUT";  // seconds, 600
// The `cuoverlap` command the collector runs for CUOVERLAP_SUMMARY (default: beside the library,
// then ../bin/cuoverlap).
inline constexpr const char* kEnvBin = "CUOVERLAP_BIN";

inline constexpr std::string_view kDefaultOutputPattern = "cuoverlap-%p.sqlite";  // collector alone
inline constexpr std::string_view kDefaultRecordOutput = "cuoverlap.sqlite";         // `record`

// Rank variables set by launchers, first found wins: torchrun/torch.distributed, Open MPI,
// MPICH/Hydra (PMI), Slurm.
inline constexpr const char* kRankVariables[] = {"RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK",
                                                 "SLURM_PROCID"};
inline constexpr const char* kLocalRankVariables[] = {"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK",
                                                      "MPI_LOCALRANKID", "SLURM_LOCALID"};
inline constexpr const char* kWorldSizeVariables[] = {"WORLD_SIZE", "OMPI_COMM_WORLD_SIZE",
                                                      "PMI_SIZE", "SLURM_NTASKS"};

// A non-negative decimal integer that fits in 31 bits, else nothing.
inline std::optional<int> parseRankValue(const char* text) {
  if (text == nullptr || *text == '\0') return std::nullopt;
  long value = 0;
  for (const char* c = text; *c != '\0'; ++c) {
    if (*c < '0' || *c > '9' || value > 100000000) return std::nullopt;
    value = value * 10 + (*c - '0');
  }
  return static_cast<int>(value);
}

template <typename Lookup, std::size_t N>
std::optional<int> firstRankValue(const char* const (&names)[N], Lookup lookup) {
  for (const char* name : names) {
    if (std::optional<int> value = parseRankValue(lookup(name))) return value;
  }
  return std::nullopt;
}

struct RankInfo {
  std::optional<int> rank, local_rank, world_size;
};

// `lookup(name)` returns the variable's value or nullptr (std::getenv by default).
template <typename Lookup>
RankInfo rankInfo(Lookup lookup) {
  return {firstRankValue(kRankVariables, lookup), firstRankValue(kLocalRankVariables, lookup),
          firstRankValue(kWorldSizeVariables, lookup)};
}
inline RankInfo rankInfoFromEnvironment() {
  return rankInfo([](const char* name) -> const char* { return std::getenv(name); });
}

// Whether a pattern names one file per process (%p or %r); otherwise `record` merges all
// processes into the one file it names.
inline bool isPerProcessPattern(std::string_view pattern) {
  for (std::size_t i = 0; i + 1 < pattern.size(); ++i) {
    if (pattern[i] != '%') continue;
    if (pattern[i + 1] == 'p' || pattern[i + 1] == 'r') return true;
    ++i;  // "%%"
  }
  return false;
}

// Expands %p (process id), %r (rank; "pid<PID>" for a process without a rank variable),
// %h (host name) and %% in an output pattern.
inline std::string expandOutputPattern(std::string_view pattern, long pid, std::string_view host,
                                       std::optional<int> rank = std::nullopt) {
  std::string out;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] != '%' || i + 1 == pattern.size()) {
      out += pattern[i];
      continue;
    }
    char code = pattern[++i];
    if (code == 'p') out += std::to_string(pid);
    else if (code == 'r') out += rank ? std::to_string(*rank) : "pid" + std::to_string(pid);
    else if (code == 'h') out += host;
    else if (code == '%') out += '%';
    else (out += '%') += code;
  }
  return out;
}

}  // namespace cuoverlap::schema
