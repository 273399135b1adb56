// Phases, steady state and range summaries: on hand-built loops with known answers, on the real
// framework loops recorded on an H200 (tests/data/frameworks, README there), and golden JSON
// reports of both (tests/data/golden/phases_*.json; UPDATE_GOLDEN=1 regenerates them).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
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

namespace {

// Two loops one after the other, "A B" `steps` times then "A C" `steps` times, 50 us a kernel
// apart (the second loop's kernels shorter): anchored at A, both segments occur `steps` times.
Trace twoLoops(int steps) {
  Trace trace;
  trace.path = "tie";
  trace.strings = {"", "A", "B", "C"};
  trace.devices.push_back({});
  Ns t = 1'000'000'000;
  for (int i = 0; i < 2 * steps; ++i) {
    for (StringId k : {StringId{1}, StringId{static_cast<StringId>(i < steps ? 2 : 3)}}) {
      GpuOp op;
      op.start = t;
      op.end = t + (i < steps ? 40'000 : 10'000);
      op.name = k;
      op.pid = 1;
      op.stream_id = 7;
      trace.ops.push_back(op);
      t += 50'000;
    }
  }
  return trace;
}

}  // namespace

// Of equally common segments the one that occurs first wins (the choice is the trace's, not a
// hash table's order): four steps a loop, and 5000, where the segments' hashes are sorted by
// radix rather than compared.
TEST_CASE("kernel pattern: of equally common segments, the first one's iterations", "[steady]") {
  for (int steps : {4, 5000}) {
    const TraceReport report = analyzeTrace(twoLoops(steps), AnalysisOptions{});
    REQUIRE(report.steady_state);
    const SteadyState& s = *report.steady_state;
    REQUIRE(s.found);
    CHECK(s.source == "kernel-pattern");
    CHECK(s.iterations == static_cast<std::size_t>(steps));
    CHECK(s.start == 1'000'000'000);
    // the last "A B"'s B ends
    CHECK(s.end == 1'000'000'000 + (2 * steps - 1) * Ns{50'000} + 40'000);
  }
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
  const Trace trace = readTrace(kFrameworks + "torch_eager_nvtx_steps.sqlite.gz");
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
  const TraceReport report = analyzeTrace(readTrace(kFrameworks + "torch_eager_plain.sqlite.gz"), AnalysisOptions{});
  const SteadyState& s = *report.steady_state;
  REQUIRE(s.found);
  CHECK(s.source == "kernel-pattern");
  CHECK(s.iterations + s.warmup_dropped >= 39);
  CHECK(s.iterations + s.warmup_dropped <= 40);
  CHECK(relativeError(s.iteration_ns.median, 1.956e6) < 0.05);
}

// XLA replays each jitted step as a CUDA graph: the graph launches are the steps.
TEST_CASE("JAX jitted loop: the graph launches are the steps, compile step dropped", "[steady][frameworks]") {
  const TraceReport report = analyzeTrace(readTrace(kFrameworks + "jax_jit_steps.sqlite.gz"), AnalysisOptions{});
  const SteadyState& s = *report.steady_state;
  REQUIRE(s.found);
  CHECK(s.source == "graph-launch");
  CHECK(s.iterations + s.warmup_dropped >= 39);
  CHECK(s.iterations + s.warmup_dropped <= 40);
  CHECK(relativeError(s.iteration_ns.median, 1.142e6) < 0.05);
}

TEST_CASE("golden JSON of phases and of a range summary", "[golden][steady]") {
  const bool update = std::getenv("UPDATE_GOLDEN") != nullptr && std::string(std::getenv("UPDATE_GOLDEN")) == "1";
  struct Case { const char* golden; std::string trace; const char* range; };
  const Case cases[] = {
      {"phases_torch_eager_nvtx", kFrameworks + "torch_eager_nvtx_steps.sqlite.gz", nullptr},
      {"phases_jax_jit", kFrameworks + "jax_jit_steps.sqlite.gz", nullptr},
      {"range_cudf_groupby", std::string(CUOVERLAP_SHARED_TRACES) + "/nvtxex_cudf-groupby.sqlite.gz", "GROUPBY*"},
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

namespace {

NvtxRange pushPop(Trace& trace, const std::string& name, Ns start, Ns end, std::int32_t depth = 0) {
  trace.strings.push_back(name);
  NvtxRange r;
  r.start = start;
  r.end = end;
  r.text = static_cast<StringId>(trace.strings.size() - 1);
  r.pid = 1;
  r.tid = 1;
  r.depth = depth;
  r.event_type = static_cast<std::int32_t>(schema::NvtxEventType::kPushPopRange);
  return r;
}

GpuOp kernel(Ns start, Ns end, StringId name, std::uint32_t stream, std::uint32_t correlation = 0) {
  GpuOp op;
  op.start = start;
  op.end = end;
  op.name = name;
  op.pid = 1;
  op.stream_id = stream;
  op.correlation_id = correlation;
  return op;
}

void sortByStart(Trace& trace) {
  std::stable_sort(trace.ops.begin(), trace.ops.end(), [](const GpuOp& a, const GpuOp& b) { return a.start < b.start; });
  std::stable_sort(trace.nvtx.begin(), trace.nvtx.end(), [](const NvtxRange& a, const NvtxRange& b) { return a.start < b.start; });
  std::stable_sort(trace.runtime_calls.begin(), trace.runtime_calls.end(),
                   [](const RuntimeCall& a, const RuntimeCall& b) { return a.start < b.start; });
}

}  // namespace

// Issue 21: PyTorch's aten::* ranges (and NCCL's) wrap every op; they must not be the loop.
TEST_CASE("library NVTX ranges never make the iterations", "[steady]") {
  Trace trace = loop(12, false);
  const std::size_t ops = trace.ops.size();
  for (std::size_t i = 0; i < ops; ++i) {
    trace.nvtx.push_back(pushPop(trace, i % 3 == 0 ? "aten::copy_" : "ncclAllReduce", trace.ops[i].start,
                                 trace.ops[i].end));
  }
  sortByStart(trace);
  const TraceReport report = analyzeTrace(trace, AnalysisOptions{});
  REQUIRE(report.steady_state->found);
  CHECK(report.steady_state->source == "kernel-pattern");
  CHECK(report.steady_state->iteration_ns.median == 100'000);
}

// Issue 22: `analyze --iterations NAME` takes that range's instances as the iterations, library
// ranges included; a name that no range has is an error that names the ranges there are.
TEST_CASE("--iterations NAME chooses the NVTX range of the iterations", "[steady]") {
  Trace trace = loop(12, true);
  const std::size_t ops = trace.ops.size();
  for (std::size_t i = 0; i < ops; i += 3) {
    trace.nvtx.push_back(pushPop(trace, "aten::linear", trace.ops[i].start, trace.ops[i].end, 1));
  }
  sortByStart(trace);
  AnalysisOptions options;
  CHECK(analyzeTrace(trace, options).steady_state->source == "nvtx:step N");
  options.iterations = "aten::linear";
  const TraceReport linear = analyzeTrace(trace, options);
  REQUIRE(linear.steady_state->found);
  CHECK(linear.steady_state->source == "nvtx:aten::linear");
  CHECK(linear.steady_state->iterations == 10);
  CHECK(linear.steady_state->iteration_ns.median == 100'000);
  for (const char* name : {"step *", "step N", "step 3"}) {
    options.iterations = name;
    CHECK(analyzeTrace(trace, options).steady_state->source == "nvtx:step N");
  }
  options.iterations = "stpe";
  CHECK_THROWS_WITH(analyzeTrace(trace, options),
                    Catch::Contains("--iterations stpe: no NVTX range is named so; known ranges: 'step *' (12)"));
  Trace short_loop = loop(3, true);
  options.iterations = "step N";
  const TraceReport none = analyzeTrace(short_loop, options);
  CHECK_FALSE(none.steady_state->found);
  CHECK(none.steady_state->reason.find("--iterations step N") != std::string::npos);
}

// A DataLoader loop: the `step` range covers only the compute (the first half of each 1 ms
// step); the loop's period is the whole step, and the host range length is shown as such.
TEST_CASE("iteration time is the period from one step's GPU start to the next's", "[steady]") {
  Trace trace;
  trace.path = "loader";
  trace.strings = {"", "cudaLaunchKernel_v7000", "gemm"};
  trace.devices.push_back({});
  for (int i = 0; i < 10; ++i) {
    const Ns t = 1'000'000'000 + i * 1'000'000;
    trace.nvtx.push_back(pushPop(trace, "step " + std::to_string(i), t, t + 400'000));
    const std::uint32_t correlation = static_cast<std::uint32_t>(i + 1);
    trace.runtime_calls.push_back({t + 10'000, t + 15'000, correlation, 1, 1, 1});
    trace.ops.push_back(kernel(t + 50'000, t + 450'000, 2, 7, correlation));  // the host ran ahead by 50 us
  }
  sortByStart(trace);
  const TraceReport report = analyzeTrace(trace, AnalysisOptions{});
  const SteadyState& s = *report.steady_state;
  REQUIRE(s.found);
  CHECK(s.source == "nvtx:step N");
  CHECK(s.iteration_ns.median == 1'000'000);
  REQUIRE(s.host_range_ns);
  CHECK(s.host_range_ns->median == 400'000);
  CHECK(s.start == 1'000'000'000 + 50'000);  // the first step's GPU work, not its host range
  CHECK(static_cast<double>(s.iterations) * static_cast<double>(s.iteration_ns.median) ==
        Approx(static_cast<double>(s.end - s.start)).epsilon(0.1));
}

// 50 cudaGraphLaunch calls of a 20-kernel graph (one kernel name): 50 iterations, not 1,000.
TEST_CASE("graph launches are the iterations of a graph replay loop", "[steady]") {
  Trace trace;
  trace.path = "graphs";
  trace.strings = {"", "cudaGraphLaunch_v10000", "layer"};
  trace.devices.push_back({});
  for (int i = 0; i < 50; ++i) {
    const Ns t = 1'000'000'000 + i * 200'000;
    const std::uint32_t correlation = static_cast<std::uint32_t>(i + 1);
    trace.runtime_calls.push_back({t, t + 5'000, correlation, 1, 1, 1});
    for (int k = 0; k < 20; ++k) trace.ops.push_back(kernel(t + 10'000 + k * 6'000, t + 15'000 + k * 6'000, 2, 7, correlation));
  }
  sortByStart(trace);
  const TraceReport report = analyzeTrace(trace, AnalysisOptions{});
  const SteadyState& s = *report.steady_state;
  REQUIRE(s.found);
  CHECK(s.source == "graph-launch");
  CHECK(s.iterations + s.warmup_dropped == 50);
  CHECK(s.iteration_ns.median == 200'000);
  REQUIRE(s.host_range_ns);
  CHECK(s.host_range_ns->median == 5'000);
}

// 12 kernels of one name over 4 streams, started 1.3 us apart and running 190 us each: their
// names repeat, but nothing here is a loop (the ops of an "iteration" run 146 periods past it).
TEST_CASE("a chain of concurrent kernels is no steady state", "[steady]") {
  Trace trace;
  trace.path = "chain";
  trace.strings = {"", "cudaLaunchKernel_v7000", "k"};
  trace.devices.push_back({});
  for (int i = 0; i < 12; ++i) {
    const Ns t = 1'000'000'000 + i * 1'300;
    trace.ops.push_back(kernel(t, t + 190'000, 2, static_cast<std::uint32_t>(10 + i % 4)));
  }
  const TraceReport report = analyzeTrace(trace, AnalysisOptions{});
  REQUIRE(report.steady_state);
  CHECK_FALSE(report.steady_state->found);
  INFO(report.steady_state->reason);
  CHECK(report.steady_state->reason.find("kernel-pattern gives 12 iterations") != std::string::npos);
}

// The public 4-stream vectorAdd export: 4 kernels among 12 copies are no loop (issue 21).
TEST_CASE("vectorAdd on 4 streams has no steady state", "[steady]") {
  const TraceReport report = analyzeTrace(readTrace(std::string(CUOVERLAP_TEST_DATA) + "/nsys/gpu4_report.sqlite.gz"),
                                          AnalysisOptions{});
  REQUIRE(report.steady_state);
  CHECK_FALSE(report.steady_state->found);
  CHECK(report.steady_state->reason.find("of the GPU work") != std::string::npos);
}

// The 2-rank DDP job recorded by `cuoverlap record -- torchrun` (2 x H200): NCCL's ranges
// (ncclAllReduce, 146 of them, a non-default domain) outnumber the 10 `step` ranges per rank.
TEST_CASE("DDP job: the user's step ranges, not NCCL's, are the iterations", "[steady][ddp]") {
  const Trace trace = readTrace(std::string(CUOVERLAP_TEST_DATA) + "/ddp/torchrun_record_ddp_ch4.sqlite.gz");
  const TraceReport report = analyzeTrace(trace, AnalysisOptions{});
  const SteadyState& s = *report.steady_state;
  REQUIRE(s.found);
  CHECK(s.source == "nvtx:step N");
  CHECK(s.iterations + s.warmup_dropped == 10);
  // iterations x period is the steady state's span
  CHECK(static_cast<double>(s.iterations) * static_cast<double>(s.iteration_ns.median) ==
        Approx(static_cast<double>(s.end - s.start)).epsilon(0.1));
}

// Issue 21: on the DDP job the host runs ahead of the GPU by up to hundreds of ms, so each `step`
// range projected onto the GPU overlapped the next ones (15.0 s of range time in a 9.1 s trace).
// Each instance's window now ends where the next one's begins: per rank, the instances' total
// stays within the trace, and no op is counted twice.
TEST_CASE("--range instances on a run-ahead loop never exceed the trace", "[steady][range]") {
  const Trace trace = readTrace(std::string(CUOVERLAP_TEST_DATA) + "/ddp/torchrun_record_ddp_ch4.sqlite.gz");
  std::vector<std::uint32_t> pids;
  for (const NvtxRange& r : trace.nvtx) {
    if (std::find(pids.begin(), pids.end(), r.pid) == pids.end()) pids.push_back(r.pid);
  }
  REQUIRE(pids.size() == 2);
  for (std::uint32_t pid : pids) {
    AnalysisOptions options;
    options.scope.range = "step*";
    options.scope.pid = pid;
    const TraceReport report = analyzeTrace(trace, options);
    REQUIRE(report.range_summary);
    CHECK(report.range_summary->count == 10);
    Ns first = std::numeric_limits<Ns>::max(), last = 0;
    std::uint64_t kernels = 0;
    for (const GpuOp& op : trace.ops) {
      if (op.pid != pid) continue;
      first = std::min(first, op.start);
      last = std::max(last, op.end);
      kernels += op.kind == OpKind::kKernel ? 1 : 0;
    }
    CHECK(report.range_summary->total_ns <= last - first);
    std::uint64_t counted = 0;
    for (const DeviceReport& d : report.devices) counted += d.metrics.kernels;
    CHECK(counted <= kernels);
  }
}
