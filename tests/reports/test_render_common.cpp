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
  TraceReport report = test::makeSampleTraceReport(*trace);
  CHECK(render::relativeTime(report, 140'000) == "+130.0 µs");
  CHECK(render::relativeTime(report, 7'000) == "-3.0 µs");  // a host call before the first op
  // Without a first GPU op there is no origin: the raw timestamp.
  report.first_op_start = 0;
  CHECK(render::relativeTime(report, 140'000) == "140000 ns");
}

TEST_CASE("a per-thread default stream is named so where the trace tells", "[render]") {
  // CUPTI flags it like a created stream (flag 1); our collector's CUOVERLAP_STREAM_ORIGIN tells
  // them apart (Stream::origin). Without it (nsys exports) the stream is only its number.
  auto trace = test::makeSampleTrace();
  CHECK(render::streamLabel(*trace, trace->ops[1].pid, trace->ops[1].context_id, 14) == "stream 14");
  Stream per_thread;
  per_thread.pid = trace->ops[1].pid;
  per_thread.context_id = trace->ops[1].context_id;
  per_thread.stream_id = 14;
  per_thread.flag = StreamFlag::kDefault;
  per_thread.origin = StreamOrigin::kPerThread;
  trace->streams.push_back(per_thread);
  CHECK(render::describeOp(trace.get(), 1) == "memcpy HtoD 4.0 MiB pinned (stream 14 (per-thread default))");
  trace->streams.back().origin = StreamOrigin::kCreated;
  CHECK(render::describeOp(trace.get(), 1) == "memcpy HtoD 4.0 MiB pinned (stream 14)");
}

TEST_CASE("every device and the steady state count times from the trace's one origin", "[render]") {
  // Device 1 starts 478 ms after device 0; its times used to count from its own first op.
  const auto trace = test::makeSampleTrace();
  TraceReport report = test::makeSampleTraceReport(*trace);
  DeviceReport late = test::makeSampleDeviceReport();
  late.metrics.device_id = 1;
  late.metrics.first_start = 478'000'000;
  late.metrics.last_end = 479'000'000;
  report.devices.push_back(late);
  CHECK(render::relativeTime(report, 478'500'000) == "+478.490 ms");
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
  report.first_op_start = 20'000;
  CHECK(render::relativeTime(report, 25'000) == "+5.0 µs");
}

namespace cuoverlap {
namespace {

TEST_CASE("a range finding says what its fix saves per instance", "[render]") {
  Finding f;
  f.id = "blocking-sync-call";
  CHECK(render::instanceSavingNote(f).empty());  // no --range, or one instance
  f.instance_saving = InstanceSaving{100, 95, DurationSpread{1'200'000, 900'000, 1'500'000, 4'800'000}};
  CHECK(render::instanceSavingNote(f) ==
        "per range instance, its fix would save 1.200 ms at the median (900.0 µs to 1.500 ms from "
        "the 10th to the 90th percentile, at most 4.800 ms; fired in 95 of 100)");
}

}  // namespace
}  // namespace cuoverlap
