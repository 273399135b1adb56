// Issue 22 through the command: `analyze --kernels N`, `analyze --iterations NAME` and the
// progress line on stderr.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "cli_test_support.h"

using namespace cuoverlap::testing;

namespace {

const std::string kPageable = std::string(CUOVERLAP_TEST_DATA) + "/streams_pageable.sqlite.gz";

// 15 kernels, two of them templated kernels that differ only in their template arguments.
std::string writeKernelsTrace() {
  const std::string path = tempTracePath("tables_cli_kernels.sqlite");
  SyntheticTrace trace(path);
  trace.addDevice(0, "Synthetic GPU");
  for (int i = 0; i < 15; ++i) {
    SyntheticOp op{cuoverlap::OpKind::kKernel, 1'000 + i * 10'000, 1'000 + i * 10'000 + 5'000 - i * 10};
    op.name = i == 0 ? "void ns::gemm<float, 128>(float*)" : i == 1 ? "void ns::gemm<float, 256>(float*)"
                                                                    : "k" + std::to_string(i);
    trace.addOp(op);
  }
  return path;
}

std::size_t lines(const std::string& text) {
  return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
}

}  // namespace

TEST_CASE("analyze --kernels N: that many rows, names distinct; JSON has all", "[tables]") {
  const std::string trace = writeKernelsTrace();
  const CliRun text = runCli("analyze " + trace + " --kernels 8");
  INFO(text.out << text.err);
  REQUIRE(text.exit_code == 0);
  CHECK(text.out.find("void ns::gemm<float, 128>(…)") != std::string::npos);
  CHECK(text.out.find("void ns::gemm<float, 256>(…)") != std::string::npos);
  CHECK(countOf(text.out, "  k") == 6);
  CHECK(text.out.find("... 7 more kernel names") != std::string::npos);
  const CliRun plain = runCli("analyze " + trace);
  CHECK(countOf(plain.out, "  k") == 3);  // 5 rows by default
  const CliRun json = runCli("analyze " + trace + " --format json --kernels 3");
  REQUIRE(json.exit_code == 0);
  CHECK(nlohmann::json::parse(json.out)["traces"][0]["devices"][0]["kernel_summary"].size() == 15);
  const CliRun html = runCli("analyze " + trace + " --format html --kernels 4");
  CHECK(countOf(html.out, "<code>k") == 2);
  CHECK(runCli("analyze " + trace + " --kernels -1").exit_code == 2);
}

TEST_CASE("analyze --iterations NAME: the steady state of that range; an unknown name is one line", "[tables]") {
  const CliRun chosen = runCli("analyze " + kPageable + " --iterations 'tile *'");
  INFO(chosen.out << chosen.err);
  REQUIRE(chosen.exit_code == 0);
  CHECK(chosen.out.find("steady state: 40 iterations from nvtx:tile N") != std::string::npos);
  const CliRun unknown = runCli("analyze " + kPageable + " --iterations tiel");
  CHECK(unknown.exit_code == 2);
  CHECK(unknown.out.empty());
  CHECK(lines(unknown.err) == 1);
  CHECK(unknown.err.find("--iterations tiel: no NVTX range is named so; known ranges: 'tile *' (40)") !=
        std::string::npos);
  const CliRun with_range = runCli("analyze " + kPageable + " --iterations 'tile *' --range 'tile *'");
  CHECK(with_range.exit_code == 2);
  CHECK(lines(with_range.err) == 1);
}

namespace {

// The start (µs, as written) of every ProfilerStep#N event of a Kineto export.
std::vector<double> profilerStepStarts(const std::string& path) {
  std::vector<double> starts;
  const nlohmann::json trace = nlohmann::json::parse(readFile(path));
  for (const auto& event : trace["traceEvents"]) {
    if (event.value("name", "").rfind("ProfilerStep#", 0) == 0) starts.push_back(event["ts"].get<double>());
  }
  return starts;
}

}  // namespace

// The same option, the same meaning and the same error in every command that has a steady state.
TEST_CASE("--iterations NAME in gate, diff, export and summarize, as in analyze", "[tables]") {
  // streams_pageable: 40 `tile N` ranges, each holding one `h2d`, `compute` and `d2h`.
  const CliRun gate = runCli("gate " + kPageable + " --iterations compute --min-overlap 0");
  INFO(gate.out << gate.err);
  CHECK(gate.exit_code == 0);
  CHECK(gate.out.find("(40 iterations from nvtx:compute, ") != std::string::npos);
  CHECK(runCli("gate " + kPageable + " --min-overlap 0").out.find("from nvtx:tile N") != std::string::npos);

  const CliRun diff = runCli("diff " + kPageable + " " + kPageable + " --iterations compute --format json");
  INFO(diff.err);
  REQUIRE(diff.exit_code == 0);
  const auto diffed = nlohmann::json::parse(diff.out);
  CHECK(diffed["before_scope"].get<std::string>().find("from nvtx:compute") != std::string::npos);
  CHECK(diffed["after_scope"].get<std::string>().find("from nvtx:compute") != std::string::npos);

  // Kineto: ProfilerStep#N are the chosen ranges' iterations, which start later than the tiles.
  const std::string tiles = tempTracePath("iterations_tiles.json");
  const std::string computes = tempTracePath("iterations_compute.json");
  REQUIRE(runCli("export " + kPageable + " --format kineto --force -o " + tiles).exit_code == 0);
  const CliRun exported = runCli("export " + kPageable + " --format kineto --iterations compute --force -o " + computes);
  INFO(exported.err);
  REQUIRE(exported.exit_code == 0);
  const std::vector<double> tile_steps = profilerStepStarts(tiles);
  const std::vector<double> compute_steps = profilerStepStarts(computes);
  REQUIRE(tile_steps.size() == 40);
  REQUIRE(compute_steps.size() == 40);
  CHECK(compute_steps.front() > tile_steps.front());

  // A summary made with --iterations answers only to the same option.
  const std::string summary = tempTracePath("iterations_compute.cosum");
  REQUIRE(runCli("summarize " + kPageable + " --iterations compute --force -q -o " + summary).exit_code == 0);
  const CliRun same = runCli("analyze " + summary + " --iterations compute");
  INFO(same.err);
  CHECK(same.exit_code == 0);
  CHECK(same.out.find("steady state: 40 iterations from nvtx:compute") != std::string::npos);
  const CliRun other = runCli("analyze " + summary);
  CHECK(other.exit_code == 2);
  CHECK(other.err.find("summarized with other options") != std::string::npos);

  // Bad input: an unknown name, and options that leave the steady state out, one line each.
  struct Bad {
    std::string command, says;
  };
  const std::vector<Bad> bad = {
      {"gate " + kPageable + " --iterations tiel --min-overlap 0", "--iterations tiel: no NVTX range is named so"},
      {"export " + kPageable + " --format kineto --iterations tiel -o " + computes + " --force",
       "--iterations tiel: no NVTX range is named so"},
      {"diff " + kPageable + " " + kPageable + " --iterations tiel", "--iterations tiel: no NVTX range is named so"},
      {"analyze " + kPageable + " --iterations compute --range compute",
       "--iterations chooses the steady state's iterations, which --range leaves out"},
      {"analyze " + kPageable + " --iterations compute --range compute --window 0:1",
       "--iterations chooses the steady state's iterations, which --range and --window leave out"},
      {"gate " + kPageable + " --iterations compute --range compute --min-overlap 0",
       "--iterations chooses the steady state's iterations, which --range leaves out"},
      {"gate " + kPageable + " --iterations compute --scope whole --min-overlap 0",
       "--iterations chooses the steady state's iterations, which --scope whole leaves out"},
      {"diff " + kPageable + " " + kPageable + " --iterations compute --scope whole",
       "--iterations chooses the steady state's iterations, which --scope whole leaves out"},
      {"export " + kPageable + " --iterations compute -o " + computes + " --force",
       "--iterations chooses the steady state's iterations, which --format perfetto leaves out"},
      {"summarize " + kPageable + " --iterations compute --window 0:1 -o " + summary + " --force",
       "--iterations chooses the steady state's iterations, which --window leaves out"},
  };
  for (const Bad& b : bad) {
    const CliRun run = runCli(b.command);
    INFO(b.command << "\n" << run.err);
    CHECK(run.exit_code == 2);
    CHECK(lines(run.err) == 1);
    CHECK(run.err.find(b.says) != std::string::npos);
  }
}

namespace {

// Runs the command with CUOVERLAP_PROGRESS set (the progress line whatever stderr is).
CliRun runWithProgress(const std::string& arguments, const char* mode) {
  setenv("CUOVERLAP_PROGRESS", mode, 1);
  CliRun run = runCli(arguments);
  unsetenv("CUOVERLAP_PROGRESS");
  return run;
}

}  // namespace

TEST_CASE("progress: phase and percentage overwritten in place on stderr, erased at the end", "[progress]") {
  const CliRun forced = runWithProgress("analyze " + kPageable, "always");
  INFO(forced.err);
  REQUIRE(forced.exit_code == 0);
  CHECK(forced.err.rfind("\r\x1b[Kcuoverlap: ", 0) == 0);
  CHECK(forced.err.find("\r\x1b[Kcuoverlap: analyzing " + kPageable + " 100%") != std::string::npos);
  CHECK(forced.err.size() >= 4);
  CHECK(forced.err.substr(forced.err.size() - 4) == "\r\x1b[K");  // erased before the report
  CHECK(forced.err.find('\n') == std::string::npos);                // one line, rewritten
  CHECK(forced.out == runCli("analyze " + kPageable).out);         // the report is unchanged

  // Quiet when stderr is not a terminal, with --quiet, or with CUOVERLAP_PROGRESS=never.
  CHECK(runCli("analyze " + kPageable).err.empty());
  CHECK(runWithProgress("analyze " + kPageable + " --quiet", "always").err.empty());
  CHECK(runWithProgress("analyze " + kPageable, "never").err.empty());

  const std::string out = tempTracePath("tables_progress.json");
  const CliRun exported = runWithProgress("export " + kPageable + " -o " + out, "always");
  INFO(exported.err);
  REQUIRE(exported.exit_code == 0);
  const auto erased = exported.err.find("writing the Perfetto trace 100%\r\x1b[K");
  CHECK(erased != std::string::npos);
  CHECK(exported.err.find("cuoverlap: wrote ") > erased);  // the note on a line of its own after it
  CHECK(runWithProgress("export " + kPageable + " -o " + out + " --force -q", "always").err.find("\r") ==
        std::string::npos);
}
