#include "baseline.h"

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <sstream>

#include <fmt/format.h>
#include <unistd.h>

namespace cuoverlap {

std::string resultLine(const ScenarioResult& result) {
  return fmt::format("result wall_ms={:.6f} h2d_ms={:.6f} compute_ms={:.6f} d2h_ms={:.6f} verified={}",
                     result.wall_ms, result.h2d_ms, result.compute_ms, result.d2h_ms,
                     result.verified ? 1 : 0);
}

std::optional<ScenarioResult> parseResultLine(const std::string& line) {
  ScenarioResult result;
  int verified = 0;
  if (std::sscanf(line.c_str(), "result wall_ms=%lf h2d_ms=%lf compute_ms=%lf d2h_ms=%lf verified=%d",
                  &result.wall_ms, &result.h2d_ms, &result.compute_ms, &result.d2h_ms, &verified) != 5) {
    return std::nullopt;
  }
  result.verified = verified == 1;
  return result;
}

std::optional<ScenarioResult> measureBaseline(const std::string& scenario, const ScenarioOptions& options,
                                              bool serialize) {
  char exe[4096] = {};
  const ssize_t length = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (length <= 0) return std::nullopt;
  const std::string command = fmt::format(
      "env -u CUDA_INJECTION64_PATH -u NVTX_INJECTION64_PATH '{}' {} --tiles {} --tile-mb {} --work {} "
      "--iterations {} --probe-work {} --kernels {} --host-us {} --order {} --chunks {} --chunk-kb {} "
      "--batches {} --batch-mb {} --batch-kernels {} --batch-host-us {} --repeat {} {} --no-baseline "
      "--result-line 2>&1", exe, scenario, options.tiles, options.tile_mb, options.work,
      options.iterations, options.probe_work, options.kernels, options.host_us, options.order,
      options.chunks, options.chunk_kb, options.batches, options.batch_mb, options.batch_kernels,
      options.batch_host_us, options.repeat, serialize ? "--serialize" : "");
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
  if (!pipe) return std::nullopt;
  std::optional<ScenarioResult> result;
  char buffer[1024];
  while (std::fgets(buffer, sizeof(buffer), pipe.get()) != nullptr) {
    if (auto parsed = parseResultLine(buffer)) result = parsed;
  }
  return result;
}

}  // namespace cuoverlap
