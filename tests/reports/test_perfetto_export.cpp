#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <map>
#include <regex>
#include <set>
#include <sstream>

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

Exported exportTrace(const Trace& trace) {
  std::ostringstream out;
  Exported exported;
  exported.stats = writePerfettoTrace(trace, out);
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
