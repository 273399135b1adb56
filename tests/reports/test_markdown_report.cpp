#include <catch2/catch.hpp>

#include <regex>

#include "cuoverlap/markdown_report.h"
#include "sample_report.h"

using namespace cuoverlap;

TEST_CASE("markdown report shows the metrics, gaps and findings of each device", "[markdown]") {
  const auto trace = test::makeSampleTrace();
  Report report;
  report.traces.push_back(test::makeSampleTraceReport(*trace));
  const std::string md = renderMarkdown(report);

  CHECK(md.find("### Device 0: Test GPU \\<b\\>") != std::string::npos);
  CHECK(md.find("| overlap ratio | 0.267 |") != std::string::npos);
  CHECK(md.find("| copy hidden | 100.0% |") != std::string::npos);
  CHECK(md.find("| idle share | 26.7% (40.0 µs) |") != std::string::npos);
  CHECK(md.find("| potential speedup | 1.50× |") != std::string::npos);
  CHECK(md.find("| host-launch | 1 | 40.0 µs | 100.0% |") != std::string::npos);
  // The largest gap names its neighbours, escaped.
  CHECK(md.find("kernel \\<…\\>alert(…)\\<…\\> (stream 13)") != std::string::npos);  // shortName
  CHECK(md.find("memset 1.0 KiB (stream 7 (legacy default))") != std::string::npos);
  // Worst first: the error before the warning.
  const auto error_at = md.find("`sync-memset`");
  const auto warning_at = md.find("`legacy-default-stream`");
  REQUIRE(error_at != std::string::npos);
  REQUIRE(warning_at != std::string::npos);
  CHECK(error_at < warning_at);
  CHECK(md.find("**Fix:** advice for sync-memset") != std::string::npos);
  CHECK(md.find("detail \\<u\\>\\|pipe\\|") != std::string::npos);
}

TEST_CASE("markdown report says when several waiting host threads make the savings rough", "[markdown]") {
  const auto trace = test::makeSampleTrace();
  Report report;
  report.traces.push_back(test::makeSampleTraceReport(*trace));
  CHECK(renderMarkdown(report).find("host threads issue GPU work") == std::string::npos);
  report.traces[0].devices[0].explained.waiting_threads = 2;
  CHECK(renderMarkdown(report).find("2 host threads issue GPU work and wait for it side by side") !=
        std::string::npos);
}

TEST_CASE("markdown escaping leaves no raw markup from the trace", "[markdown]") {
  CHECK(escapeMarkdown("<script>a|b</script>") == "\\<script\\>a\\|b\\</script\\>");
  CHECK(escapeMarkdown("line\nbreak") == "line break");
  CHECK(escapeMarkdown("void f<int>(int*)") == "void f\\<int\\>(int\\*)");
  const auto trace = test::makeSampleTrace();
  Report report;
  report.traces.push_back(test::makeSampleTraceReport(*trace));
  const std::string md = renderMarkdown(report);
  // Every '<' that reaches the page is backslash-escaped, so GitHub renders none as HTML.
  CHECK_FALSE(std::regex_search(md, std::regex("(^|[^\\\\])<")));
}

TEST_CASE("markdown report says when a trace has no GPU activity", "[markdown]") {
  Report report;
  report.traces.push_back(TraceReport{});
  const std::string md = renderMarkdown(report);
  CHECK(md.find("No GPU activity") != std::string::npos);
  CHECK(md.find("No findings.") != std::string::npos);
}
