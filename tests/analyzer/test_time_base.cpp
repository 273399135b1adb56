// One time base (issue 21): every time a report prints counts from the trace's one stated origin,
// its first GPU op on any device, in the whole run and in the steady state, on every device, in
// text, Markdown and HTML, and `--window +T:+U` lands where those times say. Checked on the
// 2-GPU DDP job recorded by `cuoverlap record -- torchrun` (device 1's first op is not the
// trace's) and on a hand-built trace whose second device starts late.
#include <catch2/catch.hpp>

#include <map>
#include <memory>
#include <regex>
#include <sstream>
#include <string>

#include "cuoverlap/html_report.h"
#include "cuoverlap/job.h"
#include "cuoverlap/markdown_report.h"
#include "cuoverlap/text_report.h"
#include "cuoverlap/units.h"
#include "synthetic_trace.h"

using namespace cuoverlap;

namespace {

const std::string kDdp = std::string(CUOVERLAP_TEST_DATA) + "/ddp/torchrun_record_ddp_ch4.sqlite.gz";

Report analyze(const std::string& path, const std::string& window = "", bool keep = false) {
  AnalysisOptions options;
  options.window = window;
  std::vector<std::unique_ptr<Trace>> traces;
  static std::vector<std::unique_ptr<Trace>> kept;  // HTML draws from the traces
  Report report = analyzeFiles({path}, options, keep, traces, 1);
  for (auto& t : traces) kept.push_back(std::move(t));
  return report;
}

std::string plus(Ns offset) {
  return (offset >= 0 ? "+" : "-") + units::formatDuration(offset >= 0 ? offset : -offset);
}

// The text report cut into its blocks: "steady" (after "-- steady state") and "whole".
std::map<std::string, std::string> textBlocks(const std::string& text) {
  const auto steady = text.find("-- steady state\n");
  const auto whole = text.find("-- whole run\n");
  REQUIRE(steady != std::string::npos);
  REQUIRE(whole != std::string::npos);
  return {{"steady", text.substr(steady, whole - steady)}, {"whole", text.substr(whole)}};
}

// Per correlation id, the time the evidence lines of `block` print ("- at +5.166 s: cuLaunch...
// (correlation 10006, ...").
std::map<std::string, std::string> evidenceTimes(const std::string& block) {
  std::map<std::string, std::string> times;
  const std::regex line(R"re(- at ([+-][^:]+): [^\n(]*\(correlation (\d+))re");
  for (auto it = std::sregex_iterator(block.begin(), block.end(), line); it != std::sregex_iterator(); ++it) {
    times[(*it)[2]] = (*it)[1];
  }
  return times;
}

}  // namespace

TEST_CASE("every device, whole run and steady state, counts from the trace's first GPU op", "[time]") {
  const Report report = analyze(kDdp);
  REQUIRE(report.traces.size() == 1);
  const TraceReport& trace = report.traces[0];
  REQUIRE(trace.devices.size() == 2);
  REQUIRE(trace.steady_state);
  REQUIRE(trace.steady_state->found);
  const Ns origin = trace.first_op_start;
  // One device starts after the other: counting from its own first op shifted all its times.
  REQUIRE(std::max(trace.devices[0].metrics.first_start, trace.devices[1].metrics.first_start) > origin);
  const std::string text = renderTextString(report);
  const auto blocks = textBlocks(text);
  const std::string markdown = renderMarkdown(report);
  const std::pair<const char*, const std::vector<DeviceReport>*> scopes[] = {
      {"steady", &trace.steady_state->devices}, {"whole", &trace.devices}};
  std::size_t gaps = 0;
  for (const auto& [name, devices] : scopes) {
    for (const DeviceReport& device : *devices) {
      for (const IdleGap& gap : device.gaps.largest) {
        INFO(name << " device " << device.metrics.device_id << " gap at " << gap.start);
        CHECK(blocks.at(name).find("      at " + plus(gap.start - origin) + " ") != std::string::npos);
        ++gaps;
      }
    }
  }
  CHECK(gaps >= 20);
  for (const DeviceReport& device : trace.devices) {  // Markdown lists the whole run's gaps
    for (const IdleGap& gap : device.gaps.largest) {
      CHECK(markdown.find("| " + plus(gap.start - origin) + " | ") != std::string::npos);
    }
  }
  // The same call printed in both blocks reads the same time, on both devices, and that time is
  // its own offset from the origin.
  const auto steady = evidenceTimes(blocks.at("steady"));
  const auto whole = evidenceTimes(blocks.at("whole"));
  std::size_t shared = 0;
  for (const auto& [correlation, time] : steady) {
    const auto it = whole.find(correlation);
    if (it == whole.end()) continue;
    INFO("correlation " << correlation);
    CHECK(it->second == time);
    ++shared;
  }
  CHECK(shared >= 5);
  for (const auto* findings : {&trace.findings, &trace.steady_state->findings}) {
    for (const Finding& f : *findings) {
      for (const Evidence& e : f.evidence) {
        if (e.correlation_id == 0) continue;
        INFO(f.id << " device " << f.device_id << " correlation " << e.correlation_id);
        CHECK(text.find("- at " + plus(e.time - origin) + ": ") != std::string::npos);
      }
    }
  }
}

