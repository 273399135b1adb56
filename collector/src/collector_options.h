// What one traced process was asked to do, read from the environment (schema/collector_env.h):
// where to write, how much API tracing, and the overhead knobs (buffer sizes, flush period).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "capture_spec.h"
#include "collector_env.h"

namespace cuoverlap::collector {

enum class ApiTracing : std::uint8_t { kLean, kAll };

struct CollectorOptions {
  std::string pattern;      // CUOVERLAP_OUTPUT as given (default cuoverlap-%p.sqlite)
  std::string output_path;  // expanded for this process
  bool per_process = false;  // the pattern has %p or %r: retry with a pid suffix on a clash
  std::string run_dir;      // CUOVERLAP_RUN_DIR ("" without `record`)
  std::string command;
  std::string host;
  schema::RankInfo rank;
  bool quiet = false;
  ApiTracing api = ApiTracing::kLean;
  std::size_t host_buffer_bytes = 4u << 20;
  std::size_t device_buffer_bytes = 8u << 20;
  std::size_t device_buffer_pool = 250;
  bool per_thread_buffers = true;  // CUPTI's default in 13.0
  std::chrono::milliseconds commit_interval{100};
  std::uint32_t cupti_flush_period_ms = 0;  // 0: CUPTI's heuristics
  schema::CaptureSpec capture;  // CUOVERLAP_CAPTURE, _DELAY, _DURATION; inactive: the whole run
  bool op_buffers = true;  // CUOVERLAP_OP_BUFFERS=0: off (cupti/op_buffers.h)
  bool memory_usage = true;  // CUOVERLAP_MEMORY_USAGE=0: no allocation records (MEMORY2)
  std::uint64_t gpu_metrics_interval_ns = 0;  // CUOVERLAP_GPU_METRICS (µs); 0: no GPU metrics
  bool summary_at_exit = false;  // CUOVERLAP_SUMMARY=1 (exit_summary.h)
  std::chrono::seconds summary_timeout{600};  // CUOVERLAP_SUMMARY_TIMEOUT
  std::string summarizer;  // CUOVERLAP_BIN ("" : found beside the collector)
};

// Reads the environment of this process. Malformed numbers fall back to the default (with a
// warning unless quiet).
CollectorOptions optionsFromEnvironment();

// Text from the environment or a path for a warning line on the program's stderr: bytes below
// 0x20, 0x7f and above as \xNN (no escape sequence, no second line reaches the terminal), cut
// to 1000 bytes with "...".
std::string printableForLog(std::string_view text);

// "run.sqlite" -> "run-pid123.sqlite": the name a process takes when a per-rank name is already
// taken (a DataLoader worker inherits its rank's RANK).
std::string withPidSuffix(const std::string& path, long pid);

}  // namespace cuoverlap::collector
