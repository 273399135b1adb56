// Issue 24, collector side: what the collector finds beside its output is never deleted or
// replaced, and environment text in its warnings reaches the terminal escaped.
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "collector_options.h"
#include "run_registry.h"
#include "trace_writer.h"
#include "../scratch_dir.h"

using namespace cuoverlap::collector;

namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// A directory of its own for one test case, inside the binary's scratch directory.
std::string freshDirectory(const std::string& name) {
  const std::string dir = cuoverlap_test::scratchDir("cuoverlap_robust_output_") + "/" + name;
  std::system(("rm -rf '" + dir + "' && mkdir -p '" + dir + "'").c_str());
  return dir;
}

}  // namespace

TEST_CASE("an existing X-wal, X-shm or X-journal is neither deleted nor replayed: X is refused") {
  const std::string dir = freshDirectory("side");
  for (const char* suffix : {"-wal", "-shm", "-journal"}) {
    const std::string trace = dir + "/trace.sqlite";
    const std::string side = trace + suffix;
    { std::ofstream other(side); other << "someone else's data"; }
    CHECK_THROWS_AS(TraceWriter(trace, 1), WriterError);
    CHECK(slurp(side) == "someone else's data");
    struct stat st {};
    CHECK(::stat(trace.c_str(), &st) != 0);  // X itself was not created either
    std::remove(side.c_str());
  }
  // Without side files the writer works as before, and removes only what it created.
  TraceWriter writer(dir + "/trace.sqlite", 1);
  writer.close();
  writer.removeFile();
}

TEST_CASE("registering never replaces an existing PID.lock") {
  const std::string dir = freshDirectory("lock");
  const std::string lock = dir + "/" + std::to_string(getpid()) + ".lock";
  { std::ofstream existing(lock); existing << "/elsewhere/trace.sqlite\n"; }
  RunRegistration registration;
  const std::string problem = registration.registerTrace(dir, dir + "/mine.sqlite");
  CHECK_FALSE(problem.empty());
  CHECK(slurp(lock) == "/elsewhere/trace.sqlite\n");
  CHECK(::access((dir + "/." + std::to_string(getpid()) + ".lock.new").c_str(), F_OK) != 0);
  std::remove(lock.c_str());
  RunRegistration fresh;
  CHECK(fresh.registerTrace(dir, dir + "/mine.sqlite").empty());
  CHECK(slurp(lock) == dir + "/mine.sqlite\n");
  fresh.withdraw();
}

TEST_CASE("environment values in warnings are escaped and bounded") {
  CHECK(printableForLog("lean") == "lean");
  CHECK(printableForLog("a\x1b]0;title\x07\nb\\") == "a\\x1b]0;title\\x07\\x0ab\\x5c");
  CHECK(printableForLog("\xff\xfe") == "\\xff\\xfe");
  CHECK(printableForLog(std::string(5000, 'x')).size() == 1003);
}
