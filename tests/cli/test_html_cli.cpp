#include <catch2/catch.hpp>

#include <filesystem>
#include <regex>
#include <vector>

#include "cli_test_support.h"
#include "../trace_files.h"

using namespace cuoverlap;
using namespace cuoverlap::testing;

namespace {

// Every trace the analyzer has a golden for: tests/data/**.sqlite.gz but the lab corpora (tests/data/lab*,
// thousands of programs with their own tests), and the shared nsys exports.
std::vector<std::string> goldenTraces() {
  std::vector<std::string> traces;
  for (auto it = std::filesystem::recursive_directory_iterator(CUOVERLAP_TEST_DATA);
       it != std::filesystem::recursive_directory_iterator(); ++it) {
    if (it->is_directory() && it->path().filename().string().rfind("lab", 0) == 0) it.disable_recursion_pending();
    if (cuoverlap_test::isTraceFile(it->path())) traces.push_back(it->path().string());
  }
  for (const auto& entry : std::filesystem::directory_iterator(CUOVERLAP_SHARED_TRACES)) {
    if (cuoverlap_test::isTraceFile(entry.path())) traces.push_back(entry.path().string());
  }
  return traces;
}

std::string analyzeTo(const std::string& trace, const std::string& format, const std::string& name) {
  const std::string out = tempTracePath(name);
  const CliRun run = runCli("analyze " + trace + " --format " + format + " -o " + out);
  INFO(trace << "\n" << run.err);
  REQUIRE(run.exit_code == 0);
  return readFile(out);
}

}  // namespace

TEST_CASE("html report for every golden trace is self-contained", "[html]") {
  const auto traces = goldenTraces();
  REQUIRE(traces.size() >= 4);
  const std::regex external(R"((src|href)\s*=\s*["']?\s*(https?:)?//|url\(|@import|https?://)",
                            std::regex::icase);
  for (const std::string& trace : traces) {
    const std::string html = analyzeTo(trace, "html", "golden.html");
    INFO(trace);
    CHECK(html.rfind("<!DOCTYPE html>", 0) == 0);
    CHECK(html.find("</html>") != std::string::npos);
    CHECK_FALSE(std::regex_search(html, external));
    CHECK(countOf(html, "<script") == 1);
    CHECK(html.find("<canvas class=\"tl-plot\"") != std::string::npos);
    CHECK(html.find("overlap ratio") != std::string::npos);
  }
}

TEST_CASE("html report escapes script in kernel and NVTX names", "[html]") {
  const std::string path = tempTracePath("hostile.sqlite");
  {
    SyntheticTrace trace(path);
    trace.addDevice(0, "GPU <b>bold</b>");
    trace.addOp({OpKind::kKernel, 1'000, 11'000, CopyKind::kHtoD, 13, 0, 4242, 1, -1,
                 "<script>alert(1)</script><img src=x onerror=alert(2)>"});
    trace.addOp({OpKind::kMemcpy, 20'000, 26'000, CopyKind::kHtoD, 14, 0, 4242, 2, 1, ""});
    trace.exec("INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid) VALUES (500, 30000, 59, "
               "'<script>alert(3)</script>', " + std::to_string(schema::encodeGlobalTid(4242, 7)) + ")");
  }
  const std::string html = analyzeTo(path, "html", "hostile.html");
  CHECK(countOf(html, "<script") == 1);
  CHECK(countOf(html, "<img") == 0);
  CHECK(countOf(html, "<b>bold") == 0);
  CHECK(html.find("&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=alert(2)&gt;") != std::string::npos);
  CHECK(html.find("&lt;script&gt;alert(3)&lt;/script&gt;") != std::string::npos);
  CHECK(html.find("GPU &lt;b&gt;bold&lt;/b&gt;") != std::string::npos);
  const std::string md = analyzeTo(path, "markdown", "hostile.md");
  CHECK_FALSE(std::regex_search(md, std::regex("(^|[^\\\\])<")));
}