TEST_CASE("--window +T:+U lands where the reports print the late device's times", "[time]") {
  const Report report = analyze(kDdp);
  const TraceReport& trace = report.traces[0];
  // The device whose first op is not the trace's.
  const DeviceReport& device1 = trace.devices[0].metrics.first_start > trace.first_op_start ? trace.devices[0]
                                                                                          : trace.devices[1];
  REQUIRE(device1.metrics.first_start > trace.first_op_start);
  // A gap of device 1 the report prints at +T: a window from 1 ms before it to 1 ms after it.
  const IdleGap* gap = nullptr;
  for (const IdleGap& g : device1.gaps.largest) {
    if (g.duration() < 20'000'000 && (gap == nullptr || g.start > gap->start)) gap = &g;
  }
  REQUIRE(gap != nullptr);
  const Ns from = gap->start - trace.first_op_start - 1'000'000;
  const Ns to = gap->end - trace.first_op_start + 1'000'000;
  const Report windowed = analyze(kDdp, "+" + std::to_string(from) + "ns:+" + std::to_string(to) + "ns");
  const TraceReport& w = windowed.traces[0];
  CHECK(w.first_op_start == trace.first_op_start);
  const DeviceReport* same = nullptr;
  for (const DeviceReport& d : w.devices) {
    if (d.metrics.device_id == device1.metrics.device_id) same = &d;
  }
  REQUIRE(same != nullptr);
  bool found = false;
  for (const IdleGap& g : same->gaps.largest) found = found || (g.start == gap->start && g.end == gap->end);
  CHECK(found);
  const std::string text = renderTextString(windowed);
  CHECK(text.find("      at " + plus(gap->start - trace.first_op_start) + " ") != std::string::npos);
}

TEST_CASE("the HTML timeline's axis counts from the same origin as its tables", "[time]") {
  const Report report = analyze(kDdp, "", true);
  const TraceReport& trace = report.traces[0];
  const std::string html = renderHtml(report);
  // The axis starts at the first op of any device in the report; its labels count from the origin.
  Ns axis_start = trace.devices[0].metrics.first_start;
  for (const DeviceReport& d : trace.devices) axis_start = std::min(axis_start, d.metrics.first_start);
  CHECK(html.find("data-origin=\"" + std::to_string(trace.first_op_start - axis_start) + "\"") != std::string::npos);
  // Each gap's table link: its axis place (data-t0) and its text agree through that origin.
  const std::regex link(R"re(data-t0="(\d+)" data-t1="(\d+)" title="show on the timeline">([+-][^<]+)</a>)re");
  std::size_t links = 0;
  for (auto it = std::sregex_iterator(html.begin(), html.end(), link); it != std::sregex_iterator(); ++it) {
    const Ns t0 = std::stoll((*it)[1]);
    if (t0 == std::stoll((*it)[2])) continue;  // a moment: evidence, checked by the text test
    CHECK((*it)[3] == plus(axis_start + t0 - trace.first_op_start));
    ++links;
  }
  CHECK(links >= 10);
  // The script labels with that origin.
  CHECK(html.find("var O = Number(tl.dataset.origin || 0);") != std::string::npos);
}

TEST_CASE("a device that starts late prints its gaps from the trace's origin", "[time]") {
  // Device 0 from 1 ms; device 1 from 479 ms with a 2 ms gap at 480 ms: printed at +479.000 ms,
  // not at +1.000 ms from device 1's own first op.
  const std::string path = testing::tempTracePath("time_base_late_device.sqlite");
  {
    testing::SyntheticTrace t(path);
    t.addDevice(0, "gpu0");
    t.addDevice(1, "gpu1");
    const std::pair<Ns, Ns> kernels[] = {{1'000'000, 2'000'000}, {479'000'000, 480'000'000},
                                        {482'000'000, 483'000'000}};
    for (std::size_t i = 0; i < 3; ++i) {
      testing::SyntheticOp op;
      op.start = kernels[i].first;
      op.end = kernels[i].second;
      op.device = i == 0 ? 0 : 1;
      op.correlation = static_cast<std::uint32_t>(i + 1);
      t.addOp(op);
    }
    t.close();
  }
  const Report report = analyze(path);
  const std::string text = renderTextString(report);
  CHECK(text.find("times are relative to the first GPU op, at 1000000 ns") != std::string::npos);
  CHECK(text.find("      at +479.000 ms ") != std::string::npos);
  CHECK(text.find("      at +1.000 ms ") == std::string::npos);
}
