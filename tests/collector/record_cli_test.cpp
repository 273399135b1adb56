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

namespace {

struct Run {
  int exit_code = -1;
  std::vector<std::string> stderr_lines;
  std::string program_saw;  // "ran <CUDA_INJECTION64_PATH or unset>" when the program ran
};

std::string scratchDir() {
  static std::string dir = [] {
    char name[] = "/tmp/cuoverlap_record_cli_XXXXXX";
    return std::string(mkdtemp(name));
  }();
  return dir;
}

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
  CHECK_FALSE(exists(output));
}
#endif
