// A trace recorded in a capture window (record --capture): the analyzer's report says so, from the
// session rows the collector writes (here added to a recorded trace with sqlite3).
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <string>

#include "cli_test_support.h"

using cuoverlap::testing::runCli;
using nlohmann::json;

namespace {

// streams_pipeline3.sqlite.gz inflated to a plain copy with the capture rows; returns its path.
std::string withSession(const std::string& name, const std::string& rows) {
  const std::string path = cuoverlap::testing::tempTracePath(name);
  const std::string copy = "gzip -dc '" + std::string(CUOVERLAP_TEST_DATA) + "/streams_pipeline3.sqlite.gz' > '" + path + "'";
  REQUIRE(std::system(copy.c_str()) == 0);
  const std::string sql = "sqlite3 '" + path + "' \"INSERT INTO CUOVERLAP_SESSION (key, value) VALUES " + rows + "\"";
  REQUIRE(std::system(sql.c_str()) == 0);
  return path;
}

std::int64_t firstOpStart(const std::string& path) {
  const auto run = runCli("analyze '" + path + "' --format json");
  REQUIRE(run.exit_code == 0);
  return json::parse(run.out)["traces"][0]["first_op_start"].get<std::int64_t>();
}

}  // namespace

TEST_CASE("analyze: a trace recorded in a capture window says so, with how long it was open", "[cli][capture]") {
  const std::int64_t first = firstOpStart(std::string(CUOVERLAP_TEST_DATA) + "/streams_pipeline3.sqlite.gz");
  const std::string open = std::to_string(first + 2000000), close = std::to_string(first + 52000000);
  const std::string path = withSession("capture_open.sqlite",
      "('capture', 'nvtx:step@50-60'), ('capture_opened', '1'), ('capture_open_ns', '" + open +
      "'), ('capture_close_ns', '" + close + "'), ('capture_instances', '70')");
  const auto text = runCli("analyze '" + path + "'");
  REQUIRE(text.exit_code == 0);
  CHECK(text.out.find("trace is a capture window: nvtx:step@50-60 (open 50.000 ms, from +2.000 ms); nothing "
                      "outside it was recorded\n") != std::string::npos);
  const auto report = runCli("analyze '" + path + "' --format json");
  const json capture = json::parse(report.out)["traces"][0]["capture"];
  CHECK(capture["spec"] == "nvtx:step@50-60");
  CHECK(capture["opened"] == true);
  CHECK(capture["instances"] == 70);
  const auto markdown = runCli("analyze '" + path + "' --format markdown");
  CHECK(markdown.out.find("trace is a capture window: nvtx:step\\@50-60 (open 50.000 ms") != std::string::npos);
  const auto html = runCli("analyze '" + path + "' --format html");
  CHECK(html.out.find("<p class=\"warn\">trace is a capture window: nvtx:step@50-60 (open 50.000 ms") !=
        std::string::npos);
}

TEST_CASE("analyze: a window that never opened says so", "[cli][capture]") {
  const std::string path = withSession("capture_never.sqlite",
      "('capture', 'nvtx:step@100-110'), ('capture_opened', '0'), ('capture_instances', '12')");
  const auto text = runCli("analyze '" + path + "'");
  REQUIRE(text.exit_code == 0);
  CHECK(text.out.find("trace is a capture window that never opened: nvtx:step@100-110 (the program ran 12 "
                      "instance(s) of the range); it holds no GPU activity") != std::string::npos);
  const auto html = runCli("analyze '" + path + "' --format html");
  CHECK(html.out.find("trace is a capture window that never opened: nvtx:step@100-110") != std::string::npos);
}

