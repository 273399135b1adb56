#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "cuoverlap/report_diff.h"
#include "sample_report.h"

using namespace cuoverlap;

namespace {

const MetricDelta& metric(const DeviceDiff& device, const std::string& name) {
  for (const MetricDelta& delta : device.metrics) {
    if (delta.name == name) return delta;
  }
  FAIL("no metric " << name);
  throw;
}

}  // namespace

TEST_CASE("diff puts metrics side by side and lists finding and kernel changes", "[diff]") {
  const auto before_trace = test::makeSampleTrace();
  auto after_trace = test::makeSampleTrace();
  after_trace->ops[0].end = 90'000;  // the kernel got 20 us faster
  TraceReport before = test::makeSampleTraceReport(*before_trace);
  TraceReport after = test::makeSampleTraceReport(*after_trace);
  after.path = "after.sqlite";
  after.devices[0].metrics.overlap_ratio = 0.1;
  after.findings[0].count = 4;                      // legacy-default-stream changed
  after.findings.erase(after.findings.begin() + 1);  // sync-memset removed
  after.findings.push_back(test::makeFinding("pageable-memcpy", Severity::kWarning, 7'000, 6));

  const ReportDiff diff = diffReports(before, after);
  REQUIRE(diff.devices.size() == 1);
  const MetricDelta& overlap = metric(diff.devices[0], "overlap_ratio");
  CHECK(*overlap.before == Approx(0.26667).epsilon(1e-4));
  CHECK(*overlap.after == 0.1);
  CHECK(largestOverlapDrop(diff) == Approx(0.16667).epsilon(1e-4));
  CHECK(*metric(diff.devices[0], "potential_speedup").before == Approx(1.5));

  REQUIRE(diff.findings.size() == 3);
  CHECK(diff.findings[0].id == "legacy-default-stream");
  CHECK(diff.findings[0].change == FindingChange::kChanged);
  CHECK(diff.findings[0].count_after == 4);
  CHECK(diff.findings[1].id == "pageable-memcpy");
  CHECK(diff.findings[1].change == FindingChange::kAdded);
  CHECK(diff.findings[2].id == "sync-memset");
  CHECK(diff.findings[2].change == FindingChange::kRemoved);

  REQUIRE(diff.kernels.size() == 1);
  CHECK(diff.kernels[0].name == test::kHostileKernel);
  CHECK(diff.kernels[0].time_before_ns == 100'000);
  CHECK(diff.kernels[0].time_after_ns == 80'000);

  const std::string text = renderDiffText(diff);
  CHECK(text.find("overlap_ratio                        0.2667        0.1000       -0.1667") !=
        std::string::npos);
  CHECK(text.find("added    warning pageable-memcpy (device 0): 6 occurrence(s), 7.0 µs") !=
        std::string::npos);
  CHECK(text.find("-20.0 µs") != std::string::npos);
  const std::string md = renderDiffMarkdown(diff);
  CHECK(md.find("| `overlap_ratio` | 0.2667 | 0.1000 | -0.1667 |") != std::string::npos);
  // Markdown tables shorten C++ names as the analyze report does (docs/reports.md); JSON keeps them.
  CHECK(md.find("| \\<…\\>alert(…)\\<…\\> | 100.0 µs | 80.0 µs | -20.0 µs | 1 → 1 |") !=
        std::string::npos);

  const auto json = nlohmann::json::parse(renderDiffJson(diff));
  CHECK(json["schema"] == "cuoverlap.diff/1");
  CHECK(json["devices"][0]["metrics"]["kernels"]["delta"] == 0.0);
  CHECK(json["findings"].size() == 3);
  CHECK(json["kernels"][0]["delta_ns"] == -20'000);
}

TEST_CASE("a change that rounds to zero prints as 0, never -0.0000", "[diff]") {
  const auto trace = test::makeSampleTrace();
  const TraceReport before = test::makeSampleTraceReport(*trace);
  TraceReport after = before;
  after.devices[0].metrics.overlap_ratio -= 1e-7;
  after.devices[0].metrics.copy_hidden_fraction -= 1e-6;
  const ReportDiff diff = diffReports(before, after);
  for (const std::string& text : {renderDiffText(diff), renderDiffMarkdown(diff)}) {
    CHECK(text.find("-0.0") == std::string::npos);
    CHECK(text.find("+0.0") == std::string::npos);
  }
  CHECK(renderDiffMarkdown(diff).find("| 0.0000 |") != std::string::npos);
}

TEST_CASE("diff of identical reports shows no finding change and no overlap drop", "[diff]") {
  const auto trace = test::makeSampleTrace();
  const TraceReport report = test::makeSampleTraceReport(*trace);
  const ReportDiff diff = diffReports(report, report);
  CHECK(diff.findings.empty());
  CHECK(largestOverlapDrop(diff) == 0.0);
  CHECK(renderDiffText(diff).find("no change") != std::string::npos);
}

TEST_CASE("diff marks a device present on one side only", "[diff]") {
  const auto trace = test::makeSampleTrace();
  TraceReport before = test::makeSampleTraceReport(*trace);
  TraceReport after = before;
  after.devices[0].metrics.device_id = 1;
  const ReportDiff diff = diffReports(before, after);
  REQUIRE(diff.devices.size() == 2);
  CHECK_FALSE(metric(diff.devices[0], "overlap_ratio").after.has_value());
  CHECK_FALSE(metric(diff.devices[1], "overlap_ratio").before.has_value());
  CHECK(largestOverlapDrop(diff) == 0.0);
}
