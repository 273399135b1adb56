#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli_test_support.h"

using namespace cuoverlap::testing;

TEST_CASE("gate passes when every threshold is met", "[gate]") {
  const std::string trace = writeHiddenCopyTrace("gate_hidden.sqlite");
  const CliRun run = runCli("gate " + trace +
                            " --min-overlap 0.25 --min-copy-hidden 90% --max-idle-fraction 0.01 "
                            "--min-pipeline-efficiency 0.99");
  INFO(run.out << run.err);
  CHECK(run.exit_code == 0);
  CHECK(run.out.find("PASS  " + trace + "  device 0  overlap_ratio  0.2857 (>= 0.2500)") != std::string::npos);
  CHECK(run.out.find("PASS  " + trace + "  device 0  copy_hidden_fraction  1.0000 (>= 0.9000)") != std::string::npos);
  CHECK(run.out.find("PASS  " + trace + "  device 0  idle_fraction  0.0000 (<= 0.0100)") != std::string::npos);
  CHECK(run.out.find("PASS  " + trace + "  device 0  pipeline_efficiency  1.0000 (>= 0.9900)") != std::string::npos);
  CHECK(run.out.find("gate: 0 of 4 checks failed") != std::string::npos);
}

TEST_CASE("gate fails with exit 1 and says which check failed", "[gate]") {
  const std::string trace = writeSerialTrace("gate_serial.sqlite");
  const CliRun run = runCli("gate " + trace + " --min-overlap 0.25 --min-pipeline-efficiency 0.7");
  INFO(run.out << run.err);
  CHECK(run.exit_code == 1);
  CHECK(run.out.find("FAIL  " + trace + "  device 0  overlap_ratio  0.0000 (>= 0.2500)") != std::string::npos);
  CHECK(run.out.find("PASS  " + trace + "  device 0  pipeline_efficiency  0.7143 (>= 0.7000)") != std::string::npos);
  CHECK(run.out.find("gate: 1 of 2 checks failed") != std::string::npos);
}

TEST_CASE("gate writes JUnit XML with one suite per trace", "[gate]") {
  const std::string hidden = writeHiddenCopyTrace("gate_junit_hidden.sqlite");
  const std::string serial = writeSerialTrace("gate_junit_serial.sqlite");
  const std::string junit = tempTracePath("gate.xml");
  const CliRun run = runCli("gate " + hidden + " " + serial + " --min-copy-hidden 0.5 --junit " + junit);
  INFO(run.out << run.err);
  CHECK(run.exit_code == 1);
  const std::string xml = readFile(junit);
  CHECK(xml.find("<testsuites name=\"cuoverlap gate\" tests=\"2\" failures=\"1\" errors=\"0\" time=\"") !=
        std::string::npos);
  CHECK(countOf(xml, "timestamp=\"") == 2);
  CHECK(countOf(xml, "hostname=\"") == 2);
  CHECK(xml.find("<testsuite name=\"" + hidden + "\" tests=\"1\" failures=\"0\"") != std::string::npos);
  CHECK(xml.find("<testsuite name=\"" + serial + "\" tests=\"1\" failures=\"1\"") != std::string::npos);
  CHECK(countOf(xml, "<testcase ") == 2);
  CHECK(xml.find("<failure message=\"copy_hidden_fraction: 0.0000, expected &gt;= 0.5000\"") != std::string::npos);
}

TEST_CASE("gate --fail-on fails on a finding the trace has", "[gate]") {
  // gpu4_report1: six async copies from pageable memory (docs/findings.md, pageable-memcpy).
  const std::string trace = std::string(CUOVERLAP_SHARED_TRACES) + "/gpu4_report1.sqlite.gz";
  const CliRun failing = runCli("gate " + trace + " --fail-on pageable-memcpy,legacy-default-stream");
  INFO(failing.out << failing.err);
  CHECK(failing.exit_code == 1);
  CHECK(failing.out.find("FAIL  " + trace + "  all devices  finding pageable-memcpy  present: 6 occurrence(s)") !=
        std::string::npos);
  const CliRun passing = runCli("gate " + writeHiddenCopyTrace("gate_clean.sqlite") + " --fail-on pageable-memcpy");
  CHECK(passing.exit_code == 0);
  CHECK(passing.out.find("finding pageable-memcpy  absent (absent)") != std::string::npos);
}

