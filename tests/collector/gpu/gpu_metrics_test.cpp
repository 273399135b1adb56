// `cuoverlap record --gpu-metrics` (docs/collector.md, "GPU metrics by PM sampling") on
// gpu_metrics_app: the trace holds PM-sampled GPU metrics on the activity records' clock (DRAM
// bytes inside the streaming kernel add up to what it moved, none in the spinning one, whose warps
// fill the device), sampling survives a context's destruction, the program's exit status is kept
// run after run (the profiler's teardown at exit once crashed some runs), and `cuoverlap analyze
// --format json` reports each kernel's traffic. Exits 77 without a GPU.
#define CATCH_CONFIG_RUNNER
#include <stdlib.h>
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>

#include "trace_file.h"

namespace {

std::string g_dir;

int run(const std::string& command) {
  const int rc = std::system(command.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : 1000;
}

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// The metric's samples that start inside the n-th kernel (by start, from 0): sum or average.
std::string inKernel(const std::string& aggregate, const std::string& metric, int n) {
  return "SELECT " + aggregate + "(m.value) FROM GPU_METRICS m JOIN TARGET_INFO_GPU_METRICS t "
         "ON t.typeId = m.typeId AND t.metricId = m.metricId, (SELECT start, end FROM "
         "CUPTI_ACTIVITY_KIND_KERNEL ORDER BY start LIMIT 1 OFFSET " + std::to_string(n) + ") k "
         "WHERE t.metricName = '" + metric + "' AND m.timestamp >= k.start AND m.timestamp < k.end";
}

}  // namespace

TEST_CASE("--gpu-metrics: DRAM, L2 and warps sampled on the kernels' clock") {
  const std::string trace = g_dir + "/metrics.sqlite";
  REQUIRE(run(std::string(CUOVERLAP_CLI) + " record --gpu-metrics 10 -o " + trace + " -- " +
              CUOVERLAP_METRICS_APP + " > " + trace + ".log 2>&1") == 0);
  INFO(readFile(trace + ".log"));
  TraceFile db(trace);
  REQUIRE(db.isOpen());
  INFO("gpu_metrics.error: " << db.session("gpu_metrics.error"));
  CHECK(db.session("gpu_metrics.error").empty());
  CHECK(db.session("gpu_metrics.interval_ns") == "10000");
  CHECK(std::stoll("0" + db.session("gpu_metrics.samples")) > 100);
  REQUIRE(db.integer("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL") == 4);
  const std::string names = db.text("SELECT metricName FROM TARGET_INFO_GPU_METRICS ORDER BY metricId");
  INFO(names);
  REQUIRE(names.find("DRAM Read [bytes]") != std::string::npos);
  REQUIRE(names.find("L2 Traffic [bytes]") != std::string::npos);
  // The sweep reads 8 x 256 MiB; the L2 holds a fifth of one pass, so all of it comes from DRAM.
  // Samples that start inside the kernel miss at most its first interval.
  const std::int64_t swept = 8ll * (256 << 20);
  CHECK(db.integer(inKernel("sum", "DRAM Read [bytes]", 0)) > swept * 8 / 10);
  CHECK(db.integer(inKernel("sum", "DRAM Read [bytes]", 0)) < swept * 12 / 10);
  CHECK(db.integer(inKernel("sum", "L2 Traffic [bytes]", 0)) > swept);
  // The spin moves nothing, and its 1056 blocks of 8 warps hold most of the device's warp slots.
  CHECK(db.integer(inKernel("sum", "DRAM Read [bytes]", 1)) < swept / 1000);
  if (names.find("Warps Active [% of peak]") != std::string::npos) {
    CHECK(db.integer(inKernel("avg", "Warps Active [% of peak]", 1)) > 40);
  }
  const std::string json_path = g_dir + "/metrics.json";
  REQUIRE(run(std::string(CUOVERLAP_CLI) + " analyze --format json -o " + json_path + " " + trace) == 0);
  const std::string json = readFile(json_path);
  CHECK(json.find("\"gpu_metrics\"") != std::string::npos);
  CHECK(json.find("\"DRAM Read [bytes]\"") != std::string::npos);
}

TEST_CASE("--gpu-metrics: every run exits as the program does, at each interval") {
  for (const char* us : {"10", "20", "100", "100", "500"}) {
    const std::string trace = g_dir + "/repeat" + us + ".sqlite";
    INFO("--gpu-metrics " << us);
    CHECK(run(std::string(CUOVERLAP_CLI) + " record --force --gpu-metrics " + us + " -o " + trace + " -- " +
              CUOVERLAP_METRICS_APP + " > " + trace + ".log 2>&1") == 0);
    INFO(readFile(trace + ".log"));
    TraceFile db(trace);
    REQUIRE(db.isOpen());
    CHECK(db.session("gpu_metrics.error").empty());
    CHECK(std::stoll("0" + db.session("gpu_metrics.samples")) > 5);
  }
}

TEST_CASE("--gpu-metrics: sampling stops before a context is destroyed and starts in the next") {
  const std::string trace = g_dir + "/reset.sqlite";
  REQUIRE(run(std::string(CUOVERLAP_CLI) + " record --gpu-metrics 20 -o " + trace + " -- " +
              CUOVERLAP_METRICS_APP + " reset > " + trace + ".log 2>&1") == 0);
  INFO(readFile(trace + ".log"));
  TraceFile db(trace);
  REQUIRE(db.isOpen());
  INFO("gpu_metrics.error: " << db.session("gpu_metrics.error"));
  CHECK(db.session("gpu_metrics.error").empty());
  REQUIRE(db.integer("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL") == 5);
  // The sweep in the second context is sampled too: its DRAM reads add up to what it moved.
  const std::int64_t swept = 8ll * (256 << 20);
  CHECK(db.integer(inKernel("sum", "DRAM Read [bytes]", 4)) > swept * 8 / 10);
  CHECK(db.integer(inKernel("sum", "DRAM Read [bytes]", 4)) < swept * 12 / 10);
}

TEST_CASE("--gpu-metrics on two GPUs: each samples its own kernels") {
  if (run(std::string(CUOVERLAP_METRICS_APP) + " probe2") != 0) {
    WARN("one GPU: the two-GPU case is skipped");
    return;
  }
  const std::string trace = g_dir + "/gpus.sqlite";
  // 100 µs: two GPUs at 20 µs make 100,000 samples a second, five times what one thread decodes
  // (docs/collector.md); the buffer then overflows and the rest is lost, as the error says.
  REQUIRE(run(std::string(CUOVERLAP_CLI) + " record --gpu-metrics 100 -o " + trace + " -- " +
              CUOVERLAP_METRICS_APP + " gpus > " + trace + ".log 2>&1") == 0);
  INFO(readFile(trace + ".log"));
  TraceFile db(trace);
  REQUIRE(db.isOpen());
  INFO("gpu_metrics.error: " << db.session("gpu_metrics.error"));
  CHECK(db.session("gpu_metrics.error").empty());
  CHECK(db.session("gpu_metrics.devices") == "0,1");
  const std::int64_t swept = 8ll * (256 << 20);
  for (int device = 0; device < 2; ++device) {
    INFO("GPU " << device);
    // The samples of the GPU's own series inside its sweep: the DRAM reads it moved.
    const std::string reads = "SELECT sum(m.value) FROM GPU_METRICS m JOIN TARGET_INFO_GPU_METRICS t "
        "ON t.typeId = m.typeId AND t.metricId = m.metricId, (SELECT start, end FROM "
        "CUPTI_ACTIVITY_KIND_KERNEL WHERE deviceId = " + std::to_string(device) + ") k "
        "WHERE t.metricName = 'DRAM Read [bytes]' AND m.typeId = " + std::to_string(device) +
        " AND m.timestamp >= k.start AND m.timestamp < k.end";
    CHECK(db.integer(reads) > swept * 8 / 10);
    CHECK(db.integer(reads) < swept * 12 / 10);
  }
}

TEST_CASE("without --gpu-metrics no GPU metric tables") {
  const std::string trace = g_dir + "/plain.sqlite";
  REQUIRE(run(std::string(CUOVERLAP_CLI) + " record -o " + trace + " -- " + CUOVERLAP_METRICS_APP +
              " > " + trace + ".log 2>&1") == 0);
  TraceFile db(trace);
  REQUIRE(db.isOpen());
  CHECK(db.integer("SELECT count(*) FROM sqlite_master WHERE name = 'GPU_METRICS'") == 0);
  CHECK(db.session("gpu_metrics.samples").empty());
}

int main(int argc, char** argv) {
  if (run(std::string(CUOVERLAP_METRICS_APP) + " probe") != 0) {
    std::puts("no GPU: GPU metrics tests skipped");
    return 77;
  }
  char dir[] = "/tmp/cuoverlap_gpu_metrics_test_XXXXXX";
  g_dir = mkdtemp(dir);
  return Catch::Session().run(argc, argv);
}