TEST_CASE("html report of 1,000 kernels sharing a 1 MiB name stays small", "[html]") {
  const std::string path = tempTracePath("huge_name.sqlite");
  const std::string name = "void k<" + std::string(1 << 20, 'a') + ">(float*)";
  {
    SyntheticTrace trace(path);
    trace.addDevice(0, "GPU");
    trace.addOp({OpKind::kKernel, 1'000'000, 1'010'000, CopyKind::kHtoD, 13, 0, 4242, 1, -1, name});
    // The other 999 kernels share the first one's name string (as in a real trace).
    trace.exec("CREATE TEMP TABLE k AS SELECT * FROM CUPTI_ACTIVITY_KIND_KERNEL");
    for (int i = 0; i < 1000; ++i) {
      const Ns start = 1'000'000 + i * 20'000LL;
      trace.addRuntimeCall(start - 5'000, start - 1'000, static_cast<std::uint32_t>(i + 1), "cudaLaunchKernel");
      if (i == 0) continue;
      trace.exec("UPDATE k SET start = start + 20000, end = end + 20000, correlationId = correlationId + 1");
      trace.exec("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL SELECT * FROM k");
    }
  }
  const std::string html = analyzeTo(path, "html", "huge_name.html");
  CHECK(html.size() < 5'000'000);  // was 1.05 GB: the name in every rectangle
  // The full name once, in the names table (escaped).
  CHECK(countOf(html, "void k&lt;" + std::string(1 << 20, 'a') + "&gt;(float*)") == 1);
  // The first launch call ends before the first op, where the axis starts.
  CHECK(html.find("1000 ops, 999 CUDA API calls") != std::string::npos);
}

TEST_CASE("html report of a multi-GPU trace draws both devices on one axis", "[html]") {
  const std::string html = analyzeTo(std::string(CUOVERLAP_TEST_DATA) + "/streams_multi-gpu_2xH200.sqlite.gz",
                                     "html", "multi_gpu.html");
  CHECK(countOf(html, "<canvas class=\"tl-plot\"") == 1);
  const auto device0 = html.find("title=\"device 0: NVIDIA H200\"");
  const auto device1 = html.find("title=\"device 1: NVIDIA H200\"");
  REQUIRE(device0 != std::string::npos);
  REQUIRE(device1 != std::string::npos);
  CHECK(device0 < device1);
  CHECK(html.find("title=\"h2d engine\"", device1) != std::string::npos);
}

TEST_CASE("html report of two ranks recorded on one host shares one time axis", "[html]") {
  std::string paths;
  for (int rank = 0; rank < 2; ++rank) {
    const std::string path = tempTracePath("rank" + std::to_string(rank) + ".sqlite");
    SyntheticTrace trace(path);
    trace.exec("INSERT INTO CUOVERLAP_SESSION VALUES ('host', 'node1')");
    trace.addDevice(static_cast<std::uint16_t>(rank), "GPU");
    // Rank 1 starts 2 ms after rank 0 on the same clock.
    const Ns start = 1'000'000'000 + rank * 2'000'000LL;
    trace.addOp({OpKind::kKernel, start, start + 5'000'000, CopyKind::kHtoD, 13,
                 static_cast<std::uint16_t>(rank), static_cast<std::uint32_t>(100 + rank), 1, -1, "step"});
    paths += path + " ";
  }
  const std::string html = analyzeTo(paths, "html", "ranks.html");
  // One axis from rank 0's start to rank 1's end: 7 ms, in both timelines.
  CHECK(countOf(html, " data-axis=\"0\" data-span=\"7000000\"") == 2);
  // Rank 1's compute engine is busy from 2 ms into the shared axis for 5 ms: start (zigzag: 2 x
  // 2,000,000) and length in the page's base-32 code (html_timeline_data.h).
  const auto packed = [](std::uint64_t value) {
    const std::string digits = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz-_";
    std::string out;
    for (; value >= 32; value >>= 5) out += digits[32 + (value & 31)];
    return out + digits[value];
  };
  const auto rank1 = html.find("title=\"device 1: GPU\"");
  REQUIRE(rank1 != std::string::npos);
  CHECK(html.find("data-e=\"0\" data-d=\"" + packed(4'000'000) + packed(5'000'000) + "\"", rank1) !=
        std::string::npos);
}

TEST_CASE("markdown report for a real export has its metrics and findings", "[markdown]") {
  const std::string md = analyzeTo(std::string(CUOVERLAP_SHARED_TRACES) + "/gpu4_report1.sqlite.gz",
                                   "markdown", "gpu4_report1.md");
  CHECK(md.rfind("# cuoverlap report", 0) == 0);
  CHECK(md.find("### Device 0: Tesla T4") != std::string::npos);
  CHECK(md.find("| overlap ratio |") != std::string::npos);
  CHECK(md.find("`pageable-memcpy`") != std::string::npos);
}

TEST_CASE("html report with --range draws the instances' time on the timeline", "[html]") {
  const std::string html = analyzeTo(std::string(CUOVERLAP_SHARED_TRACES) + "/nvtxex_cudf-groupby.sqlite.gz --range GROUPBY_AGG --instances 4",
                                     "html", "range.html");
  CHECK(html.find("<h3>NVTX range instances</h3>") != std::string::npos);
  CHECK(countOf(html, "<td>GROUPBY_AGG</td>") == 4);
  CHECK(html.find(">stream 7 (legacy default)</div>") != std::string::npos);
  CHECK(html.find("class=\"e-compute") != std::string::npos);
}