TEST_CASE("gate --device restricts the checks to one device", "[gate]") {
  const std::string trace = writeHiddenCopyTrace("gate_device.sqlite");
  const CliRun run = runCli("gate " + trace + " --device 0 --min-overlap 0.2");
  CHECK(run.exit_code == 0);
  CHECK(countOf(run.out, "device 0  overlap_ratio") == 1);
  const CliRun absent = runCli("gate " + trace + " --device 3 --min-overlap 0.2");
  CHECK(absent.exit_code == 2);
  CHECK(absent.err.find("device 3") != std::string::npos);
}

TEST_CASE("gate reports bad input and usage with exit 2 and one line", "[gate]") {
  const std::string trace = writeHiddenCopyTrace("gate_bad.sqlite");
  const std::string text_file = std::string(CUOVERLAP_TEST_DATA) + "/synthetic/not_a_trace.txt";
  struct Case {
    std::string arguments;
    std::string message;
  };
  const Case cases[] = {
      {"gate /nonexistent/trace.sqlite --min-overlap 0.1", "trace.sqlite"},
      {"gate " + text_file + " --min-overlap 0.1", "not_a_trace.txt"},
      {"gate " + trace, "no checks given"},
      {"gate " + trace + " --min-overlap abc", "--min-overlap: 'abc' is not a number"},
      {"gate " + trace + " --min-overlap 1.5", "--min-overlap: '1.5' is outside 0..1"},
      {"gate " + trace + " --max-idle-fraction 120%", "outside 0..1"},
      {"gate " + trace + " --fail-on no-such-finding", "unknown finding id 'no-such-finding'"},
      {"gate " + trace + " --min-overlap 0.1 --no-such-option", "no-such-option"},
      {"gate --min-overlap 0.1", "files"},
  };
  for (const Case& c : cases) {
    const CliRun run = runCli(c.arguments);
    INFO(c.arguments << "\nstdout: " << run.out << "\nstderr: " << run.err);
    CHECK(run.exit_code == 2);
    CHECK(run.err.find(c.message) != std::string::npos);
    CHECK(run.out.find("PASS") == std::string::npos);
  }
}

TEST_CASE("gate --range checks the metrics of the NVTX range's instances", "[gate]") {
  const std::string trace = std::string(CUOVERLAP_SHARED_TRACES) + "/nvtxex_cudf-groupby.sqlite.gz";
  const CliRun analyzed = runCli("analyze " + trace + " --range GROUPBY_AGG --format json");
  REQUIRE(analyzed.exit_code == 0);
  const auto json = nlohmann::json::parse(analyzed.out);
  const auto& device = json["traces"][0]["devices"][0];
  const double idle = device["idle_ns"].get<double>() / device["span_ns"].get<double>();
  const CliRun run = runCli("gate " + trace + " --range GROUPBY_AGG --max-idle-fraction 0.9");
  INFO(run.out << run.err);
  CHECK(run.exit_code == 0);
  CHECK(run.out.find(fmt::format("device 0  idle_fraction  {:.4f} (<= 0.9000)", idle)) != std::string::npos);
  const CliRun whole = runCli("gate " + trace + " --max-idle-fraction 0.9");
  CHECK(whole.out.find(fmt::format("idle_fraction  {:.4f}", idle)) == std::string::npos);  // differs
  const CliRun missing = runCli("gate " + trace + " --range NO_SUCH_RANGE --min-overlap 0");
  CHECK(missing.exit_code == 2);
  CHECK(missing.err.find("NO_SUCH_RANGE") != std::string::npos);
}
