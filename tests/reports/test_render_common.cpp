#include <catch2/catch.hpp>

#include "render_common.h"
#include "sample_report.h"

using namespace cuoverlap;

TEST_CASE("short kernel names drop template arguments and parameters", "[render]") {
  CHECK(render::shortName("void ns::k<float, 4>(float*, int)") == "void ns::k<…>(…)");
  CHECK(render::shortName("a<b<c>, d<e>>::f(g<h>)") == "a<…>::f(…)");
  CHECK(render::shortName("scale_kernel") == "scale_kernel");
  CHECK(render::shortName("bool operator<(A, B)") == "bool operator<(A, B)");  // unbalanced: kept
}

TEST_CASE("ops, calls and evidence times are described for tables", "[render]") {
  const auto trace = test::makeSampleTrace();
  CHECK(render::describeOp(trace.get(), 1) == "memcpy HtoD 4.0 MiB pinned (stream 14)");
  CHECK(render::describeOp(trace.get(), 2) == "memset 1.0 KiB (stream 7 (legacy default))");
  CHECK(render::describeOp(trace.get(), 7).empty());
  CHECK(render::describeOp(nullptr, 0).empty());
  CHECK(render::describeCall(trace.get(), 0) == "cudaLaunchKernel (correlation 101)");
  const TraceReport report = test::makeSampleTraceReport(*trace);
  CHECK(render::evidenceTime(report, report.findings[0], 140'000) == "+130.0 µs");
  Finding other_device = report.findings[0];
  other_device.device_id = 5;
  CHECK(render::evidenceTime(report, other_device, 140'000) == "140000 ns");
}

TEST_CASE("a device's window spans its range instances when the report is per range", "[render]") {
  const auto trace = test::makeSampleTrace();
  TraceReport report = test::makeSampleTraceReport(*trace);
  CHECK(render::deviceWindow(report, 0).start == 10'000);
  CHECK(render::deviceWindow(report, 0).end == 160'000);
  CHECK(render::deviceWindow(report, 3).end == 0);
  // With --range the summed metrics carry no times; the instances do.
  for (const auto& [start, end] : {std::pair<Ns, Ns>{50'000, 70'000}, {20'000, 30'000}}) {
    RangeInstance instance;
    instance.devices = {test::makeSampleDeviceReport()};
    instance.devices[0].metrics.first_start = start;
    instance.devices[0].metrics.last_end = end;
    report.range_instances.push_back(instance);
  }
  report.devices[0].metrics.first_start = 0;
  report.devices[0].metrics.last_end = 0;
  CHECK(render::deviceWindow(report, 0).start == 20'000);
  CHECK(render::deviceWindow(report, 0).end == 70'000);
  CHECK(render::evidenceTime(report, report.findings[0], 25'000) == "+5.0 µs");
}
