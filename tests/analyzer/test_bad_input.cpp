// Bad input: the library throws UserError, and the CLI prints one line and exits 2, never crashes.
#include <catch2/catch.hpp>

#include <sys/wait.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "cuoverlap/error.h"
#include "cuoverlap/reader.h"
#include "synthetic_trace.h"

using namespace cuoverlap;

namespace {

struct CliResult {
  int exit_code = -1;
  std::string stderr_text;
};

CliResult runCli(const std::string& args) {
  std::string err = cuoverlap::testing::tempTracePath("cli_stderr.txt");
  std::string command = std::string(CUOVERLAP_CLI) + " " + args + " >/dev/null 2>" + err;
  int status = std::system(command.c_str());
  std::ifstream in(err);
  CliResult result;
  result.stderr_text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

std::size_t lineCount(const std::string& text) {
  return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
}

void writeFile(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

// Every bad input must fail in the library with UserError and in the CLI with one line, exit 2.
void expectRejected(const std::string& path, const std::string& fragment) {
  INFO(path);
  REQUIRE_THROWS_AS(readTrace(path), UserError);
  REQUIRE_THROWS_WITH(readTrace(path), Catch::Contains(fragment));
  CliResult cli = runCli("analyze '" + path + "'");
  INFO(cli.stderr_text);
  REQUIRE(cli.exit_code == 2);
  REQUIRE(lineCount(cli.stderr_text) == 1);
  REQUIRE(cli.stderr_text.rfind("cuoverlap: error: ", 0) == 0);
}

std::string fileBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

TEST_CASE("a missing file", "[bad-input]") {
  expectRejected(cuoverlap::testing::tempTracePath("does_not_exist.sqlite"), "No such file");
}

TEST_CASE("an empty file", "[bad-input]") {
  std::string path = cuoverlap::testing::tempTracePath("empty.sqlite");
  writeFile(path, "");
  expectRejected(path, "empty file");
}

TEST_CASE("a text file", "[bad-input]") {
  expectRejected(std::string(CUOVERLAP_TEST_DATA) + "/synthetic/not_a_trace.txt", "not a database");
}

TEST_CASE("a truncated database", "[bad-input]") {
  std::string path = cuoverlap::testing::tempTracePath("whole.sqlite");
  {
    cuoverlap::testing::SyntheticTrace trace(path);
    for (int i = 0; i < 2000; ++i) trace.addOp({OpKind::kKernel, 1000 + 10 * i, 1005 + 10 * i});
  }
  std::string bytes = fileBytes(path);
  std::string truncated = cuoverlap::testing::tempTracePath("truncated.sqlite");
  writeFile(truncated, bytes.substr(0, bytes.size() / 2));
  expectRejected(truncated, "truncated.sqlite");
}

TEST_CASE("a database without trace tables", "[bad-input]") {
  std::string path = cuoverlap::testing::tempTracePath("foreign.sqlite");
  {
    cuoverlap::testing::SyntheticTrace trace(path);
  }
  // Rebuild it as a database with an unrelated table only.
  std::remove(path.c_str());
  sqlite3* db = nullptr;
  sqlite3_open(path.c_str(), &db);
  sqlite3_exec(db, "CREATE TABLE recipes (name TEXT); INSERT INTO recipes VALUES ('soup')",
               nullptr, nullptr, nullptr);
  sqlite3_close(db);
  expectRejected(path, "not a cuoverlap trace or Nsight Systems export");
}

TEST_CASE("wrong column types", "[bad-input]") {
  std::string declared = cuoverlap::testing::tempTracePath("declared_text.sqlite");
  {
    cuoverlap::testing::SyntheticTrace trace(declared);
    trace.exec("DROP TABLE CUPTI_ACTIVITY_KIND_KERNEL");
    trace.exec("CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start TEXT, end TEXT, deviceId TEXT)");
    trace.exec("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES ('soon', 'later', 'gpu')");
  }
  expectRejected(declared, "expected INTEGER");

  std::string stored = cuoverlap::testing::tempTracePath("stored_text.sqlite");
  {
    cuoverlap::testing::SyntheticTrace trace(stored);
    trace.exec("INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY (start, end, deviceId, contextId, streamId, "
               "bytes, copyKind) VALUES ('noon', 5, 0, 1, 7, 8, 1)");
  }
  expectRejected(stored, "non-integer");
}

TEST_CASE("a missing required column", "[bad-input]") {
  std::string path = cuoverlap::testing::tempTracePath("no_end.sqlite");
  {
    cuoverlap::testing::SyntheticTrace trace(path);
    trace.exec("DROP TABLE CUPTI_ACTIVITY_KIND_KERNEL");
    trace.exec("CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, deviceId INTEGER)");
  }
  expectRejected(path, "has no column end");
}

TEST_CASE("CLI usage errors exit 2; --help exits 0", "[bad-input][cli]") {
  REQUIRE(runCli("analyze").exit_code == 2);
  REQUIRE(runCli("analyze --format yaml x.sqlite").exit_code == 2);
  REQUIRE(runCli("analyze --help").exit_code == 0);
  std::string good = std::string(CUOVERLAP_SHARED_TRACES) + "/gpu4_report.sqlite.gz";
  CliResult device = runCli("analyze --device 9 '" + good + "'");
  REQUIRE(device.exit_code == 2);
  REQUIRE(lineCount(device.stderr_text) == 1);
  CliResult out = runCli("analyze -o /nonexistent-dir/report.json '" + good + "'");
  REQUIRE(out.exit_code == 2);
}

namespace {

// Exit 0 with nothing on stderr but the line naming a written file: a sanitizer report (UBSan
// continues after printing) fails this.
CliResult runCliClean(const std::string& args) {
  CliResult cli = runCli(args);
  INFO(args << "\n" << cli.stderr_text);
  REQUIRE(cli.exit_code == 0);
  const bool only_wrote = cli.stderr_text.rfind("cuoverlap: wrote ", 0) == 0 && lineCount(cli.stderr_text) == 1;
  REQUIRE((cli.stderr_text.empty() || only_wrote));
  return cli;
}

// Usage errors: exit 2 and one line, like bad input.
void expectUsageError(const std::string& args, const std::string& fragment) {
  CliResult cli = runCli(args);
  INFO(args << "\n" << cli.stderr_text);
  REQUIRE(cli.exit_code == 2);
  REQUIRE(lineCount(cli.stderr_text) == 1);
  REQUIRE(cli.stderr_text.rfind("cuoverlap: error: ", 0) == 0);
  REQUIRE_THAT(cli.stderr_text, Catch::Contains(fragment));
}

std::string jsonOutput(const std::string& trace_path) {
  std::string out = cuoverlap::testing::tempTracePath("report.json");
  runCliClean("analyze --format json -o '" + out + "' '" + trace_path + "'");
  return fileBytes(out);
}

}  // namespace

// Found by tests/fuzz/mutate_traces.py: timestamps near ±2^63 overflowed end - start (UBSan).
TEST_CASE("timestamps beyond 2^62 ns are rejected", "[bad-input]") {
  const char* const kUpdates[] = {
      "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET end = 9223372036854775807",
      "UPDATE CUPTI_ACTIVITY_KIND_MEMCPY SET start = -9223372036854775808",
      "UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET start = 4611686018427387904",
      "UPDATE NVTX_EVENTS SET end = -4611686018427387904"};
  for (const char* update : kUpdates) {
    std::string path = cuoverlap::testing::tempTracePath("huge_time.sqlite");
    {
      cuoverlap::testing::SyntheticTrace trace(path);
      trace.addOp({OpKind::kKernel, 1000, 2000});
      trace.addOp({OpKind::kMemcpy, 1500, 2500});
      trace.addRuntimeCall(900, 950, 0, "cudaLaunchKernel");
      trace.exec("INSERT INTO NVTX_EVENTS (start, end, eventType, text) VALUES (1, 3000, 59, 'r')");
      trace.exec(update);
    }
    expectRejected(path, "out of range");
  }
}

// Found by the fuzzer: three ops of ~2^62 ns each overflowed sum_ns (UBSan); it saturates now.
TEST_CASE("sum of op durations saturates instead of overflowing", "[bad-input]") {
  std::string path = cuoverlap::testing::tempTracePath("long_ops.sqlite");
  {
    cuoverlap::testing::SyntheticTrace trace(path);
    const Ns kLast = (Ns{1} << 62) - 1;
    for (int i = 0; i < 3; ++i) trace.addOp({OpKind::kKernel, 1 + i, kLast});
  }
  REQUIRE_THAT(jsonOutput(path), Catch::Contains("\"sum_ns\": 9223372036854775807"));
}

// Found by the fuzzer: static + dynamic shared memory and warps x threads per SM overflowed.
TEST_CASE("huge launch and device attributes are clamped, not overflowed", "[bad-input]") {
  std::string path = cuoverlap::testing::tempTracePath("huge_attributes.sqlite");
  {
    cuoverlap::testing::SyntheticTrace trace(path);
    trace.addOp({OpKind::kKernel, 1000, 2000});
    trace.exec("UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET staticSharedMemory = 9223372036854775807, "
               "dynamicSharedMemory = 9223372036854775807, gridX = 2147483648, blockX = 0");
    trace.exec("INSERT INTO TARGET_INFO_GPU (vmId, id, name, maxWarpsPerSm, threadsPerWarp) "
               "VALUES (0, 0, 'g', 2147483647, 2147483647)");
  }
  Trace trace = readTrace(path);
  REQUIRE(trace.ops.size() == 1);
  CHECK(trace.ops[0].shared_mem_bytes == 0xFFFFFFFFu);
  CHECK(trace.ops[0].block_threads == 0);
  REQUIRE(trace.devices.size() == 1);
  CHECK(trace.devices[0].max_threads_per_sm == 2147483647);
  runCliClean("analyze '" + path + "'");
  runCliClean("export --format perfetto -o - '" + path + "'");
}

// Found by the fuzzer: '.' reached std::stod (internal error, exit 3); CLI11's conversion
// errors printed two lines.
TEST_CASE("odd option values are one-line usage errors", "[bad-input][cli]") {
  std::string good = std::string(CUOVERLAP_SHARED_TRACES) + "/gpu4_report.sqlite.gz";
  expectUsageError("analyze --gap-threshold . '" + good + "'", "bad duration");
  expectUsageError("analyze --gap-threshold 99999999999999999999s '" + good + "'", "2^62");
  expectUsageError("analyze --window .:1 '" + good + "'", "bad duration");
  expectUsageError("analyze --window 5:1 '" + good + "'", "END must be after START");
  expectUsageError("analyze --device -1 '" + good + "'", "--device");
  expectUsageError("analyze --pid 99999999999 '" + good + "'", "--pid");
  expectUsageError("gate '" + good + "' --fail-on ,,,", "--fail-on");
}
