// CUOVERLAP_SUMMARY=1 without a GPU: fake_traced_app plays traced processes with the collector's
// own output and exit-summary code (exit_summary.h), run directly as a launcher would run a rank
// (no `record`). Each process summarizes its own trace beside it and keeps its exit code; a
// missing, failing or slow `cuoverlap` is one warning; under `record` the collector leaves the
// summary to record, which writes it once.
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "../scratch_dir.h"

namespace {

const std::string& scratchDir() { return cuoverlap_test::scratchDir("cuoverlap_exit_summary_test_"); }

std::string readAll(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

bool exists(const std::string& path) {
  struct stat info {};
  return ::lstat(path.c_str(), &info) == 0;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

std::vector<std::string> linesWith(const std::string& text, const std::string& part) {
  std::vector<std::string> found;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (contains(line, part)) found.push_back(line);
  }
  return found;
}

// Files of `dir` ending in `suffix`, sorted.
std::vector<std::string> filesEndingIn(const std::string& dir, const std::string& suffix) {
  const std::string listing = scratchDir() + "/ls.txt";
  REQUIRE(std::system(("ls " + dir + " > " + listing).c_str()) == 0);
  std::vector<std::string> found;
  std::istringstream lines(readAll(listing));
  for (std::string line; std::getline(lines, line);) {
    if (line.size() > suffix.size() && line.compare(line.size() - suffix.size(), suffix.size(), suffix) == 0) {
      found.push_back(dir + "/" + line);
    }
  }
  return found;
}

std::string newDir(const std::string& name) {
  const std::string dir = scratchDir() + "/" + name;
  REQUIRE(::mkdir(dir.c_str(), 0755) == 0);
  return dir;
}

struct Run {
  int exit_code = -1;
  std::string err;
  double seconds = 0;
};

// `VARIABLES fake_traced_app ARGS`, as a launcher starts a rank with the collector injected.
Run runFake(const std::string& variables, const std::string& app_args,
            const std::string& program = CUOVERLAP_FAKE_APP) {
  const std::string err = scratchDir() + "/stderr.txt";
  const auto start = std::chrono::steady_clock::now();
  const int status = std::system((variables + " " + program + " " + app_args + " 2> " + err).c_str());
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, readAll(err), seconds};
}

std::string summaryOf(const std::string& trace) { return trace.substr(0, trace.size() - 7) + ".cosum"; }

std::string metaValue(const std::string& summary, const std::string& key) {
  sqlite3* db = nullptr;
  std::string value;
  if (sqlite3_open_v2(summary.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(db, "SELECT value FROM summary_meta WHERE key = ?", -1, &stmt, nullptr) == SQLITE_OK) {
      sqlite3_bind_text(stmt, 1, key.c_str(), -1, SQLITE_TRANSIENT);
      if (sqlite3_step(stmt) == SQLITE_ROW) value = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
    }
    sqlite3_finalize(stmt);
  }
  sqlite3_close(db);
  return value;
}

std::string analyzeJson(const std::string& file) {
  const std::string out = file + ".json";
  REQUIRE(std::system((std::string(CUOVERLAP_CLI) + " analyze --format json " + file + " > " + out).c_str()) == 0);
  return readAll(out);
}

std::string summaryVariables(const std::string& output) {
  return std::string("CUOVERLAP_SUMMARY=1 CUOVERLAP_BIN=") + CUOVERLAP_CLI + " CUOVERLAP_OUTPUT='" + output + "'";
}

std::string script(const std::string& name, const std::string& body) {
  const std::string path = scratchDir() + "/" + name;
  std::ofstream(path) << "#!/bin/sh\n" << body << "\n";
  REQUIRE(::chmod(path.c_str(), 0755) == 0);
  return path;
}

}  // namespace

