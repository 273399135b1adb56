// Issue 11 through the CLI: gate --scope, analyze --range summaries (one screen, --instances),
// patterns that match nothing, relative windows and `cuoverlap ranges`.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>

#include "cli_test_support.h"

using namespace cuoverlap::testing;

namespace {

const std::string kTorch = std::string(CUOVERLAP_TEST_DATA) + "/frameworks/torch_eager_nvtx_steps.sqlite.gz";
const std::string kCudf = std::string(CUOVERLAP_SHARED_TRACES) + "/nvtxex_cudf-groupby.sqlite.gz";

std::size_t lines(const std::string& text) {
  return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
}

}  // namespace

TEST_CASE("gate --scope judges the steady state, the whole run, and says which", "[scope]") {
  const CliRun steady = runCli("gate " + kTorch + " --max-idle-fraction 0.95");
  INFO(steady.out << steady.err);
  CHECK(steady.exit_code == 0);  // steady state: idle 92.6%
  CHECK(steady.out.find("scope steady state +6.794 s to +6.904 s (38 iterations from nvtx:step N, 2 "
                        "warm-up dropped), 87.1% of the GPU busy time") != std::string::npos);
  const CliRun whole = runCli("gate " + kTorch + " --max-idle-fraction 0.95 --scope whole");
  CHECK(whole.exit_code == 1);   // whole run: idle 99.9%
  CHECK(whole.out.find("scope whole run") != std::string::npos);
  const CliRun none = runCli("gate " + kCudf + " --max-idle-fraction 0.95 --scope steady");
  CHECK(none.exit_code == 2);
  CHECK(none.err.find("no steady state") != std::string::npos);
}

TEST_CASE("analyze --range PATTERN is one summary; --instances adds the slowest in full", "[scope]") {
  const CliRun summary = runCli("analyze " + kTorch + " --range 'step *'");
  INFO(summary.out << summary.err);
  REQUIRE(summary.exit_code == 0);
  CHECK(summary.out.find("range 'step *': 40 instances") != std::string::npos);
  CHECK(summary.out.find("slowest: step 0 at +") != std::string::npos);
  CHECK(lines(summary.out) < 80);  // one screen: the summary, the summed device, merged findings
  CHECK(summary.out.find("+1795") == std::string::npos);  // no absolute time as an offset
  const CliRun detail = runCli("analyze " + kTorch + " --range '/^step [0-9]+$/' --instances 2");
  REQUIRE(detail.exit_code == 0);
  CHECK(detail.out.find("range \"step 0\"") != std::string::npos);
  CHECK(lines(detail.out) > lines(summary.out));
}

TEST_CASE("a range pattern that matches nothing is exit 2 with the closest names", "[scope]") {
  const CliRun run = runCli("analyze " + kCudf + " --range GROUPBY");
  CHECK(run.exit_code == 2);
  CHECK(run.err.find("closest names: 'GROUPBY_AGG'") != std::string::npos);
}

TEST_CASE("--window takes times relative to the first GPU op", "[scope]") {
  const CliRun relative = runCli("analyze " + kCudf + " --window +0ms:+10ms --format json");
  const CliRun absolute = runCli("analyze " + kCudf + " --window 3179608822:3189608822 --format json");
  REQUIRE(relative.exit_code == 0);
  CHECK(relative.out == absolute.out);
}

TEST_CASE("cuoverlap ranges lists names and folded name patterns", "[scope]") {
  const CliRun run = runCli("ranges " + kTorch);
  INFO(run.out << run.err);
  REQUIRE(run.exit_code == 0);
  CHECK(run.out.find("      40 ") != std::string::npos);
  CHECK(run.out.find("step *") != std::string::npos);
  CHECK(run.out.find("setup") != std::string::npos);
}

// Issue 21: the public 4-stream vectorAdd export has no credible steady state, so `auto` judges the
// whole run (overlap 0.036) and fails --min-overlap 0.05, saying what it judged.
TEST_CASE("gate --scope auto on vectorAdd judges the whole run and fails", "[scope]") {
  const std::string gpu4 = std::string(CUOVERLAP_SHARED_TRACES) + "/gpu4_report.sqlite.gz";
  const std::string junit = tempTracePath("gate_scope_junit.xml");
  const CliRun run = runCli("gate " + gpu4 + " --min-overlap 0.05 --force --junit " + junit);
  INFO(run.out << run.err);
  CHECK(run.exit_code == 1);
  CHECK(run.out.find("scope whole run, 100% of the GPU busy time (no steady state found)") != std::string::npos);
  CHECK(readFile(junit).find("<property name=\"scope\" value=\"whole run\"/>") != std::string::npos);
}

