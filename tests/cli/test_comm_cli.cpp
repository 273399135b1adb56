// The communication and job options of the CLI on the recorded 2-rank DDP traces
// (tests/data/ddp): gate --min-comm-hidden and --max-rank-skew, the job sections of analyze's
// text, Markdown and HTML reports, and --threads.
#include <catch2/catch.hpp>

#include "cli_test_support.h"

using namespace cuoverlap::testing;

namespace {

std::string ranks(const std::string& variant) {
  const std::string dir = std::string(CUOVERLAP_TEST_DATA) + "/ddp/";
  return dir + variant + "_rank0.sqlite.gz " + dir + variant + "_rank1.sqlite.gz";
}

}  // namespace

TEST_CASE("gate --min-comm-hidden passes DDP and fails the one-bucket variant", "[gate][comm]") {
  const CliRun good = runCli("gate " + ranks("ddp") + " --min-comm-hidden 0.8");
  INFO(good.out << good.err);
  CHECK(good.exit_code == 0);
  CHECK(good.out.find("device 0  comm_hidden_fraction  0.8363 (>= 0.8000)") != std::string::npos);
  CHECK(good.out.find("gate: 0 of 2 checks failed") != std::string::npos);
  const CliRun bad = runCli("gate " + ranks("ddp_onebucket") + " --min-comm-hidden 50%");
  INFO(bad.out << bad.err);
  CHECK(bad.exit_code == 1);
  CHECK(bad.out.find("FAIL") != std::string::npos);
  CHECK(bad.out.find("comm_hidden_fraction  0.0000 (>= 0.5000)") != std::string::npos);
}

TEST_CASE("gate --max-rank-skew checks the job's largest skew", "[gate][comm]") {
  const CliRun pass = runCli("gate " + ranks("ddp") + " --max-rank-skew 1ms");
  INFO(pass.out << pass.err);
  CHECK(pass.exit_code == 0);
  CHECK(pass.out.find("PASS  job  all devices  max_rank_skew  307.2 µs (<= 1.000 ms)") != std::string::npos);
  const CliRun fail = runCli("gate " + ranks("fsdp") + " --max-rank-skew 500us --fail-on rank-straggler");
  INFO(fail.out << fail.err);
  CHECK(fail.exit_code == 1);
  CHECK(fail.out.find("FAIL  job  all devices  max_rank_skew  1.708 ms") != std::string::npos);
  CHECK(fail.out.find("FAIL  job  all devices  finding rank-straggler  present") != std::string::npos);
  // One rank alone is no job: the skew check fails rather than pass silently.
  const CliRun alone = runCli("gate " + std::string(CUOVERLAP_TEST_DATA) +
                              "/ddp/ddp_rank0.sqlite.gz --max-rank-skew 1ms");
  CHECK(alone.exit_code == 1);
  CHECK(alone.out.find("no collectives matched across ranks") != std::string::npos);
  CHECK(runCli("gate " + ranks("ddp") + " --max-rank-skew 1parsec").exit_code == 2);
}

TEST_CASE("analyze of rank files shows the per-rank table in every format", "[comm]") {
  const CliRun text = runCli("analyze " + ranks("fsdp") + " --threads 2");
  INFO(text.err);
  REQUIRE(text.exit_code == 0);
  CHECK(text.out.find("== job: 2 ranks (one clock (all ranks on host vm))") != std::string::npos);
  CHECK(text.out.find("rank-straggler") != std::string::npos);
  CHECK(text.out.find("  comm        81 kernels") != std::string::npos);
  const CliRun markdown = runCli("analyze --format markdown " + ranks("fsdp"));
  REQUIRE(markdown.exit_code == 0);
  CHECK(markdown.out.find("## Job: 2 ranks") != std::string::npos);
  CHECK(markdown.out.find("| rank | file | pid | device | span | compute | communication | exposed communication | idle |") != std::string::npos);
  const CliRun html = runCli("analyze --format html " + ranks("ddp"));
  REQUIRE(html.exit_code == 0);
  CHECK(html.out.find("<h2>Job: 2 ranks</h2>") != std::string::npos);
  CHECK(countOf(html.out, "<rect class=\"e-comm\"") >= 2);  // communication shaded on both lanes
  CHECK(runCli("analyze --threads 1 " + ranks("fsdp")).out == text.out);
}
