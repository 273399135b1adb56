// Text and JSON renderers on a hand-built report: every part of report.h shows up; and how a
// finding's cost reads on a recorded trace.
#include <catch2/catch.hpp>

#include <algorithm>
#include <iterator>
#include <string>

#include "cuoverlap/analysis.h"
#include "cuoverlap/json_report.h"
#include "cuoverlap/reader.h"
#include "cuoverlap/text_report.h"
#include "cuoverlap/units.h"

using namespace cuoverlap;

namespace {

Report sampleReport() {
  DeviceReport device;
  device.metrics.device_id = 1;
  device.metrics.name = "NVIDIA H200";
  device.metrics.kernels = 3;
  device.metrics.span_ns = 2000;
  device.metrics.busy_ns = 1500;
  device.metrics.idle_ns = 500;
  device.metrics.copy_hidden_fraction = 0.5;
  device.metrics.engines = {{Engine::kCompute, 1500, 0.75}, {Engine::kH2D, 0, 0.0}};
  device.metrics.concurrency_ns = {500, 1500};
  device.gaps.threshold_ns = 100;
  device.gaps.count = 1;
  device.gaps.time_ns = 500;
  device.gaps.totals = {{GapCause::kSyncWait, 1, 500, 1.0}};
  device.gaps.largest = {{1000, 1500, GapCause::kSyncWait, 0, 1, std::nullopt}};
  Finding minor{"minor-thing", Severity::kInfo, 1, 1, 10, "a small thing", "ignore it", {}};
  Finding major{"blocking-sync-call", Severity::kError, 1, 2, 500, "the device waited", "remove it",
                {{"cudaDeviceSynchronize", 42, 7, 1000, "idle 500 ns"}}};
  TraceReport trace;
  trace.path = "t.sqlite";
  trace.source = TraceSource::kCuoverlap;
  trace.devices = {device};
  trace.findings = {minor, major};
  trace.range_instances = {{"step", 900, 2900, {device}, {}}};
  Report report;
  report.traces = {trace};
  return report;
}

}  // namespace

TEST_CASE("JSON report: schema id, documented keys in order, enum names", "[render]") {
  nlohmann::ordered_json json = reportToJson(sampleReport());
  REQUIRE(json["schema"] == "cuoverlap.report/1");
  const auto& trace = json["traces"][0];
  REQUIRE(trace["source"] == "cuoverlap");
  const auto& device = trace["devices"][0];
  std::vector<std::string> keys;
  for (const auto& item : device.items()) keys.push_back(item.key());
  REQUIRE(keys == std::vector<std::string>{"device_id", "name", "kernels", "memcpys", "memsets",
                                           "span_ns", "busy_ns", "idle_ns", "sum_ns",
                                           "overlap_ratio", "copy_hidden_fraction", "engines",
                                           "concurrency_ns", "ideal_ns", "pipeline_efficiency",
                                           "explainable_ns", "findings_explain_ns",
                                           "findings_explain_fraction", "communication", "gaps",
                                           "kernel_summary"});
  REQUIRE(device["communication"]["hidden_fraction"] == 0.0);
  REQUIRE(device["engines"]["compute"]["busy_ns"] == 1500);
  REQUIRE(device["gaps"]["largest"][0]["cause"] == "sync-wait");
  REQUIRE(device["gaps"]["largest"][0]["call"].is_null());
  REQUIRE(trace["findings"][1]["severity"] == "error");
  REQUIRE(trace["findings"][1]["evidence"][0]["correlation_id"] == 42);
  REQUIRE(trace["range_instances"][0]["name"] == "step");
}

TEST_CASE("text report: metrics, gaps, findings worst first, ranges", "[render]") {
  std::string text = renderTextString(sampleReport());
  CHECK_THAT(text, Catch::Contains("device 1: NVIDIA H200"));
  CHECK_THAT(text, Catch::Contains("busy 1.5 µs (75.0%)"));
  CHECK_THAT(text, Catch::Contains("copy time hidden under kernels 50.0%"));
  CHECK_THAT(text, Catch::Contains("compute 1.5 µs (75.0%)"));
  CHECK_THAT(text, Catch::Contains("concurrency 0: 500 ns (25.0%)  1: 1.5 µs (75.0%)\n"));
  CHECK_THAT(text, Catch::Contains("sync-wait"));
  CHECK_THAT(text, Catch::Contains("cudaDeviceSynchronize (correlation 42"));
  CHECK_THAT(text, Catch::Contains("range \"step\""));
  CHECK(text.find("blocking-sync-call") < text.find("minor-thing"));  // worst first
  CHECK(text.find("h2d") == std::string::npos);                       // idle engines omitted
}

TEST_CASE("several waiting host threads: a device key and a line that the savings are rough", "[render]") {
  Report report = sampleReport();
  CHECK(renderTextString(report).find("host threads issue GPU work") == std::string::npos);
  report.traces[0].devices[0].explained.waiting_threads = 3;
  const nlohmann::ordered_json json = reportToJson(report);
  const auto& device = json["traces"][0]["devices"][0];
  REQUIRE(device["waiting_threads"] == 3);
  std::vector<std::string> keys;
  for (const auto& item : device.items()) keys.push_back(item.key());
  const auto at = std::find(keys.begin(), keys.end(), "waiting_threads");
  REQUIRE(at != keys.end());
  CHECK(*std::next(at) == "communication");  // after the findings' explained time
  CHECK_THAT(renderTextString(report),
             Catch::Contains("  threads     3 host threads issue GPU work and wait for it side by side: the "
                             "savings above follow the turns they took in the driver in this run"));
}

