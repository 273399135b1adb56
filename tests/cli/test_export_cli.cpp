#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <map>
#include <set>

#include "cli_test_support.h"
#include "cuoverlap/diagnosis.h"
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

// Exports `arguments` (a trace and options) to a fresh file and parses it.
json exportJson(const std::string& arguments, const std::string& name) {
  const std::string out = tempTracePath(name + ".json");
  const CliRun run = runCli("export " + arguments + " -o " + out);
  INFO(arguments << "\n" << run.err);
  REQUIRE(run.exit_code == 0);
  return json::parse(readFile(out));
}

std::vector<json> ofCategory(const json& doc, const std::string& cat) {
  std::vector<json> events;
  for (const json& event : doc["traceEvents"]) {
    if (event.value("cat", "") == cat) events.push_back(event);
  }
  return events;
}

std::vector<json> opEvents(const json& doc) {
  std::vector<json> ops;
  for (const char* cat : {"kernel", "memcpy", "memset"}) {
    for (json& event : ofCategory(doc, cat)) ops.push_back(std::move(event));
  }
  return ops;
}

std::set<std::string> processNames(const json& doc) {
  std::set<std::string> names;
  for (const json& event : doc["traceEvents"]) {
    if (event["ph"] == "M" && event["name"] == "process_name") names.insert(event["args"]["name"]);
  }
  return names;
}

bool notOneDimensional(const json& dims) { return dims[1] != 1 || dims[2] != 1; }

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
    checkExport(std::string(CUOVERLAP_SHARED_TRACES) + "/" + name + ".sqlite.gz", name);
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

