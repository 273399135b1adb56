// GPU metrics (GPU_METRICS, our collector's CUOVERLAP_GPU_METRICS and nsys's --gpu-metrics-devices) end to
// end on a trace file: read per device and metric, summarized over the scope and per kernel (only
// the launches alone on their device), and reported by the text, JSON and Perfetto renderers.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>
#include <sstream>

#include "cuoverlap/analysis.h"
#include "cuoverlap/gpu_metrics.h"
#include "cuoverlap/html_report.h"
#include "cuoverlap/json_report.h"
#include "cuoverlap/perfetto_export.h"
#include "cuoverlap/reader.h"
#include "cuoverlap/text_report.h"
#include "synthetic_trace.h"

using namespace cuoverlap;
using cuoverlap::testing::SyntheticOp;
using cuoverlap::testing::SyntheticTrace;

namespace {

constexpr Ns kUs = 1'000;

// Samples every 10 µs from 0 to 1 ms on device 0: DRAM reads of 20 MB a sample (2 TB/s) from 100
// to 300 µs, none elsewhere; warps 80% from 100 to 300 µs, 0 elsewhere. Kernels: "sweep" alone over
// 100-300 µs, "spin" at 500-600 µs beside a copy from 550 µs (never alone), "late" at 700-705 µs
// (half a sample), "brief" at 802-807 µs, alone in the sample of 800 µs that read 1 MB. Rows are written metric by metric for one half, sample by sample for the other,
// as nsys and our collector each do.
std::string metricsTrace() {
  std::string path = cuoverlap::testing::tempTracePath("gpu_metrics.sqlite");
  SyntheticTrace trace(path);
  trace.exec(schema::kCreateGpuMetricTables);
  trace.exec("INSERT INTO CUOVERLAP_SESSION VALUES ('gpu_metrics.interval_ns', '10000')");
  trace.exec("INSERT INTO CUOVERLAP_SESSION VALUES ('gpu_metrics.lost', '3')");
  trace.exec("INSERT INTO TARGET_INFO_GPU_METRICS VALUES (0, 0, 'GPU 0', 0, 'DRAM Read [bytes]'), "
             "(0, 0, 'GPU 0', 3, 'Warps Active [% of peak]')");
  trace.addDevice(0, "NVIDIA H100 80GB HBM3");
  for (Ns t = 0; t < 1000 * kUs; t += 10 * kUs) {
    const bool busy = t >= 100 * kUs && t < 300 * kUs;
    trace.exec("INSERT INTO GPU_METRICS VALUES (" + std::to_string(t) + ", 0, 0, " +
               (busy ? "20000000" : t == 800 * kUs ? "1000000" : "0") + ")");
  }
  for (Ns t = 0; t < 1000 * kUs; t += 10 * kUs) {
    const bool busy = t >= 100 * kUs && t < 300 * kUs;
    trace.exec("INSERT INTO GPU_METRICS VALUES (" + std::to_string(t) + ", 0, 3, " + (busy ? "80.5" : "0") + ")");
  }
  SyntheticOp sweep{OpKind::kKernel, 100 * kUs, 300 * kUs};
  sweep.name = "sweep";
  trace.addOp(sweep);
  SyntheticOp spin{OpKind::kKernel, 500 * kUs, 600 * kUs};
  spin.name = "spin";
  spin.stream = 8;
  trace.addOp(spin);
  SyntheticOp copy{OpKind::kMemcpy, 550 * kUs, 650 * kUs};
  copy.stream = 9;
  trace.addOp(copy);
  SyntheticOp late{OpKind::kKernel, 700 * kUs, 705 * kUs};
  late.name = "late";
  trace.addOp(late);
  SyntheticOp brief{OpKind::kKernel, 802 * kUs, 807 * kUs};
  brief.name = "brief";
  trace.addOp(brief);
  return path;
}

const GpuMetricKernel* kernelNamed(const GpuMetricsReport& gm, const std::string& name) {
  for (const GpuMetricKernel& k : gm.kernels) {
    if (k.name == name) return &k;
  }
  return nullptr;
}

}  // namespace

