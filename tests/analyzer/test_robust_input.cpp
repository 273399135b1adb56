// Hostile and unfinished inputs (issue 13): a trace with its last commits in a -wal file, views
// and virtual tables in place of tables, the read deadline, value and device-id bounds.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <sys/stat.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cuoverlap/error.h"
#include "cuoverlap/reader.h"
#include "synthetic_trace.h"

using namespace cuoverlap;
namespace fs = std::filesystem;

namespace {

struct Run {
  int exit_code = -1;
  std::string out;
  std::string err;
};

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Under `timeout`: a hang fails the test instead of stalling ctest.
Run runCli(const std::string& args, const std::string& env = "") {
  const std::string out = testing::tempTracePath("robust_stdout.txt");
  const std::string err = testing::tempTracePath("robust_stderr.txt");
  const std::string command = env + " timeout 60 " + CUOVERLAP_CLI + " " + args + " >" + out +
                              " 2>" + err;
  const int status = std::system(command.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(out), slurp(err)};
}

void expectOneLineError(const Run& run, const std::string& fragment) {
  INFO(run.err);
  CHECK(run.exit_code == 2);
  CHECK(std::count(run.err.begin(), run.err.end(), '\n') == 1);
  CHECK(run.err.rfind("cuoverlap: error: ", 0) == 0);
  CHECK(run.err.find(fragment) != std::string::npos);
}

std::vector<std::string> listing(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) names.push_back(entry.path().filename());
  std::sort(names.begin(), names.end());
  return names;
}

void addKernel(testing::SyntheticTrace& trace, int i) {
  trace.addOp({OpKind::kKernel, 1000 + 100 * i, 1050 + 100 * i});
}

// What a killed program leaves: the first half of `steps` steps (each written by `add`, by
// default one kernel) checkpointed into the file, the rest committed only to the -wal, and no
// complete=1. Files are copied while the writer's connection is still open.
fs::path writeKilledTrace(const std::string& name, int steps = 24,
                          void (*add)(testing::SyntheticTrace&, int) = addKernel) {
  const std::string live = testing::tempTracePath(name + "_live.sqlite");
  const fs::path dir = fs::path(testing::tempTracePath(name));
  fs::remove_all(dir);
  fs::create_directories(dir);
  testing::SyntheticTrace trace(live);
  trace.exec("DELETE FROM CUOVERLAP_SESSION WHERE key = 'complete'");
  trace.exec("COMMIT");
  trace.exec("PRAGMA journal_mode=WAL");
  trace.exec("PRAGMA wal_autocheckpoint=0");
  for (int i = 0; i < steps; ++i) {
    if (i == steps / 2) trace.exec("PRAGMA wal_checkpoint(TRUNCATE)");
    add(trace, i);
  }
  fs::copy_file(live, dir / "trace.sqlite");
  fs::copy_file(live + "-wal", dir / "trace.sqlite-wal");
  trace.exec("BEGIN");  // the destructor commits
  return dir / "trace.sqlite";
}

}  // namespace

TEST_CASE("a killed program's trace is read with the commits in its -wal, and says so", "[robust]") {
  const fs::path path = writeKilledTrace("killed");
  REQUIRE(fs::file_size(path.string() + "-wal") > 0);
  const std::vector<std::string> before = listing(path.parent_path());
  const Trace trace = readTrace(path);
  CHECK(trace.ops.size() == 24);  // immutable=1 read 12
  REQUIRE(trace.warnings.size() == 2);
  CHECK(trace.warnings[0].find("-wal") != std::string::npos);
  CHECK(trace.warnings[1].find("complete=1") != std::string::npos);
  CHECK(listing(path.parent_path()) == before);  // no -shm, nothing written beside the input

  const Run json = runCli("analyze --format json '" + path.string() + "'");
  REQUIRE(json.exit_code == 0);
  const auto report = nlohmann::json::parse(json.out);
  CHECK(report["traces"][0]["devices"][0]["kernels"] == 24);
  CHECK(report["traces"][0]["warnings"].size() == 2);
  const Run text = runCli("analyze '" + path.string() + "'");
  CHECK(text.out.find("warning: unfinished trace") != std::string::npos);
  const Run markdown = runCli("analyze --format markdown '" + path.string() + "'");
  CHECK(markdown.out.find("**Warning:** unfinished trace") != std::string::npos);
  CHECK(listing(path.parent_path()) == before);
}

