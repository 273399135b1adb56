#include <catch2/catch.hpp>

#include "cuoverlap/error.h"
#include <nlohmann/json.hpp>

#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "cuoverlap/analysis.h"
#include "cuoverlap/diagnosis.h"
#include "cuoverlap/names.h"
#include "cuoverlap/perfetto_export.h"
#include "sample_report.h"

using namespace cuoverlap;
using nlohmann::json;

namespace {

struct Exported {
  std::string text;
  json doc;
  PerfettoExportStats stats;
};

Exported exportTrace(const Trace& trace, const PerfettoExportOptions& options = {}) {
  std::ostringstream out;
  Exported exported;
  exported.stats = writePerfettoTrace(trace, out, options);
  exported.text = out.str();
  exported.doc = json::parse(exported.text);  // throws (fails the test) on invalid JSON
  return exported;
}

std::vector<json> eventsWhere(const json& doc, const std::string& ph) {
  std::vector<json> events;
  for (const json& event : doc["traceEvents"]) {
    if (event["ph"] == ph) events.push_back(event);
  }
  return events;
}

std::vector<json> eventsOfCategory(const json& doc, const std::string& cat) {
  std::vector<json> events;
  for (const json& event : doc["traceEvents"]) {
    if (event.value("cat", "") == cat) events.push_back(event);
  }
  return events;
}

std::map<std::pair<std::uint64_t, std::uint64_t>, std::string> threadNames(const json& doc) {
  std::map<std::pair<std::uint64_t, std::uint64_t>, std::string> names;
  for (const json& event : eventsWhere(doc, "M")) {
    if (event["name"] == "thread_name") names[{event["pid"], event["tid"]}] = event["args"]["name"];
  }
  return names;
}

}  // namespace

TEST_CASE("perfetto export has one complete event per op with its category", "[perfetto]") {
  const auto trace = test::makeSampleTrace();
  const Exported exported = exportTrace(*trace);
  std::map<std::string, int> per_category;
  for (const json& event : eventsWhere(exported.doc, "X")) per_category[event["cat"]]++;
  CHECK(per_category["kernel"] == 1);
  CHECK(per_category["memcpy"] == 1);
  CHECK(per_category["memset"] == 1);
  CHECK(per_category["cuda_api"] == 3);
  CHECK(per_category["nvtx"] == 1);
  CHECK(exported.stats.ops == 3);
  CHECK(exported.stats.calls == 3);
  // Names survive as text; the origin is the earliest timestamp (the NVTX push at 2 us).
  CHECK(exported.text.find("<script>alert('k')</script>") != std::string::npos);
  CHECK(exported.doc["otherData"]["time_origin_ns"] == 2000);
  // Kernel [10 us, 110 us): ts 8.000 us after the origin, dur 100.000 us, printed as fixed 3 decimals.
  CHECK(exported.text.find("\"ts\":8.000,\"dur\":100.000") != std::string::npos);
  const std::regex any_ts("\"ts\":-?[0-9]+\\.[0-9]{3}[,}]");
  const std::regex bad_ts("\"ts\":-?[0-9]+[,}]|\"ts\":-?[0-9]+\\.[0-9]{1,2}[,}]|\"ts\":[0-9]+\\.[0-9]{4}");
  CHECK(std::regex_search(exported.text, any_ts));
  CHECK_FALSE(std::regex_search(exported.text, bad_ts));
}