// A trace read up to its last commit (no complete=1 in its session): every report warns.
TEST_CASE("analyze: an unfinished trace is a warning in every report, HTML included", "[cli][capture]") {
  const std::string path = withSession("unfinished.sqlite", "('unused', '0'); UPDATE CUOVERLAP_SESSION SET value = '0' "
                                                          "WHERE key = 'complete'");
  const auto text = runCli("analyze '" + path + "'");
  REQUIRE(text.exit_code == 0);
  CHECK(text.out.find("warning: unfinished trace: the session table has no complete=1") != std::string::npos);
  const auto html = runCli("analyze '" + path + "' --format html");
  CHECK(html.out.find("<p class=\"warn\"><b>Warning:</b> unfinished trace: the session table has no complete=1") !=
        std::string::npos);
}

// A trace whose collector dropped records (the lab's 6,120-run batch of programs with many small
// copies: 574,545, the writer busy 30 s of 63): every report warns that ops may be missing.
TEST_CASE("analyze: records the collector dropped are a warning in every report", "[cli][capture]") {
  const std::string path = withSession("dropped.sqlite", "('unused', '0'); UPDATE CUOVERLAP_SESSION SET value = "
                                                       "'574545' WHERE key = 'dropped_records'");
  const auto text = runCli("analyze '" + path + "'");
  REQUIRE(text.exit_code == 0);
  CHECK(text.out.find("warning: the collector dropped 574545 activity records") != std::string::npos);
  const json report = json::parse(runCli("analyze '" + path + "' --format json").out);
  CHECK(report.dump().find("the collector dropped 574545 activity records") != std::string::npos);
  const auto html = runCli("analyze '" + path + "' --format html");
  CHECK(html.out.find("<b>Warning:</b> the collector dropped 574545 activity records") != std::string::npos);
  // None dropped (the recorded trace's own row): no warning.
  const std::string clean = std::string(CUOVERLAP_TEST_DATA) + "/streams_pipeline3.sqlite.gz";
  CHECK(runCli("analyze '" + clean + "'").out.find("the collector dropped") == std::string::npos);
}

TEST_CASE("analyze: a trace without capture rows has no capture line or key", "[cli][capture]") {
  const std::string path = std::string(CUOVERLAP_TEST_DATA) + "/streams_pipeline3.sqlite.gz";
  CHECK(runCli("analyze '" + path + "'").out.find("capture window") == std::string::npos);
  CHECK_FALSE(json::parse(runCli("analyze '" + path + "' --format json").out)["traces"][0].contains("capture"));
}

// Recorded on an nvidia-h100-x1 host (H100 80GB HBM3, driver 580.159.04) by
// `KEEP_TRACE=... scripts/gpu/capture_check.sh BUILD 1`: scripts/frameworks/torch_mlp.py, 100 steps
// of an NVTX range `step`, under `record --capture nvtx:step@50-60` (tests/data/capture/README.md).
TEST_CASE("a PyTorch job recorded with --capture nvtx:step@50-60 holds exactly those 11 steps", "[cli][capture]") {
  const std::string path = std::string(CUOVERLAP_TEST_DATA) + "/capture/torch_steps_50_60.sqlite.gz";
  const auto run = runCli("analyze '" + path + "' --format json");
  REQUIRE(run.exit_code == 0);
  const json trace = json::parse(run.out)["traces"][0];
  CHECK(trace["capture"]["spec"] == "nvtx:step@50-60");
  CHECK(trace["capture"]["opened"] == true);
  CHECK(trace["steady_state"]["source"] == "nvtx:step");
  CHECK(trace["steady_state"]["iterations"] == 11);
  CHECK(trace["steady_state"]["warmup_dropped"] == 0);
  // Every GPU op lies inside the window, so inside the 11 steps: the steady state is the run.
  const auto ranges = runCli("ranges '" + path + "'");
  REQUIRE(ranges.exit_code == 0);
  CHECK(ranges.out.find("11 instances") != std::string::npos);
  CHECK(ranges.out.find("100.0%  step") != std::string::npos);
  CHECK(runCli("analyze '" + path + "'").out.find("nothing outside it was recorded") != std::string::npos);
}
