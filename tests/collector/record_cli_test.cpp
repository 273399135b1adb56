// `cuoverlap record` failure modes that need no GPU: an output it cannot write, a collector (or
// CUPTI) that cannot load, an existing file. In each the program must run untraced with its own
// exit code, and record must say why in one line. The program is a shell that reports whether
// the collector was injected into its environment.
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "../scratch_dir.h"

namespace {

struct Run {
  int exit_code = -1;
  std::vector<std::string> stderr_lines;
  std::string program_saw;  // "ran <CUDA_INJECTION64_PATH or unset>" when the program ran
};

const std::string& scratchDir() { return cuoverlap_test::scratchDir("cuoverlap_record_cli_"); }

std::string readAll(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// Runs `[ENV] cuoverlap record ARGS -- sh -c '...; exit 7'` through the shell.
Run record(const std::string& env, const std::string& args) {
  std::string mark = scratchDir() + "/program_ran", err = scratchDir() + "/stderr.txt";
  ::unlink(mark.c_str());
  std::string program = "sh -c 'echo ran ${CUDA_INJECTION64_PATH:-unset} > " + mark + "; exit 7'";
  std::string command = env + " " + CUOVERLAP_CLI + " record " + args + " -- " + program + " 2> " + err;
  int status = std::system(command.c_str());
  Run run;
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::istringstream lines(readAll(err));
  for (std::string line; std::getline(lines, line);) run.stderr_lines.push_back(line);
  std::string saw = readAll(mark);
  run.program_saw = saw.empty() ? "" : saw.substr(0, saw.find('\n'));
  return run;
}

bool exists(const std::string& path) {
  struct stat info {};
  return ::stat(path.c_str(), &info) == 0;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("record: an output directory that does not exist → one warning, untraced, exit code kept") {
  std::string output = scratchDir() + "/no-such-dir/run.sqlite";
  Run run = record("", "-o " + output);
  CHECK(run.exit_code == 7);
  CHECK(run.program_saw == "ran unset");  // the collector was not injected
  REQUIRE(run.stderr_lines.size() == 1);
  CHECK(contains(run.stderr_lines[0], "warning"));
  CHECK(contains(run.stderr_lines[0], "cannot write " + output));
  CHECK(contains(run.stderr_lines[0], "untraced"));
  CHECK_FALSE(exists(output));
}

TEST_CASE("record: an output under a regular file → one warning, untraced, exit code kept") {
  std::string file = scratchDir() + "/plain_file";
  std::ofstream(file) << "x";
  Run run = record("", "-o " + file + "/run.sqlite");
  CHECK(run.exit_code == 7);
  CHECK(run.program_saw == "ran unset");
  REQUIRE(run.stderr_lines.size() == 1);
  CHECK(contains(run.stderr_lines[0], "is not a directory"));
}

TEST_CASE("record: a collector that cannot load (CUPTI missing) → dlerror in one line, untraced") {
  std::string output = scratchDir() + "/unloadable.sqlite";
  SECTION("not an ELF file") {
    std::string fake = scratchDir() + "/libfake_collector.so";
    std::ofstream(fake) << "not a shared library";
    Run run = record("CUOVERLAP_COLLECTOR=" + fake, "-o " + output);
    CHECK(run.exit_code == 7);
    CHECK(run.program_saw == "ran unset");
    REQUIRE(run.stderr_lines.size() == 1);
    CHECK(contains(run.stderr_lines[0], "cannot load the collector or CUPTI"));
    CHECK(contains(run.stderr_lines[0], fake));
  }
  SECTION("missing file") {
    Run run = record("CUOVERLAP_COLLECTOR=/nonexistent/libcuoverlap_collector.so", "-o " + output);
    CHECK(run.exit_code == 7);
    CHECK(run.program_saw == "ran unset");
    REQUIRE(run.stderr_lines.size() == 1);
    CHECK(contains(run.stderr_lines[0], "No such file"));
  }
  CHECK_FALSE(exists(output));
}

TEST_CASE("record: an existing output is kept without --force, and the program does not run") {
  std::string output = scratchDir() + "/existing.sqlite";
  std::ofstream(output) << "keep me";
  Run run = record("", "-o " + output);
  CHECK(run.exit_code == 2);
  CHECK(run.program_saw.empty());
  REQUIRE(run.stderr_lines.size() == 1);
  CHECK(contains(run.stderr_lines[0], "--force"));
  CHECK(readAll(output) == "keep me");
}

#ifdef CUOVERLAP_COLLECTOR_LIB
// The real collector is injected; a program that never calls CUDA leaves no trace, and record
// says so instead of printing an empty summary.
TEST_CASE("record: a program without CUDA calls → injected, no trace, record says so") {
  std::string output = scratchDir() + "/no_cuda.sqlite";
  Run run = record("CUOVERLAP_COLLECTOR=" CUOVERLAP_COLLECTOR_LIB, "-o " + output);
  CHECK(run.exit_code == 7);
  CHECK(run.program_saw == std::string("ran ") + CUOVERLAP_COLLECTOR_LIB);
  REQUIRE(run.stderr_lines.size() == 1);
  CHECK(contains(run.stderr_lines[0], "no trace written to " + output));
  // No collector warning was printed, so record must not point at one.
  CHECK(contains(run.stderr_lines[0], "made no CUDA call"));
  CHECK_FALSE(contains(run.stderr_lines[0], "warning is above"));
  CHECK_FALSE(exists(output));
}

// What record prints of the traces it found quotes what the traced process wrote in its session
// (its command line, its record counts, the capture window) and the user's paths: each line
// inert and bounded. The traced program here is a shell that registers a part file as the
// collector would: a committed trace with a hostile session, under its own pid.
TEST_CASE("record: the summary of a traced process quoting hostile session text is inert") {
  const std::string script = scratchDir() + "/fake_traced.sh";
  std::ofstream(script) << "d=$CUOVERLAP_RUN_DIR\n"
                           "part=$d/$$.sqlite\n"
                           "gzip -dc " CUOVERLAP_TEST_DATA "/streams_pageable.sqlite.gz > \"$part\"\n"
                           "v=$(printf '\\033]0;pwned\\007\\r\\n[ok]\\342\\200\\256\\302\\233\\377')\n"
                           "sqlite3 \"$part\" \"UPDATE CUOVERLAP_SESSION SET value = '$$' WHERE key = 'pid';"
                           " UPDATE CUOVERLAP_SESSION SET value = '$(date +%s%N)' WHERE key = 'start_ns';"
                           " UPDATE CUOVERLAP_SESSION SET value = 'cmd $v' WHERE key = 'command';"
                           " UPDATE CUOVERLAP_SESSION SET value = 'n $v' WHERE key = 'dropped_records';"
                           " INSERT INTO CUOVERLAP_SESSION VALUES ('records.$v', '1'), ('capture', 'nvtx:$v');"
                           // A collector's part file has no process table yet: merging adds it.
                           " DROP TABLE CUOVERLAP_PROCESS_SESSION;\"\n"
                           "echo \"$part\" > \"$d/$$.lock\"\n"
                           "exit 7\n";
  const auto record = [&](const std::string& output) {
    const std::string err = scratchDir() + "/summary_stderr.txt";
    const std::string command = std::string("CUOVERLAP_COLLECTOR=") + CUOVERLAP_COLLECTOR_LIB + " " + CUOVERLAP_CLI +
                                " record --force -o '" + output + "' -- sh " + script + " 2> " + err;
    const int status = std::system(command.c_str());
    CHECK(WEXITSTATUS(status) == 7);
    return readAll(err);
  };
  const auto expectInert = [](const std::string& text) {
    for (const char* raw : {"\x1b", "\r", "\x07", "\xe2\x80\xae", "\xc2\x9b", "\xff"}) {
      CHECK_FALSE(contains(text, raw));
    }
  };
  // One merged trace, whose name carries controls too (a user's path).
  const std::string output = scratchDir() + "/out\x1b[2J\r.sqlite";
  const std::string merged = record(output);
  INFO(merged);
  CHECK(contains(merged, "cuoverlap: trace " + scratchDir() + "/out\\x1b[2J\\x0d.sqlite\n"));
  CHECK(contains(merged, "  records: \\x1b]0;pwned\\x07\\x0d\\x0a[ok]\\u202e\\u009b"));
  CHECK(contains(merged, "  capture window: nvtx:\\x1b]0;pwned"));
  CHECK(contains(merged, "pid "));
  CHECK(contains(merged, ": cmd \\x1b]0;pwned\\x07\\x0d\\x0a[ok]"));  // the process's command line
  expectInert(merged);
  CHECK(exists(output));
  // One trace per process (%p): its own session as the process wrote it.
  const std::string per_process = record(scratchDir() + "/per\x1b[2J-%p.sqlite");
  INFO(per_process);
  CHECK(contains(per_process, "  dropped records: n \\x1b]0;pwned"));
  CHECK(contains(per_process, "  process: pid "));
  expectInert(per_process);
}

// --capture signal: each SIGUSR2 to record is acknowledged in a line, also before any traced
// process started CUDA (here none ever does: record then says the program made no CUDA call).
TEST_CASE("record --capture signal: each SIGUSR2 gets a line, also before CUDA starts") {
  const std::string output = scratchDir() + "/signal.sqlite";
  const std::string err = scratchDir() + "/signal_stderr.txt";
  const std::string command = std::string("CUOVERLAP_COLLECTOR=") + CUOVERLAP_COLLECTOR_LIB + " " + CUOVERLAP_CLI +
                              " record --capture signal -o " + output +
                              " -- sh -c 'kill -USR2 $PPID; sleep 0.2; kill -USR2 $PPID; sleep 0.2; exit 7' 2> " + err;
  const int status = std::system(command.c_str());
  CHECK(WEXITSTATUS(status) == 7);
  std::istringstream lines(readAll(err));
  std::vector<std::string> said;
  for (std::string line; std::getline(lines, line);) said.push_back(line);
  INFO(readAll(err));
  REQUIRE(said.size() == 4);
  CHECK(contains(said[0], "'kill -USR2 "));
  CHECK(said[1] == "cuoverlap: SIGUSR2: capture window open in every traced process (one that has not started "
                   "CUDA yet opens it when it does)");
  CHECK(said[2] == "cuoverlap: SIGUSR2: capture window closed");
  CHECK(contains(said[3], "made no CUDA call"));
}

// A collector that warned (here: a fake one leaves the mark a real one leaves next to its warning)
// is pointed at; tested through the mark, since no GPU is needed to print the warning itself.
TEST_CASE("record: a collector that warned → record points at the warning") {
  std::string output = scratchDir() + "/warned.sqlite";
  std::string mark_program =
      "sh -c 'touch \"$CUOVERLAP_RUN_DIR/collector-warned\"; exit 7'";
  std::string err = scratchDir() + "/warned_stderr.txt";
  std::string command = std::string("CUOVERLAP_COLLECTOR=") + CUOVERLAP_COLLECTOR_LIB + " " + CUOVERLAP_CLI +
                        " record -o " + output + " -- " + mark_program + " 2> " + err;
  int status = std::system(command.c_str());
  CHECK(WEXITSTATUS(status) == 7);
  std::string text = readAll(err);
  CHECK(contains(text, "warning is above"));
  CHECK_FALSE(contains(text, "made no CUDA call"));
}
#endif

// --gpu-metrics US reaches the traced program as CUOVERLAP_GPU_METRICS (docs/collector.md).
TEST_CASE("record --gpu-metrics 250: the program's collector samples every 250 µs") {
  const std::string mark = scratchDir() + "/gpu_metrics_env";
  const std::string command = std::string(CUOVERLAP_CLI) + " record --force --gpu-metrics 0250 -o " + scratchDir() +
                              "/gpu_metrics.sqlite -- sh -c 'echo ${CUOVERLAP_GPU_METRICS:-unset} > " + mark +
                              "; exit 7' 2> /dev/null";
  const int status = std::system(command.c_str());
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 7);
  CHECK(readAll(mark) == "250\n");
}

TEST_CASE("record --no-op-buffers: the program's collector records no op buffers; by default it does") {
  for (const bool off : {true, false}) {
    const std::string mark = scratchDir() + "/op_buffers_env";
    const std::string command = std::string(CUOVERLAP_CLI) + " record --force" + (off ? " --no-op-buffers" : "") +
                                " -o " + scratchDir() + "/op_buffers.sqlite -- sh -c 'echo ${CUOVERLAP_OP_BUFFERS:-unset} > " +
                                mark + "; exit 7' 2> /dev/null";
    const int status = std::system(command.c_str());
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 7);
    CHECK(readAll(mark) == (off ? "0\n" : "unset\n"));  // unset: the collector's default, on
  }
}

// Capture-window options: bad input is one line and exit 2, before the program runs.
TEST_CASE("record: bad --capture, --delay, --duration and --gpu-metrics → one line, exit 2, program not run") {
  struct Case {
    std::string args, says;
  };
  const std::vector<Case> cases = {
      {"--capture nvtxx:step", "unknown capture kind 'nvtxx:step'"},
      {"--capture sigusr", "unknown capture kind"},
      {"--capture nvtx:step@60-50", "FIRST (60) is after LAST (50)"},
      {"--capture nvtx:step@0-5", "bad instance numbers '0-5'"},
      {"--capture nvtx:step@a-5", "bad instance numbers"},
      {"--capture nvtx:step@5-", "bad instance numbers"},
      {"--capture nvtx:", "needs a range name"},
      {"--delay -1", "bad --delay '-1'"},
      {"--delay 5s", "bad --delay '5s'"},
      {"--duration 0", "--duration must be more than 0"},
      {"--duration abc", "bad --duration 'abc'"},
      {"--gpu-metrics 5", "--gpu-metrics takes the microseconds between samples, 10 to 1000000 (got '5')"},
      {"--gpu-metrics 1e3", "(got '1e3')"},
      {"--gpu-metrics 2000000", "(got '2000000')"},
      {"--gpu-metrics -100", "--gpu-metrics"},
  };
  for (const Case& c : cases) {
    INFO(c.args);
    Run run = record("", "-o " + scratchDir() + "/bad_capture.sqlite " + c.args);
    CHECK(run.exit_code == 2);
    CHECK(run.program_saw.empty());
    REQUIRE(run.stderr_lines.size() == 1);
    CHECK(contains(run.stderr_lines[0], "cuoverlap: error: "));
    CHECK(contains(run.stderr_lines[0], c.says));
  }
}