TEST_CASE("perfetto flow events link each launch call to its op by correlation id", "[perfetto]") {
  const auto trace = test::makeSampleTrace();
  const Exported exported = exportTrace(*trace);
  // Where each call and op starts, by correlation id.
  std::map<std::uint32_t, std::tuple<std::uint64_t, std::uint64_t, std::string>> call_at, op_at;
  for (const json& event : eventsWhere(exported.doc, "X")) {
    if (!event.contains("args") || !event["args"].contains("correlation_id")) continue;
    auto& target = event["cat"] == "cuda_api" ? call_at : op_at;
    target[event["args"]["correlation_id"]] = {event["pid"], event["tid"], event["ts"].dump()};
  }
  const auto starts = eventsWhere(exported.doc, "s");
  const auto finishes = eventsWhere(exported.doc, "f");
  REQUIRE(starts.size() == 3);
  REQUIRE(finishes.size() == 3);
  CHECK(exported.stats.flows == 3);
  for (std::size_t i = 0; i < starts.size(); ++i) {
    const json& s = starts[i];
    const json& f = finishes[i];
    CHECK(s["id"] == f["id"]);
    CHECK(f["bp"] == "e");
    // The correlation id whose call starts where the arrow starts must own the op where it ends.
    std::optional<std::uint32_t> correlation;
    for (const auto& [id, where] : call_at) {
      if (where == std::make_tuple(s["pid"].get<std::uint64_t>(), s["tid"].get<std::uint64_t>(), s["ts"].dump())) correlation = id;
    }
    REQUIRE(correlation);
    CHECK(op_at.at(*correlation) ==
          std::make_tuple(f["pid"].get<std::uint64_t>(), f["tid"].get<std::uint64_t>(), f["ts"].dump()));
  }
}

TEST_CASE("perfetto puts a process per device and a thread per stream", "[perfetto]") {
  const auto trace = test::makeSampleTrace();
  const Exported exported = exportTrace(*trace);
  std::set<std::string> process_names, thread_names;
  for (const json& event : eventsWhere(exported.doc, "M")) {
    if (event["name"] == "process_name") process_names.insert(event["args"]["name"]);
    if (event["name"] == "thread_name") thread_names.insert(event["args"]["name"]);
  }
  CHECK(process_names.count("GPU 0: Test GPU <b>") == 1);
  CHECK(process_names.count("process 4242") == 1);
  CHECK(thread_names.count("stream 7 (legacy default)") == 1);
  CHECK(thread_names.count("stream 13") == 1);
  CHECK(thread_names.count("stream 14") == 1);
  CHECK(thread_names.count("thread 4243") == 1);
  CHECK(thread_names.count("NVTX thread 4243") == 1);
}

TEST_CASE("perfetto keeps overlapping ops of one stream on separate tracks", "[perfetto]") {
  Trace trace;
  for (Ns start : {1'000, 2'000, 3'000, 20'000}) {
    GpuOp op;
    op.start = start;
    op.end = start + 5'000;  // the first three overlap each other
    op.stream_id = 9;
    trace.ops.push_back(op);
  }
  const Exported exported = exportTrace(trace);
  std::vector<std::uint64_t> tids;
  for (const json& event : eventsWhere(exported.doc, "X")) {
    if (event["cat"] == "kernel") tids.push_back(event["tid"]);
  }
  REQUIRE(tids.size() == 4);
  CHECK(std::set<std::uint64_t>(tids.begin(), tids.begin() + 3).size() == 3);
  CHECK(tids[3] == tids[0]);  // the fourth starts after the first ended: back on the first track
}

TEST_CASE("perfetto export of an empty trace is valid", "[perfetto]") {
  const Exported exported = exportTrace(Trace{});
  CHECK(exported.doc["traceEvents"].empty());
}

TEST_CASE("perfetto names host processes from the trace's process table", "[perfetto]") {
  auto trace = test::makeSampleTrace();
  ProcessInfo process;
  process.pid = 4242;
  process.command = "python train.py --epochs 3";
  process.rank = 1;
  trace->processes = {process};
  const Exported exported = exportTrace(*trace);
  std::set<std::string> process_names;
  for (const json& event : eventsWhere(exported.doc, "M")) {
    if (event["name"] == "process_name") process_names.insert(event["args"]["name"]);
  }
  CHECK(process_names.count("rank 1 · python train.py --epochs 3") == 1);
  CHECK(process_names.count("process 4242") == 0);
}

