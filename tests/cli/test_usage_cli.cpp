// The command line itself: help, version, unknown commands, and files that are not exports.
#include <catch2/catch.hpp>

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
