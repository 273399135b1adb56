#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <map>
#include <set>

#include "cli_test_support.h"
#include "cuoverlap/reader.h"

using namespace cuoverlap;
using namespace cuoverlap::testing;
using nlohmann::json;

namespace {

// Checks the export of `trace_path` against the trace the reader loads from the same file.
void checkExport(const std::string& trace_path, const std::string& name) {
  const std::string out = tempTracePath(name + ".json");
  const CliRun run = runCli("export " + trace_path + " --format perfetto -o " + out);
  INFO(trace_path << "\n" << run.err);
  REQUIRE(run.exit_code == 0);
  const json doc = json::parse(readFile(out));  // must be valid JSON
  const Trace trace = readTrace(trace_path);

  std::map<std::string, std::size_t> op_events;
  std::map<json, std::uint32_t> call_correlation_at;  // [pid, tid, ts] of a call -> its correlation
  std::map<json, std::uint32_t> op_correlation_at;
  std::map<std::uint64_t, std::vector<json>> flows;  // id -> its s and f events
  for (const json& event : doc["traceEvents"]) {
    const std::string ph = event["ph"];
    if (ph == "s" || ph == "f") flows[event["id"]].push_back(event);
    if (ph != "X") continue;
    const json where = json::array({event["pid"], event["tid"], event["ts"]});
    if (event["cat"] == "cuda_api") call_correlation_at[where] = event["args"]["correlation_id"];
    if (event["cat"] == "kernel" || event["cat"] == "memcpy" || event["cat"] == "memset") {
      op_events[event["cat"]]++;
      op_correlation_at[where] = event["args"]["correlation_id"];
    }
  }
  std::map<std::string, std::size_t> expected;
  for (const GpuOp& op : trace.ops) {
    expected[op.kind == OpKind::kKernel ? "kernel" : op.kind == OpKind::kMemcpy ? "memcpy" : "memset"]++;
  }
  CHECK(op_events == expected);  // one complete event per op, by category

  // Every arrow starts on a call and ends on an op with the same correlation id.
  std::set<std::pair<std::uint32_t, std::uint32_t>> launchable;  // (pid, correlation) of calls
  for (const RuntimeCall& call : trace.runtime_calls) launchable.insert({call.pid, call.correlation_id});
  std::size_t expected_flows = 0;
  for (const GpuOp& op : trace.ops) {
    expected_flows += op.correlation_id != 0 && launchable.count({op.pid, op.correlation_id}) ? 1 : 0;
  }
  CHECK(flows.size() == expected_flows);
  for (const auto& [id, pair] : flows) {
    REQUIRE(pair.size() == 2);
    const json& s = pair[0]["ph"] == "s" ? pair[0] : pair[1];
    const json& f = pair[0]["ph"] == "f" ? pair[0] : pair[1];
    const json s_at = json::array({s["pid"], s["tid"], s["ts"]});
    const json f_at = json::array({f["pid"], f["tid"], f["ts"]});
    REQUIRE(call_correlation_at.count(s_at) == 1);
    REQUIRE(op_correlation_at.count(f_at) == 1);
    CHECK(call_correlation_at.at(s_at) == op_correlation_at.at(f_at));
  }
}

}  // namespace

TEST_CASE("export writes Chrome trace JSON for a synthetic trace", "[export]") {
  const std::string trace = writeHiddenCopyTrace("export_hidden.sqlite");
  checkExport(trace, "export_hidden");
  const std::string out = tempTracePath("export_hidden_raw.json");
  REQUIRE(runCli("export " + trace + " -o " + out).exit_code == 0);
  const std::string text = readFile(out);
  // The kernel starts at the origin (1 us, the earliest event is the launch at 100 ns): 0.900 us.
  CHECK(text.find("\"cat\":\"kernel\",\"name\":\"scale_kernel\"") != std::string::npos);
  CHECK(text.find("\"ts\":0.900,\"dur\":10.000") != std::string::npos);
  CHECK(text.find("\"time_origin_ns\":100") != std::string::npos);
}

TEST_CASE("export matches the trace for every shared Nsight Systems export", "[export]") {
  for (const char* name : {"gpu4_report", "gpu4_report1", "nvtxex_cudf-groupby", "nsysai_healthy_1pct"}) {
    checkExport(std::string(CUOVERLAP_SHARED_TRACES) + "/" + name + ".sqlite", name);
  }
}

TEST_CASE("export writes to stdout and rejects bad input with exit 2", "[export]") {
  const std::string trace = writeHiddenCopyTrace("export_stdout.sqlite");
  const CliRun run = runCli("export " + trace);
  CHECK(run.exit_code == 0);
  CHECK_NOTHROW(json::parse(run.out));
  CHECK(runCli("export /nonexistent.sqlite -o " + tempTracePath("x.json")).exit_code == 2);
  CHECK(runCli("export " + trace + " --format svg").exit_code == 2);
  CHECK(runCli("export " + trace + " -o /nonexistent-dir/out.json").exit_code == 2);
  CHECK(runCli("export").exit_code == 2);
}