TEST_CASE("perfetto keeps grid and block dimensions of 2-D and 3-D kernels", "[perfetto]") {
  auto trace = test::makeSampleTrace();
  trace->ops[0].grid_blocks = 4 * 2 * 3;
  trace->ops[0].block_threads = 32 * 8;
  KernelDims dims;
  dims.grid = {4, 2, 3};
  dims.block = {32, 8, 1};
  trace->kernel_dims = {{0, dims}};
  const Exported exported = exportTrace(*trace);
  const auto kernels = eventsOfCategory(exported.doc, "kernel");
  REQUIRE(kernels.size() == 1);
  CHECK(kernels[0]["args"]["grid"] == json::array({4, 2, 3}));
  CHECK(kernels[0]["args"]["block"] == json::array({32, 8, 1}));
  CHECK(kernels[0]["args"]["grid_blocks"] == 24);    // the products stay, as the metrics use them
  CHECK(kernels[0]["args"]["block_threads"] == 256);
  // Without a side-table entry a kernel is 1-D: (grid_blocks, 1, 1) x (block_threads, 1, 1).
  trace->kernel_dims.clear();
  const auto plain = eventsOfCategory(exportTrace(*trace).doc, "kernel");
  CHECK(plain[0]["args"]["grid"] == json::array({24, 1, 1}));
  CHECK(plain[0]["args"]["block"] == json::array({256, 1, 1}));
}