TEST_CASE("an unfinished trace in a read-only directory is read without writing", "[robust]") {
  const fs::path path = writeKilledTrace("readonly");
  const std::vector<std::string> before = listing(path.parent_path());
  ::chmod(path.parent_path().c_str(), 0555);
  ::chmod(path.c_str(), 0444);
  const Run run = runCli("analyze --format json '" + path.string() + "'");
  ::chmod(path.parent_path().c_str(), 0755);
  REQUIRE(run.exit_code == 0);
  CHECK(nlohmann::json::parse(run.out)["traces"][0]["devices"][0]["kernels"] == 24);
  CHECK(listing(path.parent_path()) == before);
}

TEST_CASE("a torn last WAL frame (a trace being written) reads up to the last commit", "[robust]") {
  const fs::path path = writeKilledTrace("torn");
  {
    std::ofstream wal(path.string() + "-wal", std::ios::binary | std::ios::app);
    wal << std::string(3000, '\x5a');  // half a frame of garbage after the last commit
  }
  CHECK(readTrace(path).ops.size() == 24);
}

TEST_CASE("each op table of a killed program's trace is read whole from the -wal", "[robust]") {
  // The op tables are decoded on threads with connections of their own (reader_table_stream.h):
  // each must see the private copy's log too. 3 x 6000 ops (enough for threads: 16384 rows),
  // the later half only in the -wal.
  const fs::path path = writeKilledTrace("killed_tables", 6000, [](testing::SyntheticTrace& t, int i) {
    const Ns start = 1000 + 100 * i;
    t.addOp({OpKind::kKernel, start, start + 30});
    t.addOp({OpKind::kMemcpy, start + 40, start + 60, CopyKind::kHtoD, 14});
    t.addOp({OpKind::kMemset, start + 70, start + 80, CopyKind::kHtoD, 15});
  });
  const Trace trace = readTrace(path);
  REQUIRE(trace.ops.size() == 18000);
  std::size_t kernels = 0, copies = 0, memsets = 0;
  for (const GpuOp& op : trace.ops) {
    kernels += op.kind == OpKind::kKernel;
    copies += op.kind == OpKind::kMemcpy;
    memsets += op.kind == OpKind::kMemset;
  }
  CHECK(kernels == 6000);
  CHECK(copies == 6000);
  CHECK(memsets == 6000);
  CHECK(std::is_sorted(trace.ops.begin(), trace.ops.end(),
                       [](const GpuOp& a, const GpuOp& b) { return a.start < b.start; }));
}

TEST_CASE("a finished trace has no warning", "[robust]") {
  const std::string path = testing::tempTracePath("finished.sqlite");
  {
    testing::SyntheticTrace trace(path);
    trace.addOp({OpKind::kKernel, 1000, 2000});
  }
  CHECK(readTrace(path).warnings.empty());
}

TEST_CASE("views and virtual tables are not read as tables", "[robust]") {
  const std::string recursive = testing::tempTracePath("recursive_view.sqlite");
  {
    testing::SyntheticTrace trace(recursive);
    trace.exec("DROP TABLE CUPTI_ACTIVITY_KIND_KERNEL");
    trace.exec("CREATE VIEW CUPTI_ACTIVITY_KIND_KERNEL AS WITH RECURSIVE r(n) AS (SELECT 1 UNION "
               "ALL SELECT n + 1 FROM r) SELECT n AS start, n + 1 AS end, 0 AS deviceId FROM r");
  }
  REQUIRE_THROWS_WITH(readTrace(recursive), Catch::Contains("is a view, not a table"));
  expectOneLineError(runCli("analyze '" + recursive + "'"), "is a view, not a table");

  const std::string lower = testing::tempTracePath("lowercase_view.sqlite");
  {
    testing::SyntheticTrace trace(lower);
    trace.exec("DROP TABLE StringIds");
    trace.exec("CREATE VIEW stringids AS SELECT 1 AS id, 'x' AS value");
  }
  REQUIRE_THROWS_WITH(readTrace(lower), Catch::Contains("is a view"));

  const std::string virtual_table = testing::tempTracePath("virtual_table.sqlite");
  {
    testing::SyntheticTrace trace(virtual_table);
    trace.exec("DROP TABLE StringIds");
    trace.exec("CREATE VIRTUAL TABLE StringIds USING fts4(id, value)");
  }
  REQUIRE_THROWS_WITH(readTrace(virtual_table), Catch::Contains("virtual table"));
}

