// The Kineto importer and exporter through the `cuoverlap` binary: bad JSON gets one line and
// exit 2; per-rank Kineto files give the same report structure as our own traces; an export in
// Kineto's layout reads back with every metric unchanged.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <set>
#include <vector>

#include "cli_test_support.h"
#include "kineto_json_builder.h"

using cuoverlap::testing::KinetoJsonBuilder;
using cuoverlap::testing::runCli;
using cuoverlap::testing::tempTracePath;
using nlohmann::json;

namespace {

void writeText(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

void expectRejected(const std::string& path, const std::string& fragment) {
  const auto run = runCli("analyze '" + path + "'");
  INFO(path << "\nstderr: " << run.err);
  CHECK(run.exit_code == 2);
  CHECK(cuoverlap::testing::countOf(run.err, "\n") == 1);
  CHECK(run.err.rfind("cuoverlap: error: ", 0) == 0);
  CHECK(run.err.find(path) != std::string::npos);
  CHECK(run.err.find(fragment) != std::string::npos);
}

KinetoJsonBuilder smallTrace() {
  KinetoJsonBuilder b;
  b.runtime("cudaLaunchKernel", 10, 10, 1'000, 2'000, 1);
  b.kernel("k", 0, 7, 4'000, 10'000, 1);
  return b;
}

// The set of key paths of a JSON value ("devices[].engines.compute.busy_ns"), arrays merged.
void keyPaths(const json& value, const std::string& prefix, std::set<std::string>& out) {
  if (value.is_object()) {
    for (auto it = value.begin(); it != value.end(); ++it) {
      out.insert(prefix + it.key());
      keyPaths(it.value(), prefix + it.key() + ".", out);
    }
  } else if (value.is_array()) {
    for (const json& item : value) keyPaths(item, prefix + "[].", out);
  }
}

}  // namespace

TEST_CASE("bad Kineto JSON: one line, exit 2", "[kineto][bad-input]") {
  const std::string body = smallTrace().text();

  const std::string gz = tempTracePath("trace.json.gz");
  smallTrace().writeGzip(gz);
  const std::string gz_bytes = cuoverlap::testing::readFile(gz);
  const std::string truncated = tempTracePath("truncated.json.gz");
  writeText(truncated, gz_bytes.substr(0, gz_bytes.size() / 2));
  expectRejected(truncated, "truncated gzip");

  const std::string array = tempTracePath("array.json");
  writeText(array, "[{\"ph\": \"X\", \"cat\": \"kernel\", \"ts\": 1, \"dur\": 1}]");
  expectRejected(array, "top-level JSON value is an array");

  const std::string no_events = tempTracePath("no_events.json");
  writeText(no_events, "{\"schemaVersion\": 1, \"deviceProperties\": []}");
  expectRejected(no_events, "no traceEvents");

  const std::string events_object = tempTracePath("events_object.json");
  writeText(events_object, "{\"traceEvents\": {\"ph\": \"X\"}}");
  expectRejected(events_object, "traceEvents is an object");

  const std::string nan = tempTracePath("nan.json");
  std::string nan_body = body;
  nan_body.replace(nan_body.find("\"ts\": 4.000"), 11, "\"ts\": NaN");
  writeText(nan, nan_body);
  expectRejected(nan, "ts is not a finite number");

  const std::string string_ts = tempTracePath("string_ts.json");
  writeText(string_ts, "{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"kernel\", \"ts\": \"12\", \"dur\": 1}]}");
  expectRejected(string_ts, "ts is not a finite number");

  // The parser recurses per level: without a depth limit this overflows the C stack.
  const std::string deep = tempTracePath("deep.json");
  writeText(deep, "{\"traceEvents\": [{\"args\": {\"a\": " + std::string(200000, '[') +
                      std::string(200000, ']') + "}}]}");
  expectRejected(deep, "nested deeper than 256 levels");

  const std::string cut = tempTracePath("cut.json");
  writeText(cut, body.substr(0, body.size() - 40));
  expectRejected(cut, "not valid JSON");
}

TEST_CASE("analyze rank0.json.gz rank1.json.gz: the report structure of our own traces", "[kineto][cli]") {
  std::vector<std::string> paths;
  for (int rank = 0; rank < 2; ++rank) {
    KinetoJsonBuilder b;
    b.rank = rank;
    b.world_size = 2;
    b.runtime("cudaMemcpyAsync", 10 + rank, 10 + rank, 1'000, 500, 1);
    b.runtime("cudaLaunchKernel", 10 + rank, 10 + rank, 2'000, 500, 2);
    b.memcpy("Memcpy HtoD (Pinned -> Device)", rank, 7, 2'000, 3'000, 1, 4096);
    b.kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", rank, 13, 3'000, 9'000, 2);
    b.event("user_annotation", "ProfilerStep#0", 10 + rank, 10 + rank, 900, 20'000, "");
    paths.push_back(tempTracePath("rank" + std::to_string(rank) + ".json.gz"));
    b.writeGzip(paths.back());
  }
  const auto run = runCli("analyze '" + paths[0] + "' '" + paths[1] + "' --format json");
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  const json report = json::parse(run.out);
  REQUIRE(report["traces"].size() == 2);
  const auto ours = runCli(std::string("analyze '") + CUOVERLAP_TEST_DATA +
                           "/streams_pipeline3.sqlite.gz' --format json");
  REQUIRE(ours.exit_code == 0);
  const json reference = json::parse(ours.out)["traces"][0];
  std::set<std::string> expected;
  keyPaths(reference, "", expected);
  for (int rank = 0; rank < 2; ++rank) {
    const json& trace = report["traces"][rank];
    CHECK(trace["source"] == "kineto");
    REQUIRE(trace["devices"].size() == 1);
    CHECK(trace["devices"][0]["device_id"] == rank);
    CHECK(trace["devices"][0]["kernels"] == 1);
    CHECK(trace["devices"][0]["memcpys"] == 1);
    CHECK(trace["devices"][0]["busy_ns"] == 10'000);  // [2 µs, 12 µs): copy then kernel, overlapping
    std::set<std::string> keys;
    keyPaths(trace, "", keys);
    for (const std::string& key : expected) {
      // Arrays that are empty in one report carry no inner keys: compare the fields both have.
      if (key.find("[].") != std::string::npos && keys.count(key.substr(0, key.find("[].") + 2)) == 0) continue;
      // Whether a steady state is found depends on the data, not on the format: its inner keys
      // are those of a found or of a not-found steady state.
      if (key.rfind("steady_state.", 0) == 0 || key.rfind("phases.", 0) == 0) continue;
      INFO(key);
      CHECK(keys.count(key) == 1);
    }
  }
}

TEST_CASE("export --format kineto reads back with the same metrics", "[kineto][cli]") {
  for (const char* name : {"streams_pipeline3.sqlite.gz", "streams_multi-gpu.sqlite.gz", "streams_pageable.sqlite.gz"}) {
    const std::string source = std::string(CUOVERLAP_TEST_DATA) + "/" + name;
    const std::string exported = tempTracePath(std::string(name) + ".kineto.json");
    const auto write = runCli("export '" + source + "' --format kineto -o '" + exported + "'");
    INFO(name << ": " << write.err);
    REQUIRE(write.exit_code == 0);
    const auto a = runCli("analyze '" + source + "' --format json");
    const auto b = runCli("analyze '" + exported + "' --format json");
    REQUIRE(a.exit_code == 0);
    REQUIRE(b.exit_code == 0);
    const json da = json::parse(a.out)["traces"][0]["devices"];
    const json db = json::parse(b.out)["traces"][0]["devices"];
    REQUIRE(da.size() == db.size());
    for (std::size_t d = 0; d < da.size(); ++d) {
      for (const char* field : {"kernels", "memcpys", "memsets", "span_ns", "busy_ns", "idle_ns",
                                "sum_ns", "overlap_ratio", "copy_hidden_fraction", "engines",
                                "concurrency_ns", "ideal_ns"}) {
        INFO(name << " device " << d << " " << field);
        CHECK(da[d][field] == db[d][field]);
      }
    }
  }
}

TEST_CASE("export --format kineto -o rank%r.json: one file per rank of a torchrun trace", "[kineto][cli]") {
  const std::string source = std::string(CUOVERLAP_TEST_DATA) + "/ddp/torchrun_record_ddp_ch4.sqlite.gz";
  const std::string dir = tempTracePath("kineto_ranks");
  std::system(("rm -rf '" + dir + "' && mkdir -p '" + dir + "'").c_str());
  const auto write = runCli("export '" + source + "' --format kineto -o '" + dir + "/rank%r.json'");
  INFO(write.err);
  REQUIRE(write.exit_code == 0);
  CHECK(write.err.find("wrote " + dir + "/rank0.json (rank 0:") != std::string::npos);
  CHECK(write.err.find("wrote " + dir + "/rank1.json (rank 1:") != std::string::npos);
  std::set<std::int64_t> devices_seen, pids_seen, bases;
  for (int rank = 0; rank < 2; ++rank) {
    INFO("rank " << rank);
    const json doc = json::parse(cuoverlap::testing::readFile(dir + "/rank" + std::to_string(rank) + ".json"));
    CHECK(doc["distributedInfo"]["rank"] == rank);
    CHECK(doc["distributedInfo"]["world_size"] == 2);
    bases.insert(doc["baseTimeNanoseconds"].get<std::int64_t>());
    std::set<std::int64_t> kernel_devices, host_pids;
    std::vector<std::int64_t> steps;
    double first_ts = 1e300;
    for (const json& e : doc["traceEvents"]) {
      if (e.value("ph", "") == "M") continue;
      first_ts = std::min(first_ts, e["ts"].get<double>());
      const std::string cat = e.value("cat", "");
      if (cat == "kernel") kernel_devices.insert(e["pid"].get<std::int64_t>());
      if (cat == "cuda_runtime" || cat == "cuda_driver") host_pids.insert(e["pid"].get<std::int64_t>());
      const std::string name = e.value("name", "");
      if (name.rfind("ProfilerStep#", 0) == 0) steps.push_back(std::stoll(name.substr(13)));
    }
    // Times relative to this rank's own first event.
    CHECK(first_ts == 0.0);
    REQUIRE(kernel_devices.size() == 1);
    devices_seen.insert(*kernel_devices.begin());
    REQUIRE(host_pids.size() == 1);  // the rank's process only: not the other rank's
    pids_seen.insert(*host_pids.begin());
    // The steady state's iterations, numbered consecutively.
    REQUIRE(steps.size() >= 4);
    std::sort(steps.begin(), steps.end());
    for (std::size_t i = 1; i < steps.size(); ++i) CHECK(steps[i] == steps[i - 1] + 1);
  }
  CHECK(devices_seen.size() == 2);
  CHECK(pids_seen.size() == 2);
  CHECK(bases.size() == 2);
  // One file for two ranks: refused, saying how.
  const auto single = runCli("export '" + source + "' --format kineto -o '" + dir + "/one.json'");
  CHECK(single.exit_code == 2);
  CHECK(single.err.find("holds 2 ranks") != std::string::npos);
  CHECK(single.err.find("%r") != std::string::npos);
  CHECK(cuoverlap::testing::countOf(single.err, "\n") == 1);
  // %r on a trace without ranks: one line, exit 2.
  const auto no_ranks = runCli("export '" + std::string(CUOVERLAP_TEST_DATA) +
                               "/streams_pipeline3.sqlite.gz' --format kineto -o '" + dir + "/r%r.json'");
  CHECK(no_ranks.exit_code == 2);
  CHECK(no_ranks.err.find("no process has a rank") != std::string::npos);
}