TEST_CASE("perfetto draws every idle gap by cause and every finding's evidence", "[perfetto]") {
  const auto trace = test::makeSampleTrace();
  const Exported exported = exportTrace(*trace);
  const TraceReport report = analyzeTrace(*trace, AnalysisOptions{});
  const auto gaps = eventsOfCategory(exported.doc, "idle_gap");
  // The sample's one gap: [110 us, 150 us) before the memset; ts relative to the 2 us origin.
  REQUIRE(gaps.size() == 1);
  REQUIRE(report.devices.size() == 1);
  REQUIRE(report.devices[0].gaps.largest.size() == 1);
  const std::string cause(gapCauseName(report.devices[0].gaps.largest[0].cause));
  CHECK(gaps[0]["name"] == cause);
  CHECK(gaps[0]["args"]["cause"] == cause);
  CHECK(gaps[0]["args"]["duration_ns"] == 40'000);
  CHECK(gaps[0]["args"]["op_after"].get<std::string>().find("memset") == 0);
  CHECK(exported.text.find("\"ts\":108.000,\"dur\":40.000") != std::string::npos);
  CHECK(exported.stats.gaps == 1);
  // One instant per evidence (or one per finding without evidence), named by the finding's id.
  std::map<std::string, std::size_t> expected, marks;
  for (const Finding& finding : report.findings) expected[finding.id] += std::max<std::size_t>(1, finding.evidence.size());
  for (const json& mark : eventsOfCategory(exported.doc, "finding")) {
    CHECK(mark["ph"] == "i");
    CHECK(mark["args"].contains("summary"));
    CHECK(mark["args"].contains("time_lost_ns"));
    marks[mark["name"]]++;
  }
  CHECK(marks == expected);
  CHECK(exported.stats.findings == eventsOfCategory(exported.doc, "finding").size());
  // Both on named tracks of the device process.
  const auto names = threadNames(exported.doc);
  CHECK(names.at({gaps[0]["pid"], gaps[0]["tid"]}) == "idle gaps");
}

TEST_CASE("perfetto export filters by device, window and NVTX range", "[perfetto]") {
  auto trace = test::makeSampleTrace();
  GpuOp other = test::makeOp(OpKind::kKernel, 20'000, 30'000, 21, 0);
  other.device_id = 1;
  other.pid = 5151;
  trace->ops.insert(trace->ops.begin() + 1, other);
  RuntimeCall other_call = test::makeCall(trace->runtime_calls[0].name, 15'000, 16'000, 0);
  other_call.pid = 5151;
  trace->runtime_calls.insert(trace->runtime_calls.begin() + 2, other_call);

  PerfettoExportOptions device1;
  device1.analysis.scope.device = 1;
  Exported exported = exportTrace(*trace, device1);
  CHECK(exported.stats.ops == 1);
  CHECK(eventsOfCategory(exported.doc, "kernel")[0]["pid"] == 1'000'000'001);
  CHECK(exported.stats.calls == 1);  // only the process with ops on device 1
  CHECK(exported.stats.nvtx == 0);   // the NVTX range is process 4242's

  PerfettoExportOptions window;  // [100 us, 155 us): the kernel's tail and the memset
  window.analysis.scope.window_start = 100'000;
  window.analysis.scope.window_end = 155'000;
  exported = exportTrace(*trace, window);
  CHECK(exported.stats.ops == 2);
  for (const json& op : eventsOfCategory(exported.doc, "kernel")) CHECK(op["args"]["correlation_id"] == 101);
  CHECK(exported.stats.calls == 1);  // cudaMemsetAsync [140 us, 145 us)
  CHECK(exported.stats.flows == 1);  // the memset's; the kernel's launch lies outside the window

  // A range around the memset only: [139 us, 146 us) projects to the memset's end (160 us).
  NvtxRange range = trace->nvtx[0];
  range.start = 139'000;
  range.end = 146'000;
  range.text = test::intern(*trace, "step");
  trace->nvtx.push_back(range);
  PerfettoExportOptions by_range;
  by_range.analysis.scope.range = "step";
  exported = exportTrace(*trace, by_range);
  CHECK(exported.stats.ops == 1);
  CHECK(eventsOfCategory(exported.doc, "memset").size() == 1);
  by_range.analysis.scope.range = "no such range";  // a range that matches nothing is an error
  CHECK_THROWS_AS(exportTrace(*trace, by_range), UserError);
}

TEST_CASE("perfetto export size is bounded by the data, not by repeated names", "[perfetto]") {
  // 1,000 kernels sharing one 1 MiB name: each event repeated it, 1.05 GB in all.
  Trace trace;
  const std::string huge = "void big::kernel<" + std::string(1 << 20, 'T') + ">(float*)";
  const StringId name = test::intern(trace, huge);
  const std::string plain_long(300, 'p');  // no template to drop: cut to 256 bytes + "…"
  const StringId cut = test::intern(trace, plain_long);
  for (int i = 0; i < 1000; ++i) {
    GpuOp op = test::makeOp(OpKind::kKernel, i * 10'000, i * 10'000 + 5'000, 13, 0);
    op.name = i == 999 ? cut : name;
    trace.ops.push_back(op);
  }
  const Exported exported = exportTrace(trace);
  CHECK(exported.text.size() < 5'000'000);
  CHECK(exported.stats.long_names == 2);
  const json& names = exported.doc["otherData"]["names"];
  REQUIRE(names.size() == 2);
  CHECK(names[0] == huge);  // the full name, once
  CHECK(names[1] == plain_long);
  const auto kernels = eventsOfCategory(exported.doc, "kernel");
  REQUIRE(kernels.size() == 1000);
  CHECK(kernels[0]["name"] == "void big::kernel<…>(…)");
  CHECK(kernels[0]["args"]["name_index"] == 0);
  CHECK(kernels[999]["name"] == std::string(256, 'p') + "…");
  CHECK(kernels[999]["args"]["name_index"] == 1);
  // Short names are written as they are, with no index.
  const Exported sample = exportTrace(*test::makeSampleTrace());
  CHECK(sample.doc["otherData"]["names"].empty());
  CHECK_FALSE(eventsOfCategory(sample.doc, "kernel")[0]["args"].contains("name_index"));
}

TEST_CASE("perfetto gives start/end NVTX tracks of two processes distinct thread ids", "[perfetto]") {
  Trace trace;
  const StringId text = test::intern(trace, "phase");
  for (std::uint32_t pid : {100u, 200u}) {
    NvtxRange range;
    range.start = 1'000;
    range.end = 5'000;
    range.text = text;
    range.pid = pid;
    range.tid = pid + 1;
    range.event_type = static_cast<std::int32_t>(schema::NvtxEventType::kStartEndRange);
    trace.nvtx.push_back(range);
  }
  const Exported exported = exportTrace(trace);
  const auto ranges = eventsOfCategory(exported.doc, "nvtx");
  REQUIRE(ranges.size() == 2);
  CHECK(ranges[0]["pid"] != ranges[1]["pid"]);
  CHECK(ranges[0]["tid"] != ranges[1]["tid"]);  // Perfetto may merge a tid seen under two pids
  const auto names = threadNames(exported.doc);
  CHECK(names.at({ranges[0]["pid"], ranges[0]["tid"]}) == "NVTX start/end 0");
  CHECK(names.at({ranges[1]["pid"], ranges[1]["tid"]}) == "NVTX start/end 0");
}
