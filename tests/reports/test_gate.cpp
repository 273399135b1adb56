#include <catch2/catch.hpp>

#include "cuoverlap/gate.h"
#include "sample_report.h"

using namespace cuoverlap;

namespace {

std::size_t countOf(const std::string& text, const std::string& needle) {
  std::size_t count = 0;
  for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++count;
  return count;
}

}  // namespace

TEST_CASE("gate checks each threshold against each device", "[gate]") {
  const auto trace = test::makeSampleTrace();  // overlap 0.2667, copy hidden 1, idle 0.2667, eff 0.6667
  Report report;
  report.traces.push_back(test::makeSampleTraceReport(*trace));
  GateThresholds thresholds;
  thresholds.min_overlap = 0.25;
  thresholds.min_copy_hidden = 1.0;
  thresholds.max_idle_fraction = 0.2;
  thresholds.min_pipeline_efficiency = 0.7;
  thresholds.fail_on = {"sync-memset", "pageable-memcpy"};
  const auto checks = evaluateGate(report, thresholds);
  REQUIRE(checks.size() == 6);
  CHECK(checks[0].name == "overlap_ratio");
  CHECK(checks[0].passed);
  CHECK(checks[1].passed);  // 1.0 >= 1.0
  CHECK_FALSE(checks[2].passed);
  CHECK(checks[2].name == "idle_fraction");
  CHECK(checks[2].actual == "0.2667");
  CHECK(checks[2].expectation == "<= 0.2000");
  CHECK_FALSE(checks[3].passed);
  CHECK(checks[4].name == "finding sync-memset");
  CHECK_FALSE(checks[4].passed);
  CHECK(checks[4].actual == "present: 2 occurrence(s), about 1.0 µs lost");
  CHECK(checks[5].passed);
  CHECK(formatGateCheck(checks[2]) ==
        "FAIL  sample<&>.sqlite  device 0  idle_fraction  0.2667 (<= 0.2000)");
  CHECK(formatGateCheck(checks[5]) ==
        "PASS  sample<&>.sqlite  all devices  finding pageable-memcpy  absent (absent)");
}

TEST_CASE("gate JUnit XML has a test case per check and a failure per failed check", "[gate]") {
  const auto trace = test::makeSampleTrace();
  Report report;
  report.traces.push_back(test::makeSampleTraceReport(*trace));
  report.traces.push_back(test::makeSampleTraceReport(*trace));
  report.traces.back().path = "second.sqlite";
  GateThresholds thresholds;
  thresholds.min_overlap = 0.5;      // fails
  thresholds.min_copy_hidden = 0.5;  // passes
  const std::string xml = gateJunitXml(evaluateGate(report, thresholds));
  CHECK(xml.rfind("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"cuoverlap gate\" "
                  "tests=\"4\" failures=\"2\" errors=\"0\" time=\"0.000\">", 0) == 0);
  CHECK(countOf(xml, "time=\"") == 1 + 2 + 4);  // testsuites, each suite, each case
  CHECK(countOf(xml, "<testsuite ") == 2);
  CHECK(countOf(xml, "<testcase ") == 4);
  CHECK(countOf(xml, "<failure ") == 2);
  CHECK(xml.find("<testsuite name=\"sample&lt;&amp;&gt;.sqlite\" tests=\"2\" failures=\"1\"") !=
        std::string::npos);
  CHECK(xml.find("name=\"device 0: overlap_ratio &gt;= 0.5000\"") != std::string::npos);
  CHECK(xml.find("message=\"overlap_ratio: 0.2667, expected &gt;= 0.5000\"") != std::string::npos);
  CHECK(xml.find("</testsuites>") != std::string::npos);
}

TEST_CASE("xml escaping covers markup and control characters", "[gate]") {
  // Controls are shown (render::inert), newlines kept as references in attribute values.
  CHECK(escapeXml("a<b>&\"'\x01\n") == "a&lt;b&gt;&amp;&quot;&apos;\\x01&#10;");
}
