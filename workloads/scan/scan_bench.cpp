// The scan benchmark table: for each length, the host's sequential scan against every GPU
// algorithm (inclusive int32), timed with CUDA events, median over repetitions, each result
// verified before it is timed. GB/s counts one read and one write per element, the minimum any
// scan moves, so it reads as a fraction of the memory bandwidth.
#include <chrono>
#include <cstdint>
#include <map>
#include <numeric>
#include <vector>

#include <fmt/format.h>

#include "../common/buffers.h"
#include "../common/event_timer.h"
#include "scan_commands.h"
#include "scan_internal.h"
#include "scan_reference.h"

namespace cuoverlap {
namespace {

double hostScanMs(const std::vector<std::int32_t>& input, std::size_t n) {
  std::vector<double> times;
  std::vector<std::int32_t> out(n);
  const int repetitions = n >= (std::size_t(1) << 24) ? 3 : 7;
  for (int rep = 0; rep < repetitions; ++rep) {
    const auto start = std::chrono::steady_clock::now();
    std::inclusive_scan(input.begin(), input.begin() + static_cast<std::ptrdiff_t>(n), out.begin());
    const auto stop = std::chrono::steady_clock::now();
    times.push_back(std::chrono::duration<double, std::milli>(stop - start).count());
  }
  return median(times);
}

// Median ms of `scan`, or a negative value when its result differs from `expected`.
template <typename Scan>
double timeVerified(Scan scan, DeviceBuffer<std::int32_t>& d_out, std::size_t n,
                    const std::vector<std::int32_t>& expected, int repetitions) {
  scan();
  std::vector<std::int32_t> result(n);
  CUOVERLAP_CUDA_CHECK(cudaMemcpy(result.data(), d_out.get(), n * sizeof(std::int32_t),
                                  cudaMemcpyDeviceToHost));
  if (!std::equal(result.begin(), result.end(), expected.begin())) return -1.0;
  std::vector<double> times;
  EventTimer timer;
  for (int rep = 0; rep < repetitions; ++rep) {
    timer.start(nullptr);
    scan();
    timer.stop(nullptr);
    times.push_back(timer.elapsedMs());
  }
  return median(times);
}

// Median GPU ms of `algorithm`, or a negative value when the result does not match `expected`'s
// first n.
double timeAlgorithm(ScanAlgorithm algorithm, const DeviceBuffer<std::int32_t>& d_in,
                     DeviceBuffer<std::int32_t>& d_out, std::size_t n,
                     const std::vector<std::int32_t>& expected, const ScanWorkspace& workspace,
                     int repetitions) {
  return timeVerified([&] {
    runScan<std::int32_t>(algorithm, ScanKind::kInclusive, d_in.get(), d_out.get(), n, workspace,
                          nullptr);
  }, d_out, n, expected, repetitions);
}

void printHeader() {
  cudaDeviceProp properties{};
  int device = 0;
  CUOVERLAP_CUDA_CHECK(cudaGetDevice(&device));
  CUOVERLAP_CUDA_CHECK(cudaGetDeviceProperties(&properties, device));
  fmt::print("GPU: {} ({} SMs); inclusive int32 scan; GPU ms = median of CUDA-event times\n\n",
             properties.name, properties.multiProcessorCount);
  fmt::print("| elements | algorithm | CPU ms | GPU ms | speedup | GB/s | vs CUB |\n");
  fmt::print("|---:|---|---:|---:|---:|---:|---:|\n");
}

}  // namespace

// Every look-back tile shape against CUB at 2^24 and 2^28: how the default shape was chosen.
int runScanTune(int repetitions) {
  const std::size_t max_n = std::size_t(1) << 28;
  const std::vector<std::int32_t> input = makeIntInput(max_n, 1);
  std::vector<std::int32_t> expected;
  hostScan(input, expected, ScanKind::kInclusive);
  DeviceBuffer<std::int32_t> d_in(max_n), d_out(max_n);
  CUOVERLAP_CUDA_CHECK(cudaMemcpy(d_in.get(), input.data(), d_in.bytes(), cudaMemcpyHostToDevice));
  ScanWorkspace workspace(max_n);
  int failures = 0;
  fmt::print("| elements | look-back variant | GPU ms | GB/s | vs CUB |\n|---:|---|---:|---:|---:|\n");
  for (std::size_t n : {std::size_t(1) << 24, max_n}) {
    const double cub_ms = timeVerified([&] {
      runScan<std::int32_t>(ScanAlgorithm::kCub, ScanKind::kInclusive, d_in.get(), d_out.get(), n, workspace, nullptr);
    }, d_out, n, expected, repetitions);
    for (std::size_t v = 0; v < lookbackVariantCount(); ++v) {
      const double ms = timeVerified([&] {
        runLookbackScanVariant<std::int32_t>(v, ScanKind::kInclusive, d_in.get(), d_out.get(), n,
                                             workspace.tileStatus(), nullptr, nullptr, nullptr);
      }, d_out, n, expected, repetitions);
      failures += ms < 0.0 ? 1 : 0;
      fmt::print("| {} | {} | {:.4f} | {:.1f} | {:.3f} |\n", n, lookbackVariantName(v), ms,
                 2.0 * n * sizeof(std::int32_t) / (ms * 1e6), cub_ms / ms);
    }
    fmt::print("| {} | cub | {:.4f} | {:.1f} | 1.000 |\n", n, cub_ms,
               2.0 * n * sizeof(std::int32_t) / (cub_ms * 1e6));
  }
  return failures == 0 ? 0 : 1;
}

int runScanBench(const ScanBenchOptions& options) {
  const std::size_t max_n = std::size_t(1) << options.max_log2;
  const std::vector<std::int32_t> input = makeIntInput(max_n, 1);
  // The inclusive scan of a prefix is the prefix of the inclusive scan: one reference serves all.
  std::vector<std::int32_t> expected;
  hostScan(input, expected, ScanKind::kInclusive);
  DeviceBuffer<std::int32_t> d_in(max_n);
  DeviceBuffer<std::int32_t> d_out(max_n);
  CUOVERLAP_CUDA_CHECK(cudaMemcpy(d_in.get(), input.data(), d_in.bytes(), cudaMemcpyHostToDevice));
  ScanWorkspace workspace(max_n);
  printHeader();
  int failures = 0;
  for (int log2n = options.min_log2; log2n <= options.max_log2; log2n += options.step) {
    const std::size_t n = std::size_t(1) << log2n;
    const double cpu_ms = hostScanMs(input, n);
    std::map<ScanAlgorithm, double> gpu_ms;
    for (ScanAlgorithm algorithm : allScanAlgorithms()) {
      gpu_ms[algorithm] = timeAlgorithm(algorithm, d_in, d_out, n, expected, workspace,
                                        options.repetitions);
    }
    for (ScanAlgorithm algorithm : allScanAlgorithms()) {
      const double ms = gpu_ms[algorithm];
      if (ms < 0.0) {
        fmt::print("| 2^{} | {} | FAILED verification | | | | |\n", log2n, scanAlgorithmName(algorithm));
        ++failures;
        continue;
      }
      const double gb_per_s = 2.0 * n * sizeof(std::int32_t) / (ms * 1e6);
      fmt::print("| 2^{} | {} | {:.3f} | {:.4f} | {:.1f}x | {:.1f} | {:.2f} |\n", log2n,
                 scanAlgorithmName(algorithm), cpu_ms, ms, cpu_ms / ms, gb_per_s,
                 gpu_ms[ScanAlgorithm::kCub] / ms);
    }
  }
  return failures == 0 ? 0 : 1;
}

}  // namespace cuoverlap
