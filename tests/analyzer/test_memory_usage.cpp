// Device memory allocated over time (cuoverlap/memory_usage.h), from a trace's allocations and frees
// (CUDA_GPU_MEMORY_USAGE_EVENTS), end to end on a trace file: the steps, the HTML timeline's counter
// lane and the Perfetto export's counter track.
#include <catch2/catch.hpp>

#include <sstream>

#include "cuoverlap/analysis.h"
#include "cuoverlap/html_report.h"
#include "cuoverlap/memory_usage.h"
#include "cuoverlap/perfetto_export.h"
#include "cuoverlap/reader.h"
#include "synthetic_trace.h"

using namespace cuoverlap;
using cuoverlap::testing::SyntheticOp;
using cuoverlap::testing::SyntheticTrace;

namespace {

constexpr Ns kUs = 1'000;

// Two kernels (100-200 and 400-500 µs) on device 0. Device memory: 3 MiB allocated at 50 µs, 1 MiB
// more at 300 µs (two allocations at that time), 3 MiB freed at 600 µs; a pinned host allocation
// (not device memory) at 350 µs and a free of memory whose allocation was not recorded at 700 µs.
std::string memoryTrace() {
  std::string path = cuoverlap::testing::tempTracePath("memory_usage.sqlite");
  SyntheticTrace trace(path);
  trace.exec(schema::kCreateCollectorTables);
  trace.addDevice(0, "NVIDIA H200");
  SyntheticOp first{OpKind::kKernel, 100 * kUs, 200 * kUs};
  trace.addOp(first);
  SyntheticOp second{OpKind::kKernel, 400 * kUs, 500 * kUs};
  trace.addOp(second);
  // start, globalPid, deviceId, contextId, address, pc, bytes, memKind, memoryOperationType
  trace.exec("INSERT INTO CUDA_GPU_MEMORY_USAGE_EVENTS (start, globalPid, deviceId, contextId, address, pc, bytes, "
             "memKind, memoryOperationType) VALUES "
             "(50000, 71303168, 0, 1, 4194304, 0, 3145728, 2, 0), (300000, 71303168, 0, 1, 8388608, 0, 524288, 2, 0), "
             "(300000, 71303168, 0, 1, 8912896, 0, 524288, 2, 0), (350000, 71303168, 0, 1, 65536, 0, 4096, 1, 0), "
             "(600000, 71303168, 0, 1, 4194304, 0, 3145728, 2, 1), (700000, 71303168, 0, 1, 16777216, 0, 8388608, 2, 1)");
  return path;
}

}  // namespace

TEST_CASE("memory usage: device memory allocated, step by step, drawn by the timelines") {
  const Trace trace = readTrace(memoryTrace());
  REQUIRE(trace.memory_events.size() == 6);
  const std::vector<MemoryInUse> steps = deviceMemoryInUse(trace, 0);
  REQUIRE(steps.size() == 4);
  CHECK(steps[0].time == 50 * kUs);
  CHECK(steps[0].bytes == 3u << 20);
  CHECK(steps[1].time == 300 * kUs);  // both allocations of that time in one step
  CHECK(steps[1].bytes == 4u << 20);
  CHECK(steps[2].bytes == 1u << 20);  // the pinned allocation is not device memory
  CHECK(steps[3].bytes == 0);         // a free of more than is known leaves none
  CHECK(deviceMemoryInUse(trace, 1).empty());

  Report report;
  report.traces.push_back(analyzeTrace(trace, {}));
  const std::string html = renderHtml(report);
  CHECK(html.find("device memory allocated") != std::string::npos);
  CHECK(html.find("data-u=\"MiB\"") != std::string::npos);
  std::ostringstream perfetto;
  const PerfettoExportStats stats = writePerfettoTrace(trace, perfetto);
  CHECK(stats.memory_usage == 4);
  CHECK(perfetto.str().find("\"name\":\"device memory allocated [MiB]\"") != std::string::npos);
  CHECK(perfetto.str().find("\"args\":{\"value\":4}") != std::string::npos);
}

TEST_CASE("memory usage: a trace without allocations draws no lane") {
  std::string path = cuoverlap::testing::tempTracePath("memory_usage_none.sqlite");
  {
    SyntheticTrace trace(path);
    trace.addDevice(0, "NVIDIA H200");
    SyntheticOp op{OpKind::kKernel, 100 * kUs, 200 * kUs};
    trace.addOp(op);
  }
  const Trace trace = readTrace(path);
  Report report;
  report.traces.push_back(analyzeTrace(trace, {}));
  CHECK(renderHtml(report).find("device memory allocated") == std::string::npos);
  std::ostringstream perfetto;
  CHECK(writePerfettoTrace(trace, perfetto).memory_usage == 0);
}