TEST_CASE("export draws the idle gaps by cause and the findings of a real trace", "[export]") {
  // streams_sync-in-loop (H100, 40 tiles): 40 gaps of at least 10 us, each named by its largest part
  // (docs/gaps.md); low-overlap (1 evidence) and early-result-wait (5 evidence: each synchronize
  // follows its tile's DtoH copy), as analyze reports them.
  const std::string trace = std::string(CUOVERLAP_TEST_DATA) + "/streams_sync-in-loop.sqlite.gz";
  const json doc = exportJson(trace, "export_sync_in_loop");
  std::map<std::string, std::size_t> gaps, marks;
  for (const json& gap : ofCategory(doc, "idle_gap")) {
    CHECK(gap["name"] == gap["args"]["cause"]);
    CHECK(gap["args"]["duration_ns"].get<std::int64_t>() >= 10'000);
    gaps[gap["name"]]++;
  }
  for (const json& mark : ofCategory(doc, "finding")) marks[mark["name"]]++;
  CHECK(marks == std::map<std::string, std::size_t>{{"low-overlap", 1}, {"early-result-wait", 5}});
  // The same totals as the analysis.
  const CliRun analyze = runCli("analyze " + trace + " --format json");
  REQUIRE(analyze.exit_code == 0);
  const json report = json::parse(analyze.out);
  // Totals count a gap under every cause among its parts; the track names each gap once, by its
  // largest part: as many gaps in all, and each cause there at most as often as in the totals.
  const json& device_gaps = report["traces"][0]["devices"][0]["gaps"];
  std::map<std::string, std::size_t> totals;
  for (const json& total : device_gaps["totals"]) totals[total["cause"]] = total["count"];
  std::size_t all = 0;
  for (const auto& [cause, count] : gaps) {
    CHECK(count <= totals[cause]);
    all += count;
  }
  CHECK(all == device_gaps["count"].get<std::size_t>());
  CHECK(all == 40);
  checkExport(trace, "export_sync_in_loop_flows");  // every event parses, flows still match
}

TEST_CASE("export names processes from the trace", "[export]") {
  const json nsys = exportJson(std::string(CUOVERLAP_SHARED_TRACES) + "/gpu4_report.sqlite.gz", "export_names");
  CHECK(processNames(nsys) == std::set<std::string>{"GPU 0: Tesla T4", "./lab4_VectorAdd_Streams"});
  // A Kineto trace (process_name) and one of ours (the session's command, where the reader fills
  // Trace::processes from it): each process is labelled with its command (and rank, host).
  const std::string kineto = std::string(CUOVERLAP_TEST_DATA) + "/kineto/torch_eager_nvtx.kineto.json.gz";
  REQUIRE_FALSE(readTrace(kineto).processes.empty());
  for (const std::string& path : {kineto, std::string(CUOVERLAP_TEST_DATA) + "/kineto/torch_eager_nvtx.sqlite.gz"}) {
    const Trace trace = readTrace(path);
    const json doc = exportJson(path, "export_named");
    for (const ProcessInfo& process : trace.processes) {
      if (process.command.empty()) continue;
      const auto names = processNames(doc);
      CHECK(std::any_of(names.begin(), names.end(), [&](const std::string& name) {
        return name.find(process.command) != std::string::npos;
      }));
    }
  }
}

TEST_CASE("export keeps grid and block in x, y, z from nsys-schema traces and Kineto JSON", "[export]") {
  // torch_eager_nvtx (H100): 90 of its 216 kernels have a 2-D or 3-D grid or block
  // (SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE gridY>1 OR gridZ>1 OR blockY>1 OR blockZ>1).
  const json doc = exportJson(std::string(CUOVERLAP_TEST_DATA) + "/kineto/torch_eager_nvtx.sqlite.gz", "export_dims");
  std::size_t multi = 0;
  const auto kernels = ofCategory(doc, "kernel");
  CHECK(kernels.size() == 216);
  for (const json& kernel : kernels) {
    const json& args = kernel["args"];
    std::uint64_t grid = 1, block = 1;
    for (int i = 0; i < 3; ++i) {
      grid *= args["grid"][i].get<std::uint64_t>();
      block *= args["block"][i].get<std::uint64_t>();
    }
    CHECK(grid == args["grid_blocks"]);  // the products the metrics use are unchanged
    CHECK(block == args["block_threads"]);
    multi += notOneDimensional(args["grid"]) || notOneDimensional(args["block"]) ? 1 : 0;
  }
  CHECK(multi == 90);

  // The Kineto trace's own args.grid / args.block come through the importer unchanged.
  const std::string kineto = std::string(CUOVERLAP_TEST_DATA) + "/kineto/torch_eager_nvtx.kineto.json.gz";
  const std::string plain = tempTracePath("kineto_plain.json");
  REQUIRE(std::system(("gzip -dc " + kineto + " > " + plain).c_str()) == 0);
  std::multiset<std::pair<json, json>> expected, exported;
  const json original = json::parse(readFile(plain));
  for (const json& event : original["traceEvents"]) {
    if (event.value("cat", "") == "kernel") expected.insert(std::make_pair(event["args"]["grid"], event["args"]["block"]));
  }
  const json exported_doc = exportJson(kineto, "export_kineto_dims");
  for (const json& kernel : ofCategory(exported_doc, "kernel")) {
    exported.insert(std::make_pair(kernel["args"]["grid"], kernel["args"]["block"]));
  }
  CHECK(exported == expected);
  CHECK(std::count_if(exported.begin(), exported.end(), [](const auto& dims) {
          return notOneDimensional(dims.first) || notOneDimensional(dims.second);
        }) > 0);
}

TEST_CASE("export --device, --window and --range keep only what they select", "[export]") {
  const std::string multi = std::string(CUOVERLAP_TEST_DATA) + "/streams_multi-gpu_2xH200.sqlite.gz";
  const Trace trace = readTrace(multi);
  std::size_t on_device1 = 0;
  for (const GpuOp& op : trace.ops) on_device1 += op.device_id == 1 ? 1 : 0;
  REQUIRE(on_device1 > 0);
  // Unfiltered: both devices have their own gap and finding tracks, and no thread id is shared by
  // two processes (Perfetto's JSON importer may merge such threads).
  json doc = exportJson(multi, "export_both_devices");
  std::map<std::uint64_t, std::set<std::uint64_t>> pids_of_tid;
  std::size_t gap_tracks = 0;
  for (const json& event : doc["traceEvents"]) {
    if (event["ph"] != "M" || event["name"] != "thread_name") continue;
    pids_of_tid[event["tid"]].insert(event["pid"].get<std::uint64_t>());
    gap_tracks += event["args"]["name"] == "idle gaps" ? 1 : 0;
  }
  CHECK(gap_tracks == 2);
  for (const auto& [tid, pids] : pids_of_tid) CHECK(pids.size() == 1);

  doc = exportJson(multi + " --device 1", "export_device1");
  CHECK(opEvents(doc).size() == on_device1);
  for (const json& op : opEvents(doc)) CHECK(op["pid"] == 1'000'000'001);
  for (const std::string& name : processNames(doc)) CHECK(name.rfind("GPU 0", 0) == std::string::npos);

  // A window over the middle of the trace: the ops that intersect it, whole.
  const Ns start = trace.ops.front().start + (trace.ops.back().end - trace.ops.front().start) / 3;
  const Ns end = start + (trace.ops.back().end - trace.ops.front().start) / 3;
  std::size_t in_window = 0;
  for (const GpuOp& op : trace.ops) in_window += op.end > start && op.start < end ? 1 : 0;
  REQUIRE(in_window > 0);
  REQUIRE(in_window < trace.ops.size());
  doc = exportJson(multi + " --window " + std::to_string(start) + ":" + std::to_string(end), "export_window");
  CHECK(opEvents(doc).size() == in_window);
  // The same window counted from the first GPU op ("+TIME"), as analyze takes it (issue 21).
  const Ns origin = trace.ops.front().start;
  doc = exportJson(multi + " --window +" + std::to_string(start - origin) + "ns:+" + std::to_string(end - origin) + "ns",
                   "export_window_relative");
  CHECK(opEvents(doc).size() == in_window);

  // --range: the ops intersecting the instances of an NVTX range (projected as analyze does).
  const std::string cudf = std::string(CUOVERLAP_SHARED_TRACES) + "/nvtxex_cudf-groupby.sqlite.gz";
  const Trace groupby = readTrace(cudf);
  AnalysisOptions options;
  options.scope.range = "GROUPBY_AGG";
  const auto instances = analyzeRangeInstances(groupby, options);
  REQUIRE(instances.size() == 4);
  std::size_t in_range = 0;
  for (const GpuOp& op : groupby.ops) {
    in_range += std::any_of(instances.begin(), instances.end(), [&](const RangeInstance& i) {
      return op.end > i.start && op.start < i.end;
    }) ? 1 : 0;
  }
  REQUIRE(in_range > 0);
  REQUIRE(in_range < groupby.ops.size());
  doc = exportJson(cudf + " --range GROUPBY_AGG", "export_range");
  CHECK(opEvents(doc).size() == in_range);

  CHECK(runCli("export " + multi + " --window 5ms -o " + tempTracePath("bad.json")).exit_code == 2);
  CHECK(runCli("export " + multi + " --device 7 -o " + tempTracePath("bad.json")).exit_code == 2);
  CHECK(runCli("export " + multi + " --format kineto --device 0 -o " + tempTracePath("bad.json")).exit_code == 2);
}

TEST_CASE("export -o NAME.json.gz writes the same JSON gzipped", "[export]") {
  const std::string trace = std::string(CUOVERLAP_TEST_DATA) + "/streams_sync-in-loop.sqlite.gz";
  for (const char* format : {"perfetto", "kineto"}) {
    const std::string plain = tempTracePath(std::string(format) + ".json");
    const std::string gz = tempTracePath(std::string(format) + ".json.gz");
    REQUIRE(runCli("export " + trace + " --format " + format + " -o " + plain).exit_code == 0);
    REQUIRE(runCli("export " + trace + " --format " + format + " -o " + gz).exit_code == 0);
    const std::string text = readFile(gz);
    REQUIRE(text.size() > 2);
    CHECK(static_cast<unsigned char>(text[0]) == 0x1f);  // gzip magic
    CHECK(static_cast<unsigned char>(text[1]) == 0x8b);
    CHECK(text.size() < readFile(plain).size() / 4);
    const std::string unzipped = tempTracePath(std::string(format) + "_unzipped.json");
    REQUIRE(std::system(("gzip -dc " + gz + " > " + unzipped).c_str()) == 0);
    CHECK(readFile(unzipped) == readFile(plain));
  }
  // The reader opens the gzipped Kineto export like the plain one.
  const std::string gz = tempTracePath("kineto_again.json.gz");
  REQUIRE(runCli("export " + trace + " --format kineto -o " + gz).exit_code == 0);
  CHECK(readTrace(gz).ops.size() == readTrace(trace).ops.size());
}

TEST_CASE("export of 1,000 kernels sharing a 1 MiB name stays under 5 MB", "[export]") {
  const std::string path = tempTracePath("huge_name.sqlite");
  {
    SyntheticTrace trace(path);
    trace.addDevice(0, "Synthetic GPU");
    trace.addOp({OpKind::kKernel, 1'000, 6'000, CopyKind::kHtoD, 13, 0, 4242, 0, -1,
                 "huge_kernel<" + std::string(1 << 20, 'x') + ">(float*)"});
    // 999 copies of that row (one string id), each 10 us later than the previous.
    trace.exec("CREATE TEMP TABLE one AS SELECT * FROM CUPTI_ACTIVITY_KIND_KERNEL");
    trace.exec("WITH RECURSIVE n(k) AS (SELECT 1 UNION ALL SELECT k + 1 FROM n WHERE k < 999) "
               "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL SELECT one.* FROM one, n");
    trace.exec("UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = start + (rowid - 1) * 10000, "
               "end = end + (rowid - 1) * 10000");
  }
  const std::string out = tempTracePath("huge_name.json");
  const CliRun run = runCli("export " + path + " -o " + out);
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  const std::string text = readFile(out);
  CHECK(text.size() < 5'000'000);
  const json doc = json::parse(text);
  CHECK(ofCategory(doc, "kernel").size() == 1000);
  REQUIRE(doc["otherData"]["names"].size() == 1);
  CHECK(doc["otherData"]["names"][0].get<std::string>().size() == (1u << 20) + 21);
  CHECK(ofCategory(doc, "kernel")[500]["name"] == "huge_kernel<…>(…)");
}

TEST_CASE("export keeps each kernel's dimensions when its table is out of time order", "[export]") {
  // Rows stored out of time order make the reader sort the ops; the dimensions must follow them.
  const std::string path = tempTracePath("unsorted_dims.sqlite");
  {
    SyntheticTrace trace(path);
    trace.addDevice(0, "Synthetic GPU");
    trace.addOp({OpKind::kKernel, 30'000, 35'000, CopyKind::kHtoD, 13, 0, 4242, 0, -1, "late"});
    trace.addOp({OpKind::kKernel, 1'000, 5'000, CopyKind::kHtoD, 13, 0, 4242, 0, -1, "early"});
    trace.addOp({OpKind::kMemcpy, 6'000, 8'000, CopyKind::kHtoD, 14, 0, 4242, 0, 1, ""});
    trace.addOp({OpKind::kKernel, 10'000, 15'000, CopyKind::kHtoD, 13, 0, 4242, 0, -1, "mid"});
    // Synthetic kernels are grid (64, 2, 1), block (256, 1, 1): make "early" 1-D and "mid" 3-D.
    trace.exec("UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET gridY = 1 WHERE start = 1000");
    trace.exec("UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET gridZ = 3, blockY = 2 WHERE start = 10000");
  }
  const json doc = exportJson(path, "unsorted_dims");
  std::map<std::string, std::pair<json, json>> dims;
  for (const json& kernel : ofCategory(doc, "kernel")) {
    dims[kernel["name"]] = std::make_pair(kernel["args"]["grid"], kernel["args"]["block"]);
  }
  CHECK(dims.at("early") == std::make_pair(json::array({64, 1, 1}), json::array({256, 1, 1})));
  CHECK(dims.at("mid") == std::make_pair(json::array({64, 2, 3}), json::array({256, 2, 1})));
  CHECK(dims.at("late") == std::make_pair(json::array({64, 2, 1}), json::array({256, 1, 1})));
  const Trace trace = readTrace(path);
  REQUIRE(trace.ops.size() == 4);
  CHECK(trace.ops[2].grid_blocks == 64 * 2 * 3);  // the products the metrics use
  CHECK(trace.ops[2].block_threads == 512);
}