TEST_CASE("CUOVERLAP_SUMMARY=1: NAME.cosum beside the trace at exit, the trace's report, exit code kept") {
  const std::string dir = newDir("one");
  const Run run = runFake(summaryVariables(dir + "/rank-%p.sqlite"), "one 5");
  INFO(run.err);
  CHECK(run.exit_code == 3);
  const std::vector<std::string> traces = filesEndingIn(dir, ".sqlite");
  REQUIRE(traces.size() == 1);
  const std::string summary = summaryOf(traces[0]);
  REQUIRE(exists(summary));
  CHECK(filesEndingIn(dir, ".cosum").size() == 1);
  CHECK(linesWith(run.err, "cuoverlap: summary " + summary).size() == 1);
  CHECK(linesWith(run.err, "warning").empty());
  CHECK(metaValue(summary, "trace") == traces[0]);
  CHECK(analyzeJson(summary) == analyzeJson(traces[0]));
}

TEST_CASE("without CUOVERLAP_BIN: cuoverlap found in ../bin of the file holding the collector's code") {
  // Here that file is the fake app itself, linked into PREFIX/lib beside PREFIX/bin/cuoverlap; its
  // real directory (the build tree) holds no cuoverlap.
  const std::string prefix = newDir("prefix"), dir = newDir("prefix_out");
  REQUIRE(::mkdir((prefix + "/lib").c_str(), 0755) == 0);
  REQUIRE(::mkdir((prefix + "/bin").c_str(), 0755) == 0);
  REQUIRE(::symlink(CUOVERLAP_FAKE_APP, (prefix + "/lib/fake_traced_app").c_str()) == 0);
  REQUIRE(::symlink(CUOVERLAP_CLI, (prefix + "/bin/cuoverlap").c_str()) == 0);
  const Run run = runFake("CUOVERLAP_SUMMARY=1 CUOVERLAP_OUTPUT=" + dir + "/t.sqlite", "one 2",
                          prefix + "/lib/fake_traced_app");
  INFO(run.err);
  CHECK(run.exit_code == 3);
  CHECK(exists(dir + "/t.cosum"));
  CHECK(linesWith(run.err, "cuoverlap: summary " + dir + "/t.cosum").size() == 1);
}

TEST_CASE("fork without exec: each traced process summarizes its own trace, once") {
  const std::string dir = newDir("tree");
  const Run run = runFake(summaryVariables(dir + "/rank%r.sqlite"), "tree");
  INFO(run.err);
  CHECK(run.exit_code == 0);
  const std::vector<std::string> traces = filesEndingIn(dir, ".sqlite");
  REQUIRE(traces.size() == 3);  // the parent (rank pid<PID>), rank 0, rank 1
  CHECK(filesEndingIn(dir, ".cosum").size() == 3);
  for (const std::string& trace : traces) {
    INFO(trace);
    CHECK(metaValue(summaryOf(trace), "trace") == trace);
    CHECK(linesWith(run.err, "cuoverlap: summary " + summaryOf(trace)).size() == 1);
  }
  CHECK(linesWith(run.err, "warning").empty());
}

TEST_CASE("under record's run directory the collector does not summarize") {
  const std::string dir = newDir("run_dir"), run_dir = newDir("run_dir_of_record");
  const Run run = runFake(summaryVariables(dir + "/r-%p.sqlite") + " CUOVERLAP_RUN_DIR=" + run_dir, "one 2");
  INFO(run.err);
  CHECK(run.exit_code == 3);
  CHECK(filesEndingIn(dir, ".sqlite").size() == 1);
  CHECK(filesEndingIn(dir, ".cosum").empty());
  CHECK(run.err.empty());
}

TEST_CASE("record with CUOVERLAP_SUMMARY=1 writes each summary once, as --summary does") {
  const std::string dir = newDir("record");
  const std::string err = scratchDir() + "/record.txt";
  const std::string command = std::string("CUOVERLAP_SUMMARY=1 CUOVERLAP_COLLECTOR=") + CUOVERLAP_COLLECTOR_LIB +
                              " " + CUOVERLAP_CLI + " record -o " + dir + "/rank%r.sqlite -- " +
                              CUOVERLAP_FAKE_APP + " tree 2> " + err;
  const int status = std::system(command.c_str());
  const std::string text = readAll(err);
  INFO(text);
  CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));
  CHECK(linesWith(text, "  summary: " + dir + "/rank").size() == 3);
  CHECK(linesWith(text, "warning").empty());  // a second writer would find the summary there
  CHECK(filesEndingIn(dir, ".cosum").size() == 3);
}

