// Phases, steady state and range summaries: on hand-built loops with known answers, on the real
// framework loops recorded on an H200 (tests/data/frameworks, README there), and golden JSON
// reports of both (tests/data/golden/phases_*.json; UPDATE_GOLDEN=1 regenerates them).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "cuoverlap/analysis.h"
#include "cuoverlap/json_report.h"
#include "cuoverlap/reader.h"

namespace fs = std::filesystem;
using namespace cuoverlap;

namespace {

const std::string kFrameworks = std::string(CUOVERLAP_TEST_DATA) + "/frameworks/";

Ns median(std::vector<Ns> v) {
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

// The NVTX step median computed independently: durations of the ranges named "step <n>".
Ns nvtxStepMedian(const Trace& trace) {
  std::vector<Ns> durations;
  for (const NvtxRange& r : trace.nvtx) {
    const std::string name(trace.str(r.text));
    if (name.rfind("step ", 0) == 0 && r.end > r.start) durations.push_back(r.end - r.start);
  }
  REQUIRE(durations.size() == 40);
  return median(durations);
}

double relativeError(Ns a, double b) { return std::abs(static_cast<double>(a) - b) / b; }

// A loop: 2 s of host start-up (one call), then `steps` iterations of three kernels each, the
// first two taking 10x longer (warm-up), each in an NVTX range "step <i>" when `nvtx`.
Trace loop(int steps, bool nvtx) {
  Trace trace;
  trace.path = "loop";
  trace.strings = {"", "cudaLaunchKernel_v7000", "gemm", "relu", "sgd", "step 0", "cudaMalloc"};
  trace.devices.push_back({});
  trace.runtime_calls.push_back({1'000'000, 2'000'000, 0, 1, 1, 6});
  Ns t = 3'000'000'000;
  for (int i = 0; i < steps; ++i) {
    const Ns step = i < 2 ? 1'000'000 : 100'000;
    if (nvtx) {
      trace.strings.push_back("step " + std::to_string(i));
      NvtxRange r;
      r.start = t;
      r.end = t + step;
      r.text = static_cast<StringId>(trace.strings.size() - 1);
      r.pid = 1;
      r.tid = 1;
      r.event_type = static_cast<std::int32_t>(schema::NvtxEventType::kPushPopRange);
      trace.nvtx.push_back(r);
    }
    for (StringId k = 2; k <= 4; ++k) {
      GpuOp op;
      op.start = t + (k - 2) * step / 4;
      op.end = op.start + step / 5;
      op.name = k;
      op.pid = 1;
      op.stream_id = 7;
      trace.ops.push_back(op);
    }
    t += step;
  }
  return trace;
}

}  // namespace

TEST_CASE("steady state from NVTX ranges that repeat, warm-up dropped", "[steady]") {
  const Trace trace = loop(12, true);
  const TraceReport report = analyzeTrace(trace, AnalysisOptions{});
  REQUIRE(report.steady_state);
  const SteadyState& s = *report.steady_state;
  REQUIRE(s.found);
  CHECK(s.source == "nvtx:step N");
  CHECK(s.warmup_dropped == 2);
  CHECK(s.iterations == 10);
  CHECK(s.iteration_ns.median == 100'000);
  CHECK(s.start == 3'000'000'000 + 2'000'000);
  REQUIRE(s.devices.size() == 1);
  CHECK(s.devices[0].metrics.kernels == 30);
  REQUIRE(report.phases);
  CHECK(report.phases->startup_ns == 3'000'000'000 - 1'000'000);
  REQUIRE(!report.phases->notes.empty());
  CHECK(report.phases->notes[0].find("host start-up: no GPU work was submitted") != std::string::npos);
}

TEST_CASE("steady state from the kernel pattern without NVTX", "[steady]") {
  const TraceReport report = analyzeTrace(loop(12, false), AnalysisOptions{});
  REQUIRE(report.steady_state);
  REQUIRE(report.steady_state->found);
  CHECK(report.steady_state->source == "kernel-pattern");
  CHECK(report.steady_state->warmup_dropped == 2);
  CHECK(report.steady_state->iteration_ns.median == 100'000);
}

TEST_CASE("no steady state in a loop too short, and the reason says so", "[steady]") {
  const TraceReport report = analyzeTrace(loop(3, true), AnalysisOptions{});
  REQUIRE(report.steady_state);
  CHECK_FALSE(report.steady_state->found);
  CHECK(report.steady_state->reason.find("repeats") != std::string::npos);
}

// Done-criteria of issue 11 on real loops (H200, PyTorch 2.11 / JAX 0.11.2; tests/data/frameworks).
TEST_CASE("PyTorch eager loop with NVTX: 40 steps, median within 5% of the NVTX step median",
          "[steady][frameworks]") {
  const Trace trace = readTrace(kFrameworks + "torch_eager_nvtx_steps.sqlite");
  const TraceReport report = analyzeTrace(trace, AnalysisOptions{});
  REQUIRE(report.steady_state);
  const SteadyState& s = *report.steady_state;
  REQUIRE(s.found);
  CHECK(s.source == "nvtx:step N");
  CHECK(s.iterations + s.warmup_dropped == 40);
  CHECK(s.warmup_dropped <= 3);
  CHECK(relativeError(s.iteration_ns.median, static_cast<double>(nvtxStepMedian(trace))) < 0.05);
}

// Without NVTX the program's own host-clock median (runs.txt: 1.956 ms torch, 1.142 ms JAX) is the
// reference; the pattern cannot see the step before the first anchor kernel, hence 39..40.
TEST_CASE("PyTorch eager loop without NVTX: the kernel pattern finds the steps", "[steady][frameworks]") {
  const TraceReport report = analyzeTrace(readTrace(kFrameworks + "torch_eager_plain.sqlite"), AnalysisOptions{});
  const SteadyState& s = *report.steady_state;
  REQUIRE(s.found);
  CHECK(s.source == "kernel-pattern");
  CHECK(s.iterations + s.warmup_dropped >= 39);
  CHECK(s.iterations + s.warmup_dropped <= 40);
  CHECK(relativeError(s.iteration_ns.median, 1.956e6) < 0.05);
}

TEST_CASE("JAX jitted loop: the kernel pattern finds the steps, compile step dropped", "[steady][frameworks]") {
  const TraceReport report = analyzeTrace(readTrace(kFrameworks + "jax_jit_steps.sqlite"), AnalysisOptions{});
  const SteadyState& s = *report.steady_state;
  REQUIRE(s.found);
  CHECK(s.source == "kernel-pattern");
  CHECK(s.iterations + s.warmup_dropped >= 39);
  CHECK(s.iterations + s.warmup_dropped <= 40);
  CHECK(relativeError(s.iteration_ns.median, 1.142e6) < 0.05);
}

TEST_CASE("golden JSON of phases and of a range summary", "[golden][steady]") {
  const bool update = std::getenv("UPDATE_GOLDEN") != nullptr && std::string(std::getenv("UPDATE_GOLDEN")) == "1";
  struct Case { const char* golden; std::string trace; const char* range; };
  const Case cases[] = {
      {"phases_torch_eager_nvtx", kFrameworks + "torch_eager_nvtx_steps.sqlite", nullptr},
      {"phases_jax_jit", kFrameworks + "jax_jit_steps.sqlite", nullptr},
      {"range_cudf_groupby", std::string(CUOVERLAP_SHARED_TRACES) + "/nvtxex_cudf-groupby.sqlite", "GROUPBY*"},
  };
  for (const Case& c : cases) {
    Trace trace = readTrace(c.trace);
    trace.path = fs::path(c.trace).filename().string();
    AnalysisOptions options;
    if (c.range) {
      options.scope.range = c.range;
      options.range_detail = 1;
    }
    Report report;
    report.traces.push_back(analyzeTrace(trace, options));
    const std::string actual = renderJsonString(report);
    const fs::path golden = fs::path(CUOVERLAP_TEST_DATA) / "golden" / (std::string(c.golden) + ".json");
    if (update) std::ofstream(golden, std::ios::binary | std::ios::trunc) << actual;
    INFO("golden " << golden.string());
    REQUIRE(fs::exists(golden));
    std::ifstream in(golden, std::ios::binary);
    const std::string expected{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    CHECK(actual == expected);
  }
}