TEST_CASE("GPU metrics: read, summarized per device and per alone kernel, rendered") {
  const Trace trace = readTrace(metricsTrace());
  REQUIRE(trace.gpu_metrics.series.size() == 2);
  CHECK(trace.gpu_metrics.interval == 10 * kUs);
  CHECK(trace.gpu_metrics.series[0].name == "DRAM Read [bytes]");
  CHECK(trace.gpu_metrics.series[0].times.size() == 100);
  CHECK(trace.gpu_metrics.series[1].values[10] == Approx(80.5));

  Report report;
  report.traces.push_back(analyzeTrace(trace, {}));
  const TraceReport& analyzed = report.traces[0];
  REQUIRE(analyzed.gpu_metrics);
  const GpuMetricsReport& gm = *analyzed.gpu_metrics;
  REQUIRE(gm.metrics == std::vector<std::string>{"DRAM Read [bytes]", "Warps Active [% of peak]"});
  CHECK(gm.lost == 3);
  REQUIRE(gm.devices.size() == 1);
  CHECK(gm.devices[0].samples == 100);
  // 20 samples of 20 MB and one of 1 MB over the sampled 1 ms.
  CHECK(*gm.devices[0].values[0] == Approx(401e9));
  CHECK(*gm.devices[0].values[1] == Approx(80.5 * 0.2));

  const GpuMetricKernel* sweep = kernelNamed(gm, "sweep");
  REQUIRE(sweep != nullptr);
  CHECK(sweep->alone_launches == 1);
  CHECK(sweep->sampled_ns == 200 * kUs);
  CHECK(*sweep->values[0] == Approx(2e12));  // 20 MB per 10 µs
  CHECK(*sweep->values[1] == Approx(80.5));
  const GpuMetricKernel* spin = kernelNamed(gm, "spin");
  REQUIRE(spin != nullptr);
  CHECK(spin->launches == 1);
  CHECK(spin->alone_launches == 0);  // the copy ran beside it: the counters cannot tell them apart
  CHECK_FALSE(spin->values[0]);
  const GpuMetricKernel* late = kernelNamed(gm, "late");
  REQUIRE(late != nullptr);
  CHECK(late->sampled_ns == 5 * kUs);  // half of one sample
  CHECK(*late->values[0] == Approx(0.0));
  // The only op in its sample: all of the sample's megabyte in its 5 µs, not a half of it.
  const GpuMetricKernel* brief = kernelNamed(gm, "brief");
  REQUIRE(brief != nullptr);
  CHECK(*brief->values[0] == Approx(2e11));
  CHECK(gm.kernels[0].name == "sweep");  // most time first

  const auto json = nlohmann::json::parse(renderJsonString(report));
  const auto& out = json["traces"][0]["gpu_metrics"];
  CHECK(out["interval_ns"] == 10 * kUs);
  CHECK(out["kernels"][0]["name"] == "sweep");
  CHECK(out["kernels"][0]["values"]["DRAM Read [bytes]"].get<double>() == Approx(2e12));
  CHECK(out["lost_samples"] == 3);
  const std::string text = renderTextString(report);
  CHECK(text.find("GPU metrics, device 0 (every 10.0 µs, 100 samples): DRAM Read 401.0 GB/s, "
                  "Warps Active 16.1%") != std::string::npos);
  CHECK(text.find("kernel sweep on device 0 (1 launch, 1 alone, 200.0 µs): DRAM Read 2.00 TB/s, "
                  "Warps Active 80.5%") != std::string::npos);
  CHECK(text.find("kernel spin on device 0 (1 launch, 0 alone, 100.0 µs): never alone") != std::string::npos);
  CHECK(text.find("3 samples lost") != std::string::npos);
  // The HTML timeline: a counter lane per metric, values in thousandths of the lane's largest.
  const std::string html = renderHtml(report);
  CHECK(html.find("data-k=\"c\"") != std::string::npos);
  CHECK(html.find("GPU metric: DRAM Read") != std::string::npos);
  CHECK(html.find("data-u=\"GB/s\"") != std::string::npos);
  CHECK(html.find("GPU metric: Warps Active") != std::string::npos);
  CHECK(html.find("<h3>GPU metrics</h3><ul><li>GPU metrics, device 0 (every 10.0 µs") != std::string::npos);
  std::ostringstream perfetto;
  const PerfettoExportStats stats = writePerfettoTrace(trace, perfetto);
  CHECK(stats.gpu_metrics == 200);
  CHECK(perfetto.str().find("\"name\":\"DRAM Read [GB/s]\"") != std::string::npos);
  CHECK(perfetto.str().find("\"args\":{\"value\":2000}") != std::string::npos);
}

TEST_CASE("GPU metrics: a window and a device scope; traces without them report nothing new") {
  const Trace trace = readTrace(metricsTrace());
  Scope window;
  window.window_start = 200 * kUs;
  window.window_end = 400 * kUs;
  const auto gm = summarizeGpuMetrics(trace, window);
  REQUIRE(gm);
  CHECK(gm->devices[0].samples == 20);
  CHECK(*gm->devices[0].values[0] == Approx(1e12));  // busy for half the window
  CHECK(gm->kernels.empty());  // no kernel starts in it
  Scope other_device;
  other_device.device = 1;
  CHECK(summarizeGpuMetrics(trace, other_device)->devices.empty());

  std::string path = cuoverlap::testing::tempTracePath("no_gpu_metrics.sqlite");
  {
    SyntheticTrace plain(path);
    plain.addOp({OpKind::kKernel, 1000, 3000});
  }
  Report report;
  const Trace none = readTrace(path);
  report.traces.push_back(analyzeTrace(none, {}));
  CHECK_FALSE(report.traces[0].gpu_metrics);
  CHECK(nlohmann::json::parse(renderJsonString(report))["traces"][0].count("gpu_metrics") == 0);
  CHECK(renderHtml(report).find("data-k=\"c\"") == std::string::npos);
}

TEST_CASE("GPU metrics: nsys-style type ids and metrics no name table names") {
  std::string path = cuoverlap::testing::tempTracePath("gpu_metrics_nsys.sqlite");
  {
    SyntheticTrace trace(path);
    trace.exec(schema::kCreateGpuMetricTables);
    trace.exec("INSERT INTO TARGET_INFO_GPU_METRICS VALUES (1048576, 0, 'GH100', 7, "
               "'DRAM Read Bandwidth [Throughput %]')");
    trace.exec("INSERT INTO GPU_METRICS VALUES (1000, 1048576, 7, 42), (2000, 1048576, 7, 40), "
               "(3000, 1048576, 99, 5)");
    trace.addOp({OpKind::kKernel, 1000, 3000});
  }
  const Trace trace = readTrace(path);
  REQUIRE(trace.gpu_metrics.series.size() == 1);  // metric 99 has no name: left out
  CHECK(trace.gpu_metrics.series[0].device_id == 0);
  CHECK(trace.gpu_metrics.interval == 1000);  // no session: the samples' spacing
  CHECK_FALSE(isByteMetric("DRAM Read Bandwidth [Throughput %]"));
  CHECK(isByteMetric("L2 Traffic [bytes]"));
}
