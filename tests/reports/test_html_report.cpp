#include <catch2/catch.hpp>

#include <regex>

#include "cuoverlap/html_report.h"
#include "sample_report.h"

using namespace cuoverlap;

namespace {

std::size_t countOf(const std::string& text, const std::string& needle) {
  std::size_t count = 0;
  for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++count;
  return count;
}

std::string sampleHtml() {
  const auto trace = test::makeSampleTrace();
  Report report;
  report.traces.push_back(test::makeSampleTraceReport(*trace));
  return renderHtml(report);
}

}  // namespace

TEST_CASE("html escapes every string from the trace", "[html]") {
  const std::string html = sampleHtml();
  // Only our own inline script; the hostile names appear only as text.
  CHECK(countOf(html, "<script") == 1);
  CHECK(countOf(html, "<img") == 0);
  CHECK(html.find("&lt;script&gt;alert(&#39;k&#39;)&lt;/script&gt;") != std::string::npos);
  CHECK(html.find("&lt;script&gt;alert(&quot;n&quot;)&lt;/script&gt;&amp;&lt;img src=x&gt;") !=
        std::string::npos);
  CHECK(html.find("sample&lt;&amp;&gt;.sqlite") != std::string::npos);
  CHECK(html.find("Test GPU &lt;b&gt;") != std::string::npos);
  CHECK(html.find("<b>") == html.find("<b>Fix:</b>"));
  CHECK(escapeHtml("a<b>&\"'") == "a&lt;b&gt;&amp;&quot;&#39;");
}

TEST_CASE("html is self-contained", "[html]") {
  const std::string html = sampleHtml();
  CHECK(html.find("http://") == std::string::npos);
  CHECK(html.find("https://") == std::string::npos);
  CHECK(html.find("src=\"") == std::string::npos);
  CHECK(html.find("href=\"") == std::string::npos);
  CHECK(html.find("url(") == std::string::npos);
  CHECK(html.find("<link") == std::string::npos);
  CHECK(html.find("@import") == std::string::npos);
}

TEST_CASE("html has the metric cards, lanes, gap shading and findings", "[html]") {
  const std::string html = sampleHtml();
  for (const char* card : {"overlap ratio", "copy hidden", "idle share", "pipeline efficiency",
                           "potential speedup"}) {
    CHECK(html.find(std::string("<div class=\"k\">") + card + "</div>") != std::string::npos);
  }
  CHECK(html.find("<div class=\"v\">1.50×</div>") != std::string::npos);
  // Lanes: NVTX, then streams 7 (legacy default), 13 and 14.
  const auto nvtx = html.find("<div title=\"NVTX\">NVTX</div>");
  const auto s7 = html.find(">stream 7 (legacy default)</div>");
  const auto s13 = html.find(">stream 13</div>");
  const auto s14 = html.find(">stream 14</div>");
  REQUIRE(nvtx != std::string::npos);
  REQUIRE(s7 != std::string::npos);
  REQUIRE(s13 != std::string::npos);
  REQUIRE(s14 != std::string::npos);
  CHECK((nvtx < s7 && s7 < s13 && s13 < s14));
  // The kernel [10us,110us) of a 150us span starts at x=0 and is 666.667 units wide.
  CHECK(html.find("class=\"e-compute\" x=\"0.000\" y=\"47\" width=\"666.667\"") != std::string::npos);
  // The gap [110us,150us) is shaded over the stream lanes (below the NVTX lane).
  CHECK(html.find("class=\"gap g-host-launch\" x=\"666.667\" y=\"22\" width=\"266.667\" height=\"66\"") !=
        std::string::npos);
  CHECK(html.find("class=\"finding sev-error\"") < html.find("class=\"finding sev-warning\""));
  CHECK(html.find("advice for legacy-default-stream") != std::string::npos);
}

TEST_CASE("html merges ops shorter than a pixel and says how many", "[html]") {
  Trace trace;
  trace.path = "many.sqlite";
  trace.strings.push_back("tiny");
  constexpr int kOps = 200'000;
  for (int i = 0; i < kOps; ++i) {
    GpuOp op;
    op.start = 1'000 + i * 100LL;
    op.end = op.start + 50;
    op.stream_id = 13;
    op.name = 1;
    trace.ops.push_back(op);
  }
  DeviceReport device;
  device.metrics.first_start = trace.ops.front().start;
  device.metrics.last_end = trace.ops.back().end;
  device.metrics.span_ns = device.metrics.last_end - device.metrics.first_start;
  TraceReport trace_report;
  trace_report.trace = &trace;
  trace_report.devices = {device};
  Report report;
  report.traces = {trace_report};
  const std::string html = renderHtml(report);
  // Ops 100 ns apart, 50 ns long, span 20 ms: a pixel is 16.666 us and holds 167 ops, so about
  // 1200 blocks, each half full.
  const std::regex note("200000 items drawn\\. 200000 items shorter than a pixel were merged into ([0-9]+) blocks");
  std::smatch match;
  REQUIRE(std::regex_search(html, match, note));
  CHECK(std::stoi(match[1]) >= 1190);
  CHECK(std::stoi(match[1]) <= 1210);
  CHECK(html.find("167 short items merged: 167 compute, 8.3 µs busy") != std::string::npos);  // 167 * 50 ns
  CHECK(html.find("fill-opacity=\"0.50\"") != std::string::npos);
  CHECK(countOf(html, "<rect") < 1300);
}

TEST_CASE("html keeps ops longer than a pixel separate", "[html]") {
  Trace trace;
  for (int i = 0; i < 10; ++i) {
    GpuOp op;
    op.start = i * 1'000'000LL + 1;
    op.end = op.start + 500'000;
    op.stream_id = 3;
    trace.ops.push_back(op);
  }
  DeviceReport device;
  device.metrics.first_start = 1;
  device.metrics.last_end = trace.ops.back().end;
  TraceReport trace_report;
  trace_report.trace = &trace;
  trace_report.devices = {device};
  Report report;
  report.traces = {trace_report};
  const std::string html = renderHtml(report);
  CHECK(countOf(html, "class=\"e-compute\"") == 10);
  CHECK(html.find("0 items shorter than a pixel were merged into 0 blocks") != std::string::npos);
}