TEST_CASE("reading stops at the deadline with one clear line", "[robust]") {
  const std::string path = testing::tempTracePath("slow.sqlite");
  {
    testing::SyntheticTrace trace(path);
    for (int i = 0; i < 3000; ++i) trace.addOp({OpKind::kKernel, 1000 + 10 * i, 1005 + 10 * i});
  }
  expectOneLineError(runCli("analyze '" + path + "'", "CUOVERLAP_READ_TIMEOUT=0"),
                     "reading took longer than 0 s");
  expectOneLineError(runCli("analyze '" + path + "'", "CUOVERLAP_READ_TIMEOUT=soon"),
                     "CUOVERLAP_READ_TIMEOUT");
  CHECK(runCli("analyze '" + path + "'", "CUOVERLAP_READ_TIMEOUT=100").exit_code == 0);
}

TEST_CASE("a string longer than the limit is one clear line", "[robust]") {
  const std::string path = testing::tempTracePath("huge_string.sqlite");
  {
    testing::SyntheticTrace trace(path);
    trace.addOp({OpKind::kKernel, 1000, 2000});
    trace.exec("UPDATE StringIds SET value = printf('%.*c', 17000000, 'x')");
  }
  REQUIRE_THROWS_WITH(readTrace(path), Catch::Contains("longer than 16 MiB"));
}

TEST_CASE("device ids outside 0..65535 are one rule: rejected, never clamped or wrapped", "[robust]") {
  const std::string gpu = testing::tempTracePath("device_65536_gpu.sqlite");
  {
    testing::SyntheticTrace trace(gpu);
    trace.addDevice(0, "A");
    trace.exec("INSERT INTO TARGET_INFO_GPU (vmId, id, name) VALUES (0, 65536, 'B')");
    trace.addOp({OpKind::kKernel, 1000, 2000});
  }
  // Before: device 65536 wrapped to 0 and its name "B" replaced "A".
  REQUIRE_THROWS_WITH(readTrace(gpu), Catch::Contains("TARGET_INFO_GPU.id holds 65536"));
  const std::string op = testing::tempTracePath("device_65536_op.sqlite");
  {
    testing::SyntheticTrace trace(op);
    trace.addOp({OpKind::kKernel, 1000, 2000, CopyKind::kHtoD, 13, 0});
    trace.exec("UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET deviceId = 65536");
  }
  expectOneLineError(runCli("analyze '" + op + "'"), "out of range (0 to 65535)");
  const std::string top = testing::tempTracePath("device_65535.sqlite");
  {
    testing::SyntheticTrace trace(top);
    trace.addDevice(65535, "last");
    trace.addOp({OpKind::kKernel, 1000, 2000, CopyKind::kHtoD, 13, 65535});
  }
  const Trace trace = readTrace(top);
  REQUIRE(trace.devices.size() == 1);
  CHECK(trace.devices[0].device_id == 65535);
  CHECK(trace.ops[0].device_id == 65535);
}

// span * 94 overflowed for spans beyond 2^63 / 94 ns (~10^17): undefined behaviour, and with
// wrapping arithmetic the axis loop ran past the end of the page.
TEST_CASE("the HTML time axis of a span near 2^62 ns has its few labels", "[robust][html]") {
  const std::string path = testing::tempTracePath("huge_span.sqlite");
  {
    testing::SyntheticTrace trace(path);
    const Ns kLast = (Ns{1} << 62) - 1000;
    trace.addOp({OpKind::kKernel, 1000, 2000});
    trace.addOp({OpKind::kKernel, kLast - 1000, kLast});
  }
  const std::string html = testing::tempTracePath("huge_span.html");
  const Run run = runCli("analyze --format html -o '" + html + "' '" + path + "'");
  REQUIRE(run.exit_code == 0);
  const std::string page = slurp(html);
  // The page's script draws the axis from data-span (tests/cli/html_screenshot.sh runs it in a
  // browser): the span must be written exactly, and the page stay small.
  CHECK(page.find("data-span=\"" + std::to_string(((Ns{1} << 62) - 1000) - 1000) + "\"") != std::string::npos);
  CHECK(page.size() < 1'000'000);
}