// A steady state covering less than half of the run's GPU busy time is not judged under `auto`:
// torch.compile's 6 steady steps hold 1.4% of it (the compile and autotuning hold the rest).
TEST_CASE("gate --scope auto falls back to the whole run when the steady state covers little", "[scope]") {
  const std::string compiled = std::string(CUOVERLAP_TEST_DATA) + "/frameworks/torch_compile.sqlite.gz";
  const CliRun run = runCli("gate " + compiled + " --max-idle-fraction 1");
  INFO(run.out << run.err);
  CHECK(run.exit_code == 0);
  CHECK(run.out.find("covers only 1.4% of the GPU busy time: less than half, so the whole run is judged") !=
        std::string::npos);
  const CliRun steady = runCli("gate " + compiled + " --max-idle-fraction 1 --scope steady");
  CHECK(steady.out.find("scope steady state") != std::string::npos);
}

// --max-rank-skew judges the collectives of the printed scope. The 2-rank DDP job recorded around
// torchrun: inside the ranks' steady windows (steps 1-9) the largest skew is 163.6 us; the warm-up
// step's collectives reach 507.5 us.
TEST_CASE("gate --max-rank-skew uses the scope it prints", "[scope]") {
  const std::string ddp = std::string(CUOVERLAP_TEST_DATA) + "/ddp/torchrun_record_ddp_ch4.sqlite.gz";
  const CliRun steady = runCli("gate " + ddp + " --max-rank-skew 300us");
  INFO(steady.out << steady.err);
  CHECK(steady.exit_code == 0);
  CHECK(steady.out.find("scope steady state") != std::string::npos);
  CHECK(steady.out.find("max_rank_skew  163.6 µs") != std::string::npos);
  const CliRun whole = runCli("gate " + ddp + " --max-rank-skew 300us --scope whole");
  INFO(whole.out << whole.err);
  CHECK(whole.exit_code == 1);
  CHECK(whole.out.find("max_rank_skew  507.5 µs") != std::string::npos);
}

// Issue 21, "say it once": the trimmed DDP rank holds steps 5-9 only, so its steady state holds
// every GPU op of the run; the text report prints one block and says why.
TEST_CASE("a steady state that is the whole run is printed once", "[scope]") {
  const CliRun run = runCli("analyze " + std::string(CUOVERLAP_TEST_DATA) + "/ddp/ddp_rank0.sqlite.gz");
  INFO(run.out << run.err);
  REQUIRE(run.exit_code == 0);
  CHECK(run.out.find("the whole run below is the steady state") != std::string::npos);
  CHECK(run.out.find("-- steady state") == std::string::npos);
  CHECK(run.out.find("iteration period (GPU start to the next's): median 19.171 ms") != std::string::npos);
  CHECK(run.out.find("host range length (not the period): median 6.102 ms") != std::string::npos);
}

// Issue 21, "two ideals": streams_saturating's kernels fill the SMs, so packing them by SM share
// gives a lower bound (18.485 ms) than the compute engine's busy time (18.670 ms); each sentence
// names the bound it uses.
TEST_CASE("the engine bound and the packed bound are named apart", "[scope]") {
  const CliRun run = runCli("analyze " + std::string(CUOVERLAP_TEST_DATA) + "/streams_saturating.sqlite.gz");
  INFO(run.out << run.err);
  REQUIRE(run.exit_code == 0);
  CHECK(run.out.find("engine bound 18.670 ms (busiest engine, back to back)   pipeline efficiency 99.8%") !=
        std::string::npos);
  CHECK(run.out.find("packed bound 18.485 ms (kernels packed onto the SMs they used)") != std::string::npos);
  CHECK(run.out.find("the span exceeds its packed bound") != std::string::npos);
  CHECK(run.out.find("exceeds its ideal") == std::string::npos);
}
