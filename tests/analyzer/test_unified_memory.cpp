// Unified memory end to end on a trace file in our schema: read, summarized per device, reported
// by every renderer, and the kernel that faulted its data in named by managed-page-faults.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>
#include <sstream>

#include "cuoverlap/analysis.h"
#include "cuoverlap/html_report.h"
#include "cuoverlap/json_report.h"
#include "cuoverlap/markdown_report.h"
#include "cuoverlap/perfetto_export.h"
#include "cuoverlap/reader.h"
#include "cuoverlap/text_report.h"
#include "synthetic_trace.h"

using namespace cuoverlap;
using cuoverlap::testing::SyntheticOp;
using cuoverlap::testing::SyntheticTrace;

namespace {

constexpr Ns kMs = 1'000'000;

// One managed buffer of 64 MiB faulted in by the first of three runs of the same kernel: the first
// run takes 10 ms under 32 fault groups (16 faults each) and 32 HtoD migrations of 2 MiB; the
// others find the data resident and take 0.5 ms. The host later reads 64 KiB back (one DtoH
// migration, one CPU fault).
std::string faultingTrace() {
  std::string path = cuoverlap::testing::tempTracePath("unified_memory.sqlite");
  SyntheticTrace trace(path);
  trace.exec(schema::kCreateCollectorTables);
  trace.addDevice(0, "NVIDIA H100 80GB HBM3");
  const Ns starts[] = {1 * kMs, 11 * kMs, 11 * kMs + kMs / 2};
  const Ns ends[] = {11 * kMs, 11 * kMs + kMs / 2, 12 * kMs};
  for (int i = 0; i < 3; ++i) {
    SyntheticOp kernel{OpKind::kKernel, starts[i], ends[i]};
    kernel.correlation = 10 + i;
    kernel.name = "scale_managed";
    trace.addOp(kernel);
    // Launched back to back before the first run: only the device sets the pace.
    trace.addRuntimeCall(kMs / 2 + i * 10'000, kMs / 2 + i * 10'000 + 5'000, 10 + i,
                         "cudaLaunchKernel_v7000");
  }
  const std::string pid = std::to_string(schema::encodeGlobalPid(4242));
  for (int i = 0; i < 32; ++i) {
    const Ns t = 1 * kMs + 10'000 + i * 300'000;
    trace.exec("INSERT INTO CUDA_UM_GPU_PAGE_FAULT_EVENTS VALUES (" + std::to_string(t) + ", " +
               std::to_string(t + 280'000) + ", " + pid + ", 0, " + std::to_string(0x200000 * (i + 1)) +
               ", 16, 1)");
    trace.exec("INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY (start, end, deviceId, contextId, streamId, "
               "globalPid, bytes, copyKind, srcKind, dstKind, migrationCause, virtualAddress) VALUES (" +
               std::to_string(t + 20'000) + ", " + std::to_string(t + 60'000) + ", 0, 0, 0, " + pid +
               ", 2097152, 11, 4, 4, 2, " + std::to_string(0x200000 * (i + 1)) + ")");
  }
  trace.exec("INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY (start, end, deviceId, contextId, streamId, "
             "globalPid, bytes, copyKind, srcKind, dstKind, migrationCause) VALUES (" +
             std::to_string(13 * kMs) + ", " + std::to_string(13 * kMs + 5'000) + ", 0, 0, 0, " + pid +
             ", 65536, 12, 4, 4, 2)");
  trace.exec("INSERT INTO CUDA_UM_CPU_PAGE_FAULT_EVENTS VALUES (" + std::to_string(13 * kMs) + ", " +
             pid + ", 2097152, 4198400, 1, 1, NULL, NULL, NULL)");
  return path;
}

}  // namespace

TEST_CASE("unified memory: summary, renderers and managed-page-faults on a faulting trace") {
  const Trace trace = readTrace(faultingTrace());
  CHECK(trace.ops.size() == 3);  // the kernels: migrations are not copies
  Report report;
  report.traces.push_back(analyzeTrace(trace, {}));
  const TraceReport& analyzed = report.traces[0];
  REQUIRE(analyzed.unified_memory);
  REQUIRE(analyzed.unified_memory->devices.size() == 1);
  const UnifiedMemoryDevice& d = analyzed.unified_memory->devices[0];
  CHECK(d.fault_groups == 32);
  CHECK(d.page_faults == 512);
  CHECK(d.fault_ns == 32 * 280'000);
  CHECK(d.migrations == 33);
  CHECK(d.htod_bytes == 64ull << 20);
  CHECK(d.dtoh_bytes == 65536);
  CHECK(d.migration_ns == 32 * 40'000 + 5'000);
  CHECK(analyzed.unified_memory->cpu_page_faults == 1);

  const auto json = nlohmann::json::parse(renderJsonString(report));
  const auto& um = json["traces"][0]["unified_memory"];
  CHECK(um["devices"][0]["gpu_page_faults"] == 512);
  CHECK(um["devices"][0]["htod_bytes"] == (64ull << 20));
  CHECK(um["cpu_page_faults"] == 1);
  const Finding* finding = nullptr;
  for (const Finding& f : analyzed.findings) {
    if (f.id == "managed-page-faults") finding = &f;
  }
  REQUIRE(finding != nullptr);
  // No PCIe link or pinned copy in this trace: the prefetch's copy time is unknown. The first run
  // is the window's first op, so its prefetch (and the driver's 220 µs remap its fault groups
  // show) comes before the span: it is costed at its fault-free runs' 0.5 ms, 9.5 ms saved.
  CHECK(finding->time_ns == 9'500'000);
  CHECK(finding->summary.find("prefetch time unknown") != std::string::npos);
  CHECK(finding->evidence.at(0).detail.find("kernel scale_managed") != std::string::npos);

  const std::string text = renderTextString(report);
  CHECK(text.find("unified memory, device 0: 512 GPU page faults in 32 groups") != std::string::npos);
  CHECK(renderMarkdown(report).find("- unified memory, device 0: 512 GPU page faults") != std::string::npos);
  CHECK(renderHtml(report).find("unified memory: GPU page faults") != std::string::npos);
  std::ostringstream perfetto;
  const PerfettoExportStats stats = writePerfettoTrace(trace, perfetto);
  CHECK(stats.unified_memory == 32 + 33);
  CHECK(perfetto.str().find("\"cat\":\"um_fault\"") != std::string::npos);
  CHECK(perfetto.str().find("migration HtoD 2.0 MiB") != std::string::npos);
}

TEST_CASE("unified memory: traces without it report nothing new") {
  std::string path = cuoverlap::testing::tempTracePath("no_unified_memory.sqlite");
  {
    SyntheticTrace trace(path);
    trace.addOp({OpKind::kKernel, 1000, 3000});
  }
  Report report;
  const Trace trace = readTrace(path);
  report.traces.push_back(analyzeTrace(trace, {}));
  CHECK_FALSE(report.traces[0].unified_memory);
  CHECK(nlohmann::json::parse(renderJsonString(report))["traces"][0].count("unified_memory") == 0);
  CHECK(renderTextString(report).find("unified memory") == std::string::npos);
}

// From kParallelRows ops on, unified-memory activity is read on a connection and thread of its own
// beside the synchronization and NVTX records: the same records, and its errors still reach the
// caller.
TEST_CASE("unified memory: a large trace reads it on a thread of its own, errors included") {
  const auto large = [](const std::string& name, std::int64_t migration_device) {
    std::string path = cuoverlap::testing::tempTracePath(name);
    SyntheticTrace trace(path);
    trace.exec(schema::kCreateCollectorTables);
    trace.addDevice(0, "NVIDIA H100 80GB HBM3");
    for (int i = 0; i < 20'000; ++i) {
      SyntheticOp kernel{OpKind::kKernel, 1 * kMs + i * 10'000, 1 * kMs + i * 10'000 + 8'000};
      kernel.name = "step";
      trace.addOp(kernel);
    }
    const std::string pid = std::to_string(schema::encodeGlobalPid(4242));
    for (int i = 0; i < 3; ++i) {
      const Ns t = 1 * kMs + i * 300'000;
      trace.exec("INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY (start, end, deviceId, contextId, streamId, "
                 "globalPid, bytes, copyKind, srcKind, dstKind, migrationCause, virtualAddress) VALUES (" +
                 std::to_string(t) + ", " + std::to_string(t + 40'000) + ", " +
                 std::to_string(migration_device) + ", 0, 0, " + pid + ", 2097152, 11, 4, 4, 2, " +
                 std::to_string(0x200000 * (i + 1)) + ")");
    }
    trace.exec("INSERT INTO CUDA_UM_GPU_PAGE_FAULT_EVENTS VALUES (" + std::to_string(1 * kMs) + ", " +
               std::to_string(1 * kMs + 280'000) + ", " + pid + ", 0, 2097152, 16, 1)");
    return path;
  };
  const Trace trace = readTrace(large("unified_memory_large.sqlite", 0));
  CHECK(trace.ops.size() == 20'000);
  REQUIRE(trace.unified_memory.migrations.size() == 3);
  CHECK(trace.unified_memory.migrations[2].start == 1 * kMs + 600'000);
  CHECK(trace.unified_memory.migrations[0].bytes == 2097152);
  CHECK(trace.unified_memory.gpu_faults.size() == 1);
  CHECK_THROWS_WITH(readTrace(large("unified_memory_large_bad.sqlite", 70'000)),
                    Catch::Matchers::Contains("deviceId"));
}
