#include "collector_options.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string_view>

namespace cuoverlap::collector {
namespace {

std::string hostName() {
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0) return "localhost";
  return host;
}

std::string commandLineOfThisProcess() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (char& c : all) c = c == '\0' ? ' ' : c;
  while (!all.empty() && all.back() == ' ') all.pop_back();
  return all;
}

// A positive integer variable within [minimum, maximum], else `fallback`.
std::uint64_t numberFromEnvironment(const char* name, std::uint64_t fallback, std::uint64_t minimum,
                                    std::uint64_t maximum, bool quiet) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return fallback;
  char* end = nullptr;
  unsigned long long value = std::strtoull(text, &end, 10);
  if (*end != '\0' || value < minimum || value > maximum) {
    if (!quiet) {
      std::fprintf(stderr, "cuoverlap: warning: ignoring %s=%s (expected %llu..%llu)\n", name,
                   printableForLog(text).c_str(),
                   static_cast<unsigned long long>(minimum), static_cast<unsigned long long>(maximum));
    }
    return fallback;
  }
  return value;
}

}  // namespace

std::string printableForLog(std::string_view text) {
  constexpr std::size_t kMaxBytes = 1000;
  std::string out;
  for (std::size_t i = 0; i < text.size() && i < kMaxBytes; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c >= 0x7f || c == '\\') {
      char escaped[5];
      std::snprintf(escaped, sizeof escaped, "\\x%02x", c);
      out += escaped;
    } else {
      out += static_cast<char>(c);
    }
  }
  if (text.size() > kMaxBytes) out += "...";
  return out;
}

std::string withPidSuffix(const std::string& path, long pid) {
  std::string suffix = "-pid" + std::to_string(pid);
  std::size_t slash = path.rfind('/');
  std::size_t dot = path.rfind('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash) || dot == slash + 1) {
    return path + suffix;
  }
  return path.substr(0, dot) + suffix + path.substr(dot);
}

CollectorOptions optionsFromEnvironment() {
  CollectorOptions o;
  const char* quiet = std::getenv(schema::kEnvQuiet);
  o.quiet = quiet != nullptr && std::string_view(quiet) == "1";
  const char* pattern = std::getenv(schema::kEnvOutput);
  o.pattern = pattern != nullptr && *pattern != '\0' ? pattern
                                                     : std::string(schema::kDefaultOutputPattern);
  o.host = hostName();
  o.rank = schema::rankInfoFromEnvironment();
  o.per_process = schema::isPerProcessPattern(o.pattern);
  o.output_path = schema::expandOutputPattern(o.pattern, getpid(), o.host, o.rank.rank);
  const char* run_dir = std::getenv(schema::kEnvRunDir);
  if (run_dir != nullptr) o.run_dir = run_dir;
  // Only the process `record` started ran the command record was given; its descendants
  // (torchrun's ranks, workers) say what they are themselves.
  const char* command = std::getenv(schema::kEnvCommand);
  const char* root = std::getenv(schema::kEnvRootPid);
  bool is_root = root == nullptr || std::to_string(getpid()) == root;
  o.command = command != nullptr && is_root ? command : commandLineOfThisProcess();
  const char* api = std::getenv(schema::kEnvApi);
  o.api = api != nullptr && std::string_view(api) == "all" ? ApiTracing::kAll : ApiTracing::kLean;
  if (api != nullptr && *api != '\0' && std::string_view(api) != "all" &&
      std::string_view(api) != "lean" && !o.quiet) {
    std::fprintf(stderr, "cuoverlap: warning: ignoring %s=%s (expected lean or all)\n",
                 schema::kEnvApi, printableForLog(api).c_str());
  }
  o.host_buffer_bytes = numberFromEnvironment(schema::kEnvHostBufferKb, 4096, 64, 1u << 20, o.quiet) << 10;
  o.device_buffer_bytes =
      numberFromEnvironment(schema::kEnvDeviceBufferKb, 8192, 256, 1u << 20, o.quiet) << 10;
  o.device_buffer_pool = numberFromEnvironment(schema::kEnvDeviceBufferPool, 250, 1, 100000, o.quiet);
  o.per_thread_buffers = numberFromEnvironment(schema::kEnvPerThreadBuffers, 1, 0, 1, o.quiet) == 1;
  o.commit_interval = std::chrono::milliseconds(
      numberFromEnvironment(schema::kEnvCommitMs, 100, 10, 10000, o.quiet));
  o.cupti_flush_period_ms =
      static_cast<std::uint32_t>(numberFromEnvironment(schema::kEnvCuptiFlushMs, 0, 0, 100000, o.quiet));
  o.op_buffers = numberFromEnvironment(schema::kEnvOpBuffers, 1, 0, 1, o.quiet) == 1;
  o.memory_usage = numberFromEnvironment(schema::kEnvMemoryUsage, 1, 0, 1, o.quiet) == 1;
  o.gpu_metrics_interval_ns =
      numberFromEnvironment(schema::kEnvGpuMetricsUs, 0, 0, 1000000, o.quiet) * 1000;
  o.summary_at_exit = numberFromEnvironment(schema::kEnvSummary, 0, 0, 1, o.quiet) == 1;
  o.summary_timeout = std::chrono::seconds(
      numberFromEnvironment(schema::kEnvSummaryTimeout, 600, 1, 86400, o.quiet));
  const char* summarizer = std::getenv(schema::kEnvBin);
  if (summarizer != nullptr) o.summarizer = summarizer;
  std::string capture_error;
  o.capture = schema::captureSpecFrom([](const char* name) { return std::getenv(name); }, capture_error);
  if (!capture_error.empty()) {
    // `record` rejects these before the run; set by hand, the run is recorded whole.
    std::fprintf(stderr, "cuoverlap: warning: %s; recording the whole run\n", printableForLog(capture_error).c_str());
  }
  return o;
}

}  // namespace cuoverlap::collector