TEST_CASE("no cuoverlap command: one warning, the program's exit code, the trace intact") {
  const std::string dir = newDir("missing");
  const Run run = runFake("CUOVERLAP_SUMMARY=1 CUOVERLAP_BIN=" + dir + "/no-such-cuoverlap CUOVERLAP_OUTPUT=" +
                              dir + "/t.sqlite",
                          "one 2");
  INFO(run.err);
  CHECK(run.exit_code == 3);
  const std::vector<std::string> warnings = linesWith(run.err, "cuoverlap: warning");
  REQUIRE(warnings.size() == 1);
  CHECK(contains(warnings[0], "CUOVERLAP_BIN=" + dir + "/no-such-cuoverlap is not an executable file"));
  CHECK(std::count(run.err.begin(), run.err.end(), '\n') == 1);
  CHECK(exists(dir + "/t.sqlite"));
  CHECK_FALSE(exists(dir + "/t.cosum"));
}

TEST_CASE("a failing summarize: one escaped warning with its reason, exit code kept") {
  const std::string dir = newDir("failing");
  const std::string bad = script("bad-cuoverlap", "printf 'cuoverlap: error: broken \\033[31m trace\\n' >&2\nexit 2");
  const Run run = runFake("CUOVERLAP_SUMMARY=1 CUOVERLAP_BIN=" + bad + " CUOVERLAP_OUTPUT=" + dir + "/t.sqlite", "one 2");
  INFO(run.err);
  CHECK(run.exit_code == 3);
  const std::vector<std::string> lines = linesWith(run.err, "cuoverlap");
  REQUIRE(lines.size() == 1);
  CHECK(lines[0] == "cuoverlap: warning: no summary of " + dir + "/t.sqlite: the summarizer exited with 2: "
                    "broken \\x1b[31m trace; `cuoverlap summarize` makes it later");
  CHECK(exists(dir + "/t.sqlite"));
}

TEST_CASE("a summarizer past CUOVERLAP_SUMMARY_TIMEOUT is stopped: one warning, exit code kept") {
  const std::string dir = newDir("slow");
  const std::string slow = script("slow-cuoverlap", "exec sleep 60");
  const Run run = runFake("CUOVERLAP_SUMMARY=1 CUOVERLAP_SUMMARY_TIMEOUT=1 CUOVERLAP_BIN=" + slow +
                              " CUOVERLAP_OUTPUT=" + dir + "/t.sqlite",
                          "one 2");
  INFO(run.err);
  CHECK(run.exit_code == 3);
  CHECK(run.seconds < 20);
  const std::vector<std::string> warnings = linesWith(run.err, "cuoverlap: warning");
  REQUIRE(warnings.size() == 1);
  CHECK(contains(warnings[0], "summarizing took more than 1 s (CUOVERLAP_SUMMARY_TIMEOUT); stopped it"));
  CHECK_FALSE(exists(dir + "/t.cosum"));
}

TEST_CASE("an existing summary is never replaced") {
  const std::string dir = newDir("existing");
  std::ofstream(dir + "/t.cosum") << "mine";
  const Run run = runFake(summaryVariables(dir + "/t.sqlite"), "one 2");
  INFO(run.err);
  CHECK(run.exit_code == 3);
  CHECK(readAll(dir + "/t.cosum") == "mine");
  const std::vector<std::string> warnings = linesWith(run.err, "cuoverlap: warning: no summary of " + dir + "/t.sqlite");
  REQUIRE(warnings.size() == 1);
  CHECK(contains(warnings[0], "exists"));
}
