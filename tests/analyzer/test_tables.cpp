// The tables people read (issue 22): top kernels with names short but distinct, as many rows as
// asked in text, Markdown and HTML and every kernel in JSON; the job's largest skews largest first.
#include <catch2/catch.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "cuoverlap/html_report.h"
#include "cuoverlap/job.h"
#include "cuoverlap/json_report.h"
#include "cuoverlap/kernel_name.h"
#include "cuoverlap/kernel_summary.h"
#include "cuoverlap/markdown_report.h"
#include "cuoverlap/text_report.h"
#include "synthetic_trace.h"

using namespace cuoverlap;
using cuoverlap::testing::SyntheticOp;
using cuoverlap::testing::SyntheticTrace;

namespace {

std::size_t countOf(const std::string& text, const std::string& needle) {
  std::size_t count = 0;
  for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++count;
  return count;
}

// 25 kernel names: three templated kernels that differ only in their template arguments (the
// longest), then kernel_00 .. kernel_21, each one microsecond shorter than the one before.
Report kernelsReport(std::optional<std::size_t> rows) {
  DeviceReport device;
  device.metrics.device_id = 0;
  device.metrics.kernels = 25;
  const std::vector<std::string> templated = {"void ns::gemm<float, 128>(float const*, float*)",
                                              "void ns::gemm<float, 256>(float const*, float*)",
                                              "void ns::gemm<__half, 128>(__half const*, __half*)"};
  Ns total = 1'000'000;
  for (const std::string& name : templated) device.kernels.push_back({name, 1, total, total, total, total, 0.1});
  for (int i = 0; i < 22; ++i) {
    total -= 1000;
    device.kernels.push_back({fmt::format("kernel_{:02}", i), 1, total, total, total, total, 0.01});
  }
  TraceReport trace;
  trace.path = "kernels.sqlite";
  trace.devices = {device};
  Report report;
  report.traces = {trace};
  report.kernel_rows = rows;
  return report;
}

}  // namespace

TEST_CASE("short kernel names stay distinct when only template arguments differ", "[tables]") {
  CHECK(shortKernelName("void ns::k<float, 4>(float*, int)") == "void ns::k<…>(…)");
  const std::vector<std::string_view> names = {
      "void ns::gemm<float, Policy<128>>(float*)", "void ns::gemm<float, Policy<256>>(float*)",
      "void ns::gemm<__half, Policy<128>>(__half*)", "void ns::relu<float>(float*)",
      "void ns::scale<float>(float*, int)", "void ns::scale<float>(float*, long)"};
  const std::vector<std::string> shown = distinctShortKernelNames(names);
  REQUIRE(shown.size() == names.size());
  CHECK(shown[0] == "void ns::gemm<float, Policy<128>>(…)");  // one level is not enough
  CHECK(shown[1] == "void ns::gemm<float, Policy<256>>(…)");
  CHECK(shown[2] == "void ns::gemm<__half, Policy<…>>(…)");    // one level tells it apart
  CHECK(shown[3] == "void ns::relu<…>(…)");                     // no clash: as short as before
  CHECK(shown[4] == "void ns::scale<float>(float*, int)");     // only the parameters differ
  CHECK(shown[5] == "void ns::scale<float>(float*, long)");
  for (std::size_t i = 0; i < shown.size(); ++i) {
    for (std::size_t j = i + 1; j < shown.size(); ++j) CHECK(shown[i] != shown[j]);
  }
  CHECK(distinctShortKernelNames({"void a<int>(int)", "void a<int>(int)"}) ==
        std::vector<std::string>{"void a<…>(…)", "void a<…>(…)"});  // the same name twice
}

TEST_CASE("top kernels: text 5 rows, Markdown and HTML 10, --kernels N in each, JSON all", "[tables]") {
  const Report defaults = kernelsReport(std::nullopt);
  const std::string text = renderTextString(defaults);
  CHECK(countOf(text, "kernel_") == 2);  // 3 templated + 2 in 5 rows
  CHECK(text.find("void ns::gemm<float, 128>(…)") != std::string::npos);
  CHECK(text.find("void ns::gemm<float, 256>(…)") != std::string::npos);
  CHECK(text.find("void ns::gemm<__half, 128>(…)") != std::string::npos);
  CHECK(text.find("... 20 more kernel names") != std::string::npos);
  const std::string markdown = renderMarkdown(defaults);
  CHECK(countOf(markdown, "kernel\\_") == 7);
  const std::string html = renderHtml(defaults);
  CHECK(countOf(html, "<code>kernel_") == 7);
  CHECK(html.find("<h4>Top kernels by GPU time</h4>") != std::string::npos);
  CHECK(html.find("title=\"void ns::gemm&lt;float, 128&gt;(float const*, float*)\"") != std::string::npos);

  const Report twelve = kernelsReport(12);
  CHECK(countOf(renderTextString(twelve), "kernel_") == 9);
  CHECK(countOf(renderMarkdown(twelve), "kernel\\_") == 9);
  CHECK(countOf(renderHtml(twelve), "<code>kernel_") == 9);
  const Report all = kernelsReport(100);
  CHECK(renderTextString(all).find("more kernel names") == std::string::npos);
  const auto json = nlohmann::json::parse(renderJsonString(twelve));
  CHECK(json["traces"][0]["devices"][0]["kernel_summary"].size() == 25);
  CHECK(renderTextString(kernelsReport(0)).find("top kernels") == std::string::npos);
}

TEST_CASE("the analysis keeps every kernel name, largest total first", "[tables]") {
  const std::string path = cuoverlap::testing::tempTracePath("tables_kernels.sqlite");
  {
    SyntheticTrace trace(path);
    trace.addDevice(0, "Synthetic GPU");
    for (int i = 0; i < 30; ++i) {
      SyntheticOp op{OpKind::kKernel, 1'000 + i * 10'000, 1'000 + i * 10'000 + 1'000 + i * 10};
      op.name = fmt::format("k{}", i);
      trace.addOp(op);
    }
  }
  std::vector<std::unique_ptr<Trace>> traces;
  const Report report = analyzeFiles({path}, AnalysisOptions{}, false, traces, 1);
  const std::vector<KernelSummary>& kernels = report.traces.at(0).devices.at(0).kernels;
  REQUIRE(kernels.size() == 30);
  CHECK(kernels.front().name == "k29");
  CHECK(kernels.back().name == "k0");
}
