// The command line itself: help, version, unknown commands, and files that are not exports.
#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>

#include "cli_test_support.h"

using cuoverlap::testing::runCli;

TEST_CASE("unknown commands get one line with the closest command", "[cli]") {
  const auto run = runCli("analyse trace.sqlite");
  CHECK(run.exit_code == 2);
  CHECK(run.err == "cuoverlap: error: unknown command 'analyse' (did you mean 'analyze'? see --help)\n");
  CHECK(run.out.empty());
  const auto far = runCli("frobnicate");
  CHECK(far.exit_code == 2);
  CHECK(far.err.find("unknown command 'frobnicate' (commands: analyze, gate") != std::string::npos);
}

TEST_CASE("help [COMMAND] and -V answer", "[cli]") {
  const auto help = runCli("help");
  CHECK(help.exit_code == 0);
  CHECK(help.out.find("Usage: cuoverlap") != std::string::npos);
  CHECK(help.out.find("analyze") != std::string::npos);
  const auto gate = runCli("help gate");
  CHECK(gate.exit_code == 0);
  CHECK(gate.out.find("--min-overlap") != std::string::npos);
  const auto none = runCli("help nosuch");
  CHECK(none.exit_code == 2);
  CHECK(none.err.find("no command 'nosuch'") != std::string::npos);
  const auto version = runCli("-V");
  CHECK(version.exit_code == 0);
  CHECK(version.out == runCli("--version").out);
  CHECK(version.out.find('.') != std::string::npos);
}

TEST_CASE("an .nsys-rep file gets the nsys export command", "[cli]") {
  const std::string path = cuoverlap::testing::tempTracePath("profile.nsys-rep");
  std::ofstream(path) << "not a database";
  const auto run = runCli("analyze " + path);
  CHECK(run.exit_code == 2);
  const std::string stem = path.substr(0, path.size() - std::string(".nsys-rep").size());
  CHECK(run.err.find("nsys export --type sqlite -o " + stem + ".sqlite " + path) != std::string::npos);
  CHECK(cuoverlap::testing::countOf(run.err, "\n") == 1);
}

TEST_CASE("bare cuoverlap prints the command list", "[cli]") {
  const auto run = runCli("");
  CHECK(run.exit_code == 2);
  for (const char* command : {"analyze", "gate", "export", "diff", "record", "ranges", "lab"}) {
    INFO(command);
    CHECK(run.err.find(command) != std::string::npos);
  }
  CHECK(run.err.find("Kineto") != std::string::npos);
}

TEST_CASE("--help says traces may be Kineto JSON", "[cli]") {
  for (const char* command : {"--help", "analyze --help", "gate --help", "export --help", "diff --help",
                              "ranges --help", "summarize --help"}) {
    INFO(command);
    const auto run = runCli(command);
    CHECK(run.exit_code == 0);
    CHECK(run.out.find("Kineto") != std::string::npos);
  }
}

TEST_CASE("a mistyped option gets the closest option of its command", "[cli]") {
  const std::string trace = std::string(CUOVERLAP_TEST_DATA) + "/streams_pipeline3.sqlite.gz";
  const auto run = runCli("analyze " + trace + " --fromat json");
  CHECK(run.exit_code == 2);
  CHECK(run.err == "cuoverlap: error: unknown option '--fromat' (did you mean '--format'? see analyze --help)\n");
  const auto eq = runCli("analyze " + trace + " --gap-treshold=5us");
  CHECK(eq.exit_code == 2);
  CHECK(eq.err.find("did you mean '--gap-threshold'?") != std::string::npos);
  const auto far = runCli("analyze " + trace + " --zzzzzzzzzz");
  CHECK(far.exit_code == 2);
  CHECK(far.err.find("did you mean") == std::string::npos);
  CHECK(cuoverlap::testing::countOf(far.err, "\n") == 1);
}

TEST_CASE("-o picks the report format from the extension unless --format says otherwise", "[cli]") {
  const std::string trace = std::string(CUOVERLAP_TEST_DATA) + "/streams_pipeline3.sqlite.gz";
  struct Case {
    const char* name;
    const char* starts;
  };
  for (const Case& c : {Case{"report.html", "<!DOCTYPE html>"}, Case{"report.md", "#"},
                        Case{"report.json", "{"}, Case{"report.txt", "=="}}) {
    INFO(c.name);
    const std::string path = cuoverlap::testing::tempTracePath(c.name);
    std::remove(path.c_str());
    const auto run = runCli("analyze " + trace + " -o " + path);
    CHECK(run.exit_code == 0);
    CHECK(cuoverlap::testing::readFile(path).rfind(c.starts, 0) == 0);
    CHECK(run.err.find("cuoverlap: wrote " + path) != std::string::npos);
  }
  const std::string forced = cuoverlap::testing::tempTracePath("forced.html");
  std::remove(forced.c_str());
  const auto run = runCli("analyze " + trace + " --format json -o " + forced);
  CHECK(run.exit_code == 0);
  CHECK(cuoverlap::testing::readFile(forced).rfind("{", 0) == 0);
  CHECK(run.err == "cuoverlap: wrote " + forced + " (json)\n");
  const std::string diff = cuoverlap::testing::tempTracePath("diff.md");
  std::remove(diff.c_str());
  const auto diffed = runCli("diff " + trace + " " + trace + " -o " + diff);
  CHECK(diffed.exit_code == 0);
  CHECK(diffed.err == "cuoverlap: wrote " + diff + " (markdown)\n");
  CHECK(cuoverlap::testing::readFile(diff).rfind("#", 0) == 0);
  const std::string junit = cuoverlap::testing::tempTracePath("gate.xml");
  std::remove(junit.c_str());
  const auto gated = runCli("gate " + trace + " --min-overlap 0 --junit " + junit);
  CHECK(gated.exit_code == 0);
  CHECK(gated.err == "cuoverlap: wrote " + junit + " (JUnit XML)\n");
  // stdout stays quiet on stderr.
  CHECK(runCli("analyze " + trace + " --format json").err.empty());
}