TEST_CASE("JSON report: names that are not UTF-8 are replaced, not fatal", "[render]") {
  Report report = sampleReport();
  report.traces[0].devices[0].metrics.name = "GPU \xff\xfe";
  std::string text = renderJsonString(report);
  nlohmann::json json = nlohmann::json::parse(text);
  REQUIRE(json["traces"][0]["devices"][0]["name"] == "GPU \xEF\xBF\xBD\xEF\xBF\xBD");
}

TEST_CASE("JSON report rendered a trace at a time equals the whole report dumped", "[render]") {
  const auto whole = [](const Report& r) { return reportToJson(r).dump(2) + "\n"; };
  Report report = sampleReport();
  CHECK(renderJsonString(report) == whole(report));
  report.traces.push_back(report.traces.front());
  report.job = JobAnalysis{};
  report.job->ranks.resize(2);
  report.job->clock = "one clock";
  CHECK(renderJsonString(report) == whole(report));
  report.traces.clear();
  CHECK(renderJsonString(report) == whole(report));
}

// Issue 21: host-busy states the idle time its stretches add up to, and the ledger may charge it
// less (early-result-wait, charged first, already holds that idle time on streams_host-busy). The
// report must say which figure is the cost and where the rest went, not print two "lost" figures.
TEST_CASE("text report: a finding charged less than it found says where the rest went", "[render]") {
  Report report;
  report.traces.push_back(analyzeTrace(readTrace(std::string(CUOVERLAP_TEST_DATA) + "/streams_host-busy.sqlite.gz"),
                                       AnalysisOptions{}));
  const Finding* host_busy = nullptr;
  for (const Finding& f : report.traces[0].findings) host_busy = f.id == "host-busy" ? &f : host_busy;
  REQUIRE(host_busy != nullptr);
  REQUIRE(host_busy->estimated_ns > host_busy->time_ns);
  CHECK_THAT(host_busy->summary, Catch::Contains("idled " + units::formatDuration(host_busy->estimated_ns)));
  REQUIRE_FALSE(host_busy->charged_to.empty());
  const std::string text = renderTextString(report);
  INFO(text);
  CHECK_THAT(text, Catch::Contains("about " + units::formatDuration(host_busy->time_ns) +
                                   " lost (fixing it alone would save about " +
                                   units::formatDuration(fixSavingNs(*host_busy)) + "; of that, "));
  CHECK_THAT(text, Catch::Contains("is already charged to " + host_busy->charged_to[0]));
}

// A finding whose advice names two fixes prices each: text says what each saves, the recommended
// one first, and JSON lists them ("fixes").
TEST_CASE("reports name what each fix a finding advises would save", "[render]") {
  Report report = sampleReport();
  Finding& legacy = report.traces[0].findings[1];
  legacy.id = "legacy-default-stream";
  legacy.estimated_ns = 500;
  legacy.fixes = {{"own-streams", 727'000}, {"nonblocking-streams", 48'000}};
  const std::string text = renderTextString(report);
  INFO(text);
  CHECK_THAT(text, Catch::Contains("of the fixes it advises, a created stream per host thread would save "
                                   "about 727.0 µs, non-blocking created streams about 48.0 µs"));
  const std::string json = renderJsonString(report);
  const auto own = json.find(R"("fix": "own-streams")");
  const auto nonblocking = json.find(R"("fix": "nonblocking-streams")");
  REQUIRE(json.find(R"("fixes": [)") != std::string::npos);
  REQUIRE(own != std::string::npos);
  REQUIRE(nonblocking != std::string::npos);
  CHECK(own < nonblocking);
  CHECK(json.find(R"("saving_ns": 727000)", own) < nonblocking);
  CHECK(json.find(R"("saving_ns": 48000)", nonblocking) != std::string::npos);
}

// A finding that lists a fix per stream (single-stream: each stream whose split saves) names the
// stream of each, and the thread where several threads' loops shared one: two "multi-stream" fixes
// of different savings are two streams' splits, and a reader must be told which saves what.
TEST_CASE("reports name the stream and thread each fix acts on", "[render]") {
  Report report = sampleReport();
  Finding& split = report.traces[0].findings[1];
  split.id = "single-stream";
  split.fixes = {{"multi-stream", 5'937'000, 726}, {"multi-stream", 2'677'000, 725}};
  std::string text = renderTextString(report);
  INFO(text);
  CHECK_THAT(text, Catch::Contains("of the fixes it advises, splitting stream 726 over created streams would "
                                   "save about 5.937 ms, splitting stream 725 over created streams about 2.677 ms"));
  std::string json = renderJsonString(report);
  const auto first = json.find(R"("saving_ns": 5937000)");
  REQUIRE(first != std::string::npos);
  CHECK(json.find(R"("stream_id": 726)", first) < json.find(R"("saving_ns": 2677000)"));
  CHECK(json.find(R"("thread_id")") == std::string::npos);

  split.fixes = {{"copy-ahead", 181'500, 7}, {"multi-stream", 606'800, 7}};
  text = renderTextString(report);
  CHECK_THAT(text, Catch::Contains("of the fixes it advises, copying the input of stream 7 ahead would save "
                                   "about 181.5 µs, splitting stream 7 over created streams about 606.8 µs"));

  split.fixes = {{"multi-stream", 462'000, 7, 4242}};
  text = renderTextString(report);
  CHECK_THAT(text, Catch::Contains("; the fix it advises, splitting thread 4242's loop on stream 7 over created "
                                   "streams, would save about 462.0 µs"));
  json = renderJsonString(report);
  CHECK(json.find(R"("thread_id": 4242)") != std::string::npos);
}
