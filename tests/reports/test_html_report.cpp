#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <regex>
#include <string_view>
#include <vector>

#include "cuoverlap/html_report.h"
#include "html_timeline.h"
#include "html_timeline_data.h"
#include "sample_report.h"

using namespace cuoverlap;

namespace {

std::size_t countOf(const std::string& text, const std::string& needle) {
  std::size_t count = 0;
  for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++count;
  return count;
}

// The page script's number decoding (html_timeline_data.h), for the packed lanes.
std::vector<std::int64_t> unpack(std::string_view text) {
  static constexpr std::string_view kDigits =
      "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz-_";
  std::vector<std::int64_t> values;
  std::uint64_t value = 0, scale = 1;
  for (char c : text) {
    const auto digit = static_cast<std::uint64_t>(kDigits.find(c));
    if (digit >= 64) FAIL("not a packed number character: " << c);
    if (digit >= 32) {
      value += (digit - 32) * scale;
      scale *= 32;
      continue;
    }
    values.push_back(static_cast<std::int64_t>(value + digit * scale));
    value = 0;
    scale = 1;
  }
  return values;
}

std::int64_t unzigzag(std::int64_t u) { return u % 2 ? -(u + 1) / 2 : u / 2; }

// The packed attribute `attribute` of the lane row labelled `label` ("" when it has none).
std::string laneAttribute(const std::string& html, const std::string& label, const std::string& attribute) {
  const auto row = html.find(" title=\"" + label + "\">" + label + "</div>");
  REQUIRE(row != std::string::npos);
  const auto begin = html.rfind("<div class=", row);
  const std::string tag = html.substr(begin, row - begin);
  const auto at = tag.find(" " + attribute + "=\"");
  if (at == std::string::npos) return "";
  const auto value = at + attribute.size() + 3;
  return tag.substr(value, tag.find('"', value) - value);
}

std::vector<std::string> names(const std::string& html) {
  std::vector<std::string> out;
  const auto begin = html.find("<ol class=\"tl-names\" hidden>");
  const auto end = html.find("</ol>", begin);
  for (auto at = html.find("<li>", begin); at < end; at = html.find("<li>", at + 1)) {
    out.push_back(html.substr(at + 4, html.find("</li>", at) - at - 4));
  }
  return out;
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

TEST_CASE("html says under a device when several waiting host threads make the savings rough", "[html]") {
  CHECK(sampleHtml().find("host threads issue GPU work") == std::string::npos);
  const auto trace = test::makeSampleTrace();
  Report report;
  report.traces.push_back(test::makeSampleTraceReport(*trace));
  report.traces[0].devices[0].explained.waiting_threads = 4;
  CHECK(renderHtml(report).find("<p class=\"note\">4 host threads issue GPU work and wait for it side by side") !=
        std::string::npos);
}

TEST_CASE("html is self-contained", "[html]") {
  const std::string html = sampleHtml();
  CHECK(html.find("http://") == std::string::npos);
  CHECK(html.find("https://") == std::string::npos);
  CHECK(html.find("src=\"") == std::string::npos);
  CHECK(countOf(html, "href=\"") == countOf(html, "href=\"#timeline-"));  // in-page links only
  CHECK(html.find("url(") == std::string::npos);
  CHECK(html.find("<link") == std::string::npos);
  CHECK(html.find("@import") == std::string::npos);
}

TEST_CASE("html has the metric cards, the lanes of every thread, engine and stream, and findings", "[html]") {
  const std::string html = sampleHtml();
  for (const char* card : {"overlap ratio", "copy hidden", "idle share", "pipeline efficiency",
                           "potential speedup"}) {
    CHECK(html.find(std::string("<div class=\"k\">") + card + "</div>") != std::string::npos);
  }
  CHECK(html.find("<div class=\"v\">1.50×</div>") != std::string::npos);
  CHECK(countOf(html, "<canvas class=\"tl-plot\"") == 1);
  // Host thread first (NVTX, then its CUDA API calls), then the device, its engines and streams.
  std::vector<std::size_t> at;
  for (const char* label : {"pid 4242 · tid 4243", "NVTX", "CUDA API", "device 0: Test GPU &lt;b&gt;",
                            "compute engine", "h2d engine", "memset engine", "stream 7 (legacy default)",
                            "stream 13", "stream 14"}) {
    at.push_back(html.find(std::string(" title=\"") + label + "\">"));
    INFO(label);
    REQUIRE(at.back() != std::string::npos);
  }
  CHECK(std::is_sorted(at.begin(), at.end()));
  CHECK(html.find("title=\"d2h engine\"") == std::string::npos);  // no d2h work: no lane
  CHECK(html.find("finding sev-error") < html.find("finding sev-warning"));
  CHECK(html.find("advice for legacy-default-stream") != std::string::npos);
}

TEST_CASE("html lanes carry every item relative to the axis start, names once by index", "[html]") {
  const std::string html = sampleHtml();
  const std::vector<std::string> table = names(html);
  // The axis starts at the first op (10 us). Stream 13: the kernel [10us,110us), correlation 101.
  const auto kernel = unpack(laneAttribute(html, "stream 13", "data-d"));
  REQUIRE(kernel.size() == 4);
  CHECK(unzigzag(kernel[0]) == 0);
  CHECK(kernel[1] == 100'000);
  CHECK(unzigzag(kernel[3]) == 101);
  const auto labels_at = html.find("data-labels=\"") + 13;
  const auto labels = unpack(html.substr(labels_at, html.find('"', labels_at) - labels_at));
  REQUIRE(labels.size() % 6 == 0);
  const std::int64_t label = kernel[2];
  CHECK(table.at(static_cast<std::size_t>(labels.at(static_cast<std::size_t>(label) * 6))) ==
        "&lt;script&gt;alert(&#39;k&#39;)&lt;/script&gt;");
  CHECK(labels.at(static_cast<std::size_t>(label) * 6 + 4) == 132);  // grid
  CHECK(labels.at(static_cast<std::size_t>(label) * 6 + 5) == 256);  // block
  // The CUDA API lane: the calls that overlap the axis (the launch at 5-8 us ends before it), the
  // first at 9 us (-1 us on the axis), each with its correlation.
  const auto calls = unpack(laneAttribute(html, "CUDA API", "data-d"));
  REQUIRE(calls.size() == 8);
  CHECK(unzigzag(calls[0]) == -1'000);
  CHECK(calls[1] == 3'000);
  CHECK(table.at(static_cast<std::size_t>(calls[2])) == "cudaMemcpyAsync");
  CHECK(unzigzag(calls[3]) == 102);
  CHECK(unzigzag(calls[4]) == 131'000);  // the memset call starts 131 us later
  // The NVTX range [2us,158us).
  const auto nvtx = unpack(laneAttribute(html, "NVTX", "data-d"));
  REQUIRE(nvtx.size() == 3);
  CHECK(unzigzag(nvtx[0]) == -8'000);
  CHECK(nvtx[1] == 156'000);
  // The h2d engine is busy [20us,60us).
  const auto h2d = unpack(laneAttribute(html, "h2d engine", "data-d"));
  REQUIRE(h2d.size() == 2);
  CHECK(unzigzag(h2d[0]) == 10'000);
  CHECK(h2d[1] == 40'000);
  // The gap [110us,150us) on the device header, with its cause and description.
  const auto gaps = unpack(laneAttribute(html, "device 0: Test GPU &lt;b&gt;", "data-g"));
  REQUIRE(gaps.size() == 4);
  CHECK(unzigzag(gaps[0]) == 100'000);
  CHECK(gaps[1] == 40'000);
  CHECK(table.at(static_cast<std::size_t>(gaps[2])) == "host-launch");
  CHECK(table.at(static_cast<std::size_t>(gaps[3])).rfind("idle 40.0 µs (host-launch)", 0) == 0);
  // Each name once.
  CHECK(countOf(html, "&lt;script&gt;alert(&#39;k&#39;)&lt;/script&gt;") == 1);
}

namespace {

Report singleDeviceReport(const Trace& trace) {
  DeviceReport device;
  device.metrics.first_start = trace.ops.front().start;
  device.metrics.last_end = trace.ops.back().end;
  device.metrics.span_ns = device.metrics.last_end - device.metrics.first_start;
  TraceReport trace_report;
  trace_report.trace = &trace;
  trace_report.source = trace.source;
  trace_report.devices = {device};
  Report report;
  report.traces = {trace_report};
  return report;
}

}  // namespace

TEST_CASE("html embeds every op of a large trace in a few bytes each", "[html]") {
  Trace trace;
  trace.path = "many.sqlite";
  trace.strings.push_back("void tiny_kernel<float, 4>(float*, int)");
  constexpr int kOps = 200'000;
  for (int i = 0; i < kOps; ++i) {
    GpuOp op;
    op.start = 1'000 + i * 100LL;
    op.end = op.start + 50;
    op.stream_id = 13;
    op.name = 1;
    op.correlation_id = static_cast<std::uint32_t>(i + 1);
    trace.ops.push_back(op);
  }
  const std::string html = renderHtml(singleDeviceReport(trace));
  const auto ops = unpack(laneAttribute(html, "stream 13", "data-d"));
  REQUIRE(ops.size() == 4u * kOps);  // every op, none merged away
  CHECK(unzigzag(ops[4u * 1234]) == 100);  // start delta
  CHECK(ops[4u * 1234 + 1] == 50);
  CHECK(unzigzag(ops[4u * 1234 + 3]) == 1);  // correlation delta
  CHECK(countOf(html, "tiny_kernel") == 1);
  CHECK(html.find("200000 ops, 0 CUDA API calls and 0 NVTX ranges") != std::string::npos);
  // About 6 characters per op in the stream lane and 4 in the engine lane (merged ops: none here).
  CHECK(html.size() < 200 + 12u * kOps + 20'000);
}

TEST_CASE("html timeline draws only the processes in --pid scope", "[html]") {
  const auto trace = test::makeSampleTrace();
  NvtxRange other = trace->nvtx.front();
  other.pid = 999;
  other.tid = 1000;
  trace->nvtx.push_back(other);
  trace->runtime_calls.push_back(test::makeCall(1, 20'000, 30'000, 7));
  trace->runtime_calls.back().pid = 999;
  GpuOp foreign = test::makeOp(OpKind::kKernel, 30'000, 40'000, 21, 7);
  foreign.pid = 999;
  trace->ops.push_back(foreign);
  Report report;
  report.traces.push_back(test::makeSampleTraceReport(*trace));
  std::string html = renderHtml(report);
  CHECK(html.find("title=\"pid 999 · tid 1000\"") != std::string::npos);
  CHECK(html.find("title=\"stream 21\"") != std::string::npos);
  report.traces.front().scope.pid = 4242;
  html = renderHtml(report);
  CHECK(html.find("title=\"pid 999") == std::string::npos);
  CHECK(html.find("title=\"stream 21\"") == std::string::npos);
  CHECK(html.find("title=\"pid 4242 · tid 4243\"") != std::string::npos);
}

TEST_CASE("html traces on one clock share one time axis", "[html]") {
  Trace a, b, nsys;
  for (Trace* trace : {&a, &b, &nsys}) {
    trace->source = trace == &nsys ? TraceSource::kNsys : TraceSource::kCuoverlap;
    trace->session = {{"host", "node1"}};
  }
  a.ops = {test::makeOp(OpKind::kKernel, 1'000'000, 2'000'000, 13, 1)};
  b.ops = {test::makeOp(OpKind::kKernel, 1'500'000, 3'000'000, 13, 1)};
  nsys.ops = {test::makeOp(OpKind::kKernel, 1'500'000, 3'000'000, 13, 1)};
  Report report;
  for (const Trace* trace : {&a, &b, &nsys}) report.traces.push_back(singleDeviceReport(*trace).traces.front());
  auto axes = html::timelineAxes(report);
  REQUIRE(axes.size() == 3);
  CHECK(axes[0].group == axes[1].group);
  CHECK(axes[0].start == 1'000'000);
  CHECK(axes[1].end == 3'000'000);
  CHECK(axes[2].group != axes[0].group);  // an Nsight export's times start at its own session
  CHECK(axes[2].start == 1'500'000);
  b.session = {{"host", "node2"}};  // another machine's clock
  axes = html::timelineAxes(report);
  CHECK(axes[0].group != axes[1].group);
  CHECK(axes[0].end == 2'000'000);
  const std::string html = renderHtml(report);
  CHECK(countOf(html, "class=\"tl\" id=\"timeline-") == 3);
}

TEST_CASE("html names a device without a name by its id alone", "[html]") {
  Trace trace;
  trace.ops = {test::makeOp(OpKind::kKernel, 1'000, 2'000, 13, 1)};
  const std::string html = renderHtml(singleDeviceReport(trace));
  CHECK(html.find("<h3>device 0</h3>") != std::string::npos);
  CHECK(html.find("title=\"device 0\">device 0</div>") != std::string::npos);
}

TEST_CASE("html number packing round-trips through the page script's decoding", "[html]") {
  html::NumberPacker packer;
  const std::vector<std::int64_t> values = {0, 1, -1, 31, 32, -17, 1'000'000'007, -(1LL << 40),
                                            (1LL << 53) - 1, -((1LL << 52) + 3)};
  for (std::int64_t value : values) packer.addSigned(value);
  packer.add(0);
  packer.add(31);
  packer.add(32);
  packer.add(1ULL << 62);
  CHECK(packer.text().find_first_of("<>&\"' ") == std::string::npos);
  const auto decoded = unpack(packer.text());
  REQUIRE(decoded.size() == values.size() + 4);
  for (std::size_t i = 0; i < values.size(); ++i) CHECK(unzigzag(decoded[i]) == values[i]);
  CHECK(decoded[values.size()] == 0);
  CHECK(decoded[values.size() + 1] == 31);
  CHECK(decoded[values.size() + 2] == 32);
  CHECK(decoded[values.size() + 3] == (1LL << 62));
  html::NumberPacker small;
  small.add(5);
  small.add(33);  // 33 = 1 + 32: digit 1 continued, then 1
  CHECK(small.text() == "5X1");
}

// Issue 22, HTML: which device (and rank) the cards are; communication cards on a device that ran
// NCCL kernels; API names without their version suffix; thread labels that fit; gap tooltips
// without dangling separators; the timeline opening on the steady state; table rows that jump to
// their place on it; the wheel and the keys.
TEST_CASE("html cards say which device and rank; NCCL devices show communication cards", "[html]") {
  auto trace = test::makeSampleTrace();
  ProcessInfo process;
  process.pid = 4242;
  process.rank = 1;
  trace->processes = {process};
  Report report;
  report.traces.push_back(test::makeSampleTraceReport(*trace));
  std::string html = renderHtml(report);
  CHECK(html.find("<div class=\"card who\"><div class=\"k\">these cards are</div><div class=\"v\">device 0 · "
                  "rank 1 · Test GPU &lt;b&gt;</div></div>") != std::string::npos);
  CHECK(html.find("<h3>device 0 · rank 1 · Test GPU &lt;b&gt;</h3>") != std::string::npos);
  CHECK(html.find("communication hidden") == std::string::npos);  // no NCCL kernels
  CommunicationMetrics& comm = report.traces[0].devices[0].metrics.communication;
  comm.kernels = 4;
  comm.busy_ns = 40'000;
  comm.hidden_ns = 30'000;
  comm.exposed_ns = 10'000;
  comm.hidden_fraction = 0.75;
  html = renderHtml(report);
  CHECK(html.find("<div class=\"k\">communication hidden</div><div class=\"v\">75.0%</div>"
                  "<div class=\"d\">30.0 µs of 40.0 µs under compute</div>") != std::string::npos);
  CHECK(html.find("<div class=\"k\">exposed communication</div><div class=\"v\">10.0 µs</div>"
                  "<div class=\"d\">6.7% of span, 4 NCCL kernels</div>") != std::string::npos);
  // The steady state's cards are named too.
  SteadyState steady;
  steady.found = true;
  steady.start = 10'000;
  steady.end = 110'000;
  steady.iterations = 4;
  steady.devices = {report.traces[0].devices[0]};
  report.traces[0].steady_state = steady;
  html = renderHtml(report);
  CHECK(html.find("<div class=\"v\">steady state · device 0 · rank 1 · Test GPU &lt;b&gt;</div>") != std::string::npos);
}

TEST_CASE("html timeline: API names without version, thread labels that fit, clean gap tooltips", "[html]") {
  auto trace = test::makeSampleTrace();
  for (std::string& text : trace->strings) {
    if (text == "cudaMemsetAsync") text = "cudaMemsetAsync_v3020";
  }
  for (RuntimeCall& call : trace->runtime_calls) call.tid = 4294967295u;
  ProcessInfo process;
  process.pid = 4242;
  process.rank = 1;
  trace->processes = {process};
  Report report;
  report.traces.push_back(test::makeSampleTraceReport(*trace));
  report.traces[0].devices[0].gaps.largest[0].prev_op.reset();  // no op before: no "after"
  const std::string html = renderHtml(report);
  const std::vector<std::string> list = names(html);
  CHECK(std::find(list.begin(), list.end(), "cudaMemsetAsync") != list.end());
  CHECK(html.find("_v3020") == std::string::npos);  // the lane, the gap table and the tooltip
  // The thread with the NVTX range, and the one with the calls (a 10-digit id): each label fits
  // the label column (30 characters); the title has the whole id.
  CHECK(html.find("title=\"rank 1 · pid 4242 · tid 4243\">rank 1 · pid 4242 · tid 4243</div>") != std::string::npos);
  CHECK(html.find("title=\"rank 1 · pid 4242 · tid 4294967295\">rank 1 · pid 4242 · tid …67295</div>") !=
        std::string::npos);
  bool tooltip = false;
  for (const std::string& name : list) {
    if (name.rfind("idle ", 0) != 0) continue;
    tooltip = true;
    CHECK(name == "idle 40.0 µs (host-launch) before memset 1.0 KiB (stream 7 (legacy default)); call "
                  "cudaMemsetAsync (correlation 103)");
  }
  CHECK(tooltip);
}

TEST_CASE("html timeline opens on the steady state; gap and finding rows jump to their place", "[html]") {
  const auto trace = test::makeSampleTrace();
  Report report;
  report.traces.push_back(test::makeSampleTraceReport(*trace));
  SteadyState steady;
  steady.found = true;
  steady.start = 20'000;
  steady.end = 110'000;
  steady.iterations = 4;
  report.traces[0].steady_state = steady;
  const std::string html = renderHtml(report);
  // Axis start: the first op (10 us); times on the page are relative to it.
  CHECK(html.find("<div class=\"tl\" id=\"timeline-0\" tabindex=\"0\"") != std::string::npos);
  CHECK(html.find("data-steady=\"10000:100000\"") != std::string::npos);
  CHECK(html.find("<button type=\"button\" data-zoom=\"steady\">steady state</button>") != std::string::npos);
  // The gap [110 us, 150 us) and the findings' evidence at 140 us.
  CHECK(html.find("<a class=\"jump\" href=\"#timeline-0\" data-tl=\"timeline-0\" data-t0=\"100000\" "
                  "data-t1=\"140000\" title=\"show on the timeline\">+100.0 µs</a>") != std::string::npos);
  CHECK(countOf(html, "data-t0=\"130000\" data-t1=\"130000\"") == 4);  // heading and row, 2 findings
  // The script: the steady state as the first view, wheel zoom only with focus, keys, the links.
  CHECK(html.find("tl.dataset.steady") != std::string::npos);
  CHECK(html.find("if (!tl.contains(document.activeElement)) return;") != std::string::npos);
  CHECK(html.find("tl.addEventListener('keydown'") != std::string::npos);
  CHECK(html.find("closest('a.jump')") != std::string::npos);
  // Without a steady state the timeline opens on the whole run.
  report.traces[0].steady_state.reset();
  CHECK(renderHtml(report).find("data-steady") == std::string::npos);
}
