// Correctness sweep and single runs: every algorithm, both kinds, both types, lengths around
// every tile boundary and not powers of two, each checked against the host reference.
#include <cstdint>
#include <vector>

#include <fmt/format.h>

#include "../common/buffers.h"
#include "../common/event_timer.h"
#include "../common/nvtx_range.h"
#include "scan_commands.h"
#include "scan_reference.h"

namespace cuoverlap {
namespace {

template <typename T>
std::vector<T> scanOnDevice(ScanAlgorithm algorithm, ScanKind kind, const std::vector<T>& input,
                            const ScanWorkspace& workspace, int repetitions, double* median_ms) {
  DeviceBuffer<T> d_in(input.size());
  DeviceBuffer<T> d_out(input.size());
  {
    NvtxRange range("h2d");
    CUOVERLAP_CUDA_CHECK(cudaMemcpy(d_in.get(), input.data(), d_in.bytes(), cudaMemcpyHostToDevice));
  }
  std::vector<double> times;
  for (int rep = 0; rep < repetitions; ++rep) {
    NvtxRange range("compute");
    EventTimer timer;
    timer.start(nullptr);
    runScan<T>(algorithm, kind, d_in.get(), d_out.get(), input.size(), workspace, nullptr);
    timer.stop(nullptr);
    times.push_back(timer.elapsedMs());
  }
  if (median_ms != nullptr) *median_ms = median(times);
  std::vector<T> result(input.size());
  NvtxRange range("d2h");
  CUOVERLAP_CUDA_CHECK(cudaMemcpy(result.data(), d_out.get(), d_out.bytes(), cudaMemcpyDeviceToHost));
  return result;
}

std::size_t firstMismatch(const std::vector<std::int32_t>& in, const std::vector<std::int32_t>& out,
                          ScanKind kind, std::string*) {
  return firstIntMismatch(in, out, kind);
}

std::size_t firstMismatch(const std::vector<float>& in, const std::vector<float>& out, ScanKind kind,
                          std::string* detail) {
  return firstFloatMismatch(in, out, kind, detail);
}

// Returns true when verified; prints one line either way.
template <typename T>
bool checkOne(ScanAlgorithm algorithm, ScanKind kind, const std::vector<T>& input,
              const ScanWorkspace& workspace, const char* type, int repetitions) {
  double ms = 0.0;
  const std::vector<T> result = scanOnDevice(algorithm, kind, input, workspace, repetitions, &ms);
  std::string detail;
  const std::size_t bad = firstMismatch(input, result, kind, &detail);
  const char* kind_name = kind == ScanKind::kInclusive ? "inclusive" : "exclusive";
  if (bad == input.size()) {
    fmt::print("ok    {:16} {:9} {:5} n={:<10} {:.3f} ms\n", scanAlgorithmName(algorithm),
               kind_name, type, input.size(), ms);
    return true;
  }
  fmt::print("FAIL  {:16} {:9} {:5} n={:<10} first mismatch at {} {}\n", scanAlgorithmName(algorithm),
             kind_name, type, input.size(), bad, detail);
  return false;
}

}  // namespace

int runScanCheck(std::size_t max_n) {
  std::vector<std::size_t> lengths = {1, 31, 1000, 1024, 1025, 2047, 2048, 2049, 4095, 4096, 4097,
                                      65537, 1000003, std::size_t(1) << 20, (std::size_t(1) << 22) + 7};
  if (max_n > lengths.back()) lengths.push_back(max_n);
  ScanWorkspace workspace(lengths.back());
  int failures = 0;
  for (std::size_t n : lengths) {
    const auto ints = makeIntInput(n, 1);
    const auto floats = makeFloatInput(n, 2);
    for (ScanAlgorithm algorithm : allScanAlgorithms()) {
      for (ScanKind kind : {ScanKind::kInclusive, ScanKind::kExclusive}) {
        failures += checkOne(algorithm, kind, ints, workspace, "int32", 1) ? 0 : 1;
        failures += checkOne(algorithm, kind, floats, workspace, "float", 1) ? 0 : 1;
      }
    }
  }
  fmt::print("{}\n", failures == 0 ? "all scans verified" : fmt::format("{} scans FAILED", failures));
  return failures == 0 ? 0 : 1;
}

int runScanOnce(const ScanRunOptions& options) {
  const ScanAlgorithm algorithm = parseScanAlgorithm(options.algorithm);
  const ScanKind kind = options.exclusive ? ScanKind::kExclusive : ScanKind::kInclusive;
  ScanWorkspace workspace(options.n);
  const bool ok = options.type == "float"
                      ? checkOne(algorithm, kind, makeFloatInput(options.n, 2), workspace, "float",
                                 options.repetitions)
                      : checkOne(algorithm, kind, makeIntInput(options.n, 1), workspace, "int32",
                                 options.repetitions);
  return ok ? 0 : 1;
}

}  // namespace cuoverlap
