// Metrics on hand-built traces with known answers, written in our schema and read back through
// the reader (so the whole path file -> model -> metrics is exercised).
#include <catch2/catch.hpp>

#include "cuoverlap/analysis.h"
#include "cuoverlap/error.h"
#include "cuoverlap/metrics.h"
#include "cuoverlap/reader.h"
#include "synthetic_trace.h"

using namespace cuoverlap;
using cuoverlap::testing::SyntheticOp;
using cuoverlap::testing::SyntheticTrace;

namespace {

SyntheticOp kernel(Ns start, Ns end) { return {OpKind::kKernel, start, end}; }
SyntheticOp copy(CopyKind kind, Ns start, Ns end) {
  SyntheticOp op{OpKind::kMemcpy, start, end};
  op.copy_kind = kind;
  return op;
}

DeviceMetrics metricsOf(const std::string& name, std::initializer_list<SyntheticOp> ops,
                        Scope scope = {}) {
  std::string path = cuoverlap::testing::tempTracePath(name);
  {
    SyntheticTrace trace(path);
    for (const SyntheticOp& op : ops) trace.addOp(op);
  }
  Trace trace = readTrace(path);
  AnalysisOptions options;
  options.scope = scope;
  TraceReport report = analyzeTrace(trace, options);
  REQUIRE(report.devices.size() == 1);
  return report.devices[0].metrics;
}

Ns engineBusy(const DeviceMetrics& m, Engine engine) {
  return m.engines.at(static_cast<std::size_t>(engine)).busy_ns;
}

}  // namespace

TEST_CASE("two copies fully under one kernel are fully hidden", "[metrics]") {
  DeviceMetrics m = metricsOf("hidden.sqlite", {kernel(1000, 2000), copy(CopyKind::kHtoD, 1100, 1300),
                                                copy(CopyKind::kDtoH, 1500, 1800)});
  CHECK(m.kernels == 1);
  CHECK(m.memcpys == 2);
  CHECK(m.span_ns == 1000);
  CHECK(m.busy_ns == 1000);
  CHECK(m.idle_ns == 0);
  CHECK(m.sum_ns == 1500);
  CHECK(m.overlap_ratio == Approx(1.0 / 3.0));
  CHECK(m.copy_hidden_fraction == 1.0);
  CHECK(engineBusy(m, Engine::kCompute) == 1000);
  CHECK(engineBusy(m, Engine::kH2D) == 200);
  CHECK(engineBusy(m, Engine::kD2H) == 300);
  CHECK(m.engines.size() == 7);  // compute, h2d, d2h, d2d, other_copy, memset, comm
  CHECK(m.concurrency_ns == std::vector<Ns>{0, 500, 500});
  CHECK(m.ideal_ns == 1000);
  CHECK(m.pipeline_efficiency == 1.0);
}

TEST_CASE("serial ops do not overlap", "[metrics]") {
  DeviceMetrics m = metricsOf("serial.sqlite", {kernel(1000, 2000), copy(CopyKind::kHtoD, 2000, 2500),
                                                kernel(3000, 3500)});
  CHECK(m.span_ns == 2500);
  CHECK(m.busy_ns == 2000);
  CHECK(m.idle_ns == 500);
  CHECK(m.sum_ns == 2000);
  CHECK(m.overlap_ratio == 0.0);
  CHECK(m.copy_hidden_fraction == 0.0);
  CHECK(m.concurrency_ns == std::vector<Ns>{500, 2000});
  CHECK(m.ideal_ns == 1500);
  CHECK(m.pipeline_efficiency == Approx(0.6));
  CHECK(m.engines[0].share == Approx(0.6));
}

TEST_CASE("three-way overlap of h2d, kernel and d2h", "[metrics]") {
  DeviceMetrics m = metricsOf("threeway.sqlite", {copy(CopyKind::kHtoD, 1000, 2000), kernel(1500, 2500),
                                                  copy(CopyKind::kDtoH, 1800, 3000)});
  CHECK(m.span_ns == 2000);
  CHECK(m.busy_ns == 2000);
  CHECK(m.sum_ns == 3200);
  CHECK(m.overlap_ratio == Approx(0.375));
  CHECK(m.copy_hidden_fraction == Approx(0.5));  // copies cover [1000,3000), kernel [1500,2500)
  CHECK(m.concurrency_ns == std::vector<Ns>{0, 1000, 800, 200});
  CHECK(m.ideal_ns == 1200);
  CHECK(m.pipeline_efficiency == Approx(0.6));
}

TEST_CASE("rows with start 0 or end before start are not ops", "[metrics]") {
  DeviceMetrics m = metricsOf("invalid.sqlite", {kernel(0, 500), kernel(1000, 2000), kernel(3000, 2500),
                                                 copy(CopyKind::kDtoD, 1200, 1200)});
  CHECK(m.kernels == 1);
  CHECK(m.memcpys == 1);  // zero-length copies count, but add no time
  CHECK(m.span_ns == 1000);
  CHECK(m.busy_ns == 1000);
  CHECK(m.copy_hidden_fraction == 0.0);
}

TEST_CASE("scope narrows to a process and a window", "[metrics]") {
  SyntheticOp other = kernel(1500, 4000);
  other.pid = 77;
  Scope scope;
  scope.pid = 4242;
  DeviceMetrics m = metricsOf("pid.sqlite", {kernel(1000, 2000), other}, scope);
  CHECK(m.kernels == 1);
  CHECK(m.busy_ns == 1000);

  Scope window;
  window.window_start = 1500;
  window.window_end = 1800;
  DeviceMetrics w = metricsOf("window.sqlite", {kernel(1000, 2000), kernel(5000, 6000)}, window);
  CHECK(w.kernels == 1);
  CHECK(w.span_ns == 300);
  CHECK(w.busy_ns == 300);
}

TEST_CASE("an unknown --device is a user error", "[metrics]") {
  std::string path = cuoverlap::testing::tempTracePath("device.sqlite");
  { SyntheticTrace trace(path); trace.addOp(kernel(1000, 2000)); }
  Trace trace = readTrace(path);
  Scope scope;
  scope.device = 3;
  REQUIRE_THROWS_AS(devicesInScope(trace, scope), UserError);
  scope.device = 0;
  REQUIRE(devicesInScope(trace, scope) == std::vector<std::uint16_t>{0});
}
