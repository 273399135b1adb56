// `cuoverlap record` on collector_probe_app, each trace checked exactly against the work the app
// is known to do (see the app's header comment). Exits 77 when no GPU is usable.
#define CATCH_CONFIG_RUNNER
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <utility>
#include <fcntl.h>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "bounded_wait.h"
#include "trace_file.h"

namespace {

std::string g_dir;

std::string tracePath(const std::string& name) { return g_dir + "/" + name + ".sqlite"; }

// Runs `cuoverlap record -o OUTPUT -- PROGRAM ARGS`, its output into OUTPUT.log; returns its pid.
pid_t startRecord(const std::string& output, const std::vector<std::string>& app_args,
                  const std::string& program = CUOVERLAP_PROBE_APP) {
  pid_t pid = fork();
  if (pid == 0) {
    int log = open((output + ".log").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(log, 1);
    dup2(log, 2);
    std::vector<std::string> words = {CUOVERLAP_CLI, "record", "-o", output, "--", program};
    words.insert(words.end(), app_args.begin(), app_args.end());
    std::vector<char*> argv;
    for (auto& w : words) argv.push_back(&w[0]);
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(126);
  }
  return pid;
}

// A recording here takes seconds: one still running after three minutes has hung, and is
// described (threads' wait channels, backtraces) and killed rather than waited out.
int waitExit(pid_t pid) { return waitBounded(pid, 180); }

int record(const std::string& output, const std::vector<std::string>& app_args,
           const std::string& program = CUOVERLAP_PROBE_APP) {
  return waitExit(startRecord(output, app_args, program));
}

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

std::vector<std::string> linesWith(const std::string& text, const std::string& part) {
  std::vector<std::string> found;
  std::size_t begin = 0;
  while (begin < text.size()) {
    std::size_t end = text.find('\n', begin);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(begin, end - begin);
    if (line.find(part) != std::string::npos) found.push_back(line);
    begin = end + 1;
  }
  return found;
}

bool exists(const std::string& path) {
  struct stat info {};
  return stat(path.c_str(), &info) == 0;
}

bool waitForFile(const std::string& path, int seconds) {
  for (int i = 0; i < seconds * 10; ++i) {
    struct stat info {};
    if (stat(path.c_str(), &info) == 0 && info.st_size > 0) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

const char* kNoBadTimes =
    "SELECT (SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE start = 0 OR end < start) + "
    "(SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE start = 0 OR end < start) + "
    "(SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMSET WHERE start = 0 OR end < start) + "
    "(SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE start = 0 OR end < start)";

const char* kKernelsOnNullStream =
    "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN TARGET_INFO_CUDA_CONTEXT_INFO c "
    "ON k.contextId = c.contextId WHERE k.streamId = c.nullStreamId";

// Each kernel joins exactly one launch call of its own process.
const char* kKernelsJoinTheirLaunch =
    "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN CUPTI_ACTIVITY_KIND_RUNTIME r "
    "ON r.correlationId = k.correlationId AND (r.globalTid >> 24) = (k.globalPid >> 24) "
    "JOIN StringIds s ON s.id = r.nameId WHERE s.value LIKE 'cudaLaunchKernel%'";

std::int64_t apiCount(const TraceFile& trace, const std::string& name) {
  return trace.integer("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s "
                       "ON s.id = r.nameId WHERE s.value = '" + name + "'");
}

}  // namespace

TEST_CASE("basic: every kernel, copy, memset, sync, stream and NVTX range, exactly") {
  std::string path = tracePath("basic");
  REQUIRE(record(path, {"basic"}) == 0);
  INFO(readFile(path + ".log"));
  TraceFile trace(path);
  REQUIRE(trace.isOpen());
  CHECK(trace.session("complete") == "1");
  CHECK(trace.session("dropped_records") == "0");
  CHECK(trace.integer("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL") == 6);
  CHECK(trace.text("SELECT DISTINCT s.value FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s "
                   "ON s.id = k.shortName") == "addOne");
  CHECK(trace.text("SELECT DISTINCT s.value FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s "
                   "ON s.id = k.mangledName") == "_Z6addOnePii");
  CHECK(trace.text("SELECT copyKind || '/' || srcKind || '/' || dstKind FROM "
                   "CUPTI_ACTIVITY_KIND_MEMCPY ORDER BY start") == "1/0/2;1/1/2;2/2/1;2/2/0");
  CHECK(trace.integer("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMSET") == 2);
  CHECK(trace.integer("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_SYNCHRONIZATION WHERE syncType = 3") == 2);
  CHECK(trace.integer("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_SYNCHRONIZATION WHERE syncType = 4") == 1);
  CHECK(trace.integer(kKernelsOnNullStream) == 1);
  CHECK(trace.integer("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN TARGET_INFO_CUDA_STREAM s "
                      "ON s.streamId = k.streamId AND s.contextId = k.contextId WHERE s.flag = 2") == 2);
  CHECK(trace.integer("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN TARGET_INFO_CUDA_STREAM s "
                      "ON s.streamId = k.streamId AND s.contextId = k.contextId WHERE s.flag = 1") == 3);
  CHECK(trace.integer("SELECT count(*) FROM TARGET_INFO_CUDA_STREAM s JOIN TARGET_INFO_CUDA_CONTEXT_INFO c "
                      "ON s.streamId = c.nullStreamId WHERE s.flag = 3") == 1);
  CHECK(trace.text("SELECT eventType || ':' || text FROM NVTX_EVENTS WHERE eventType IN (34, 59, 60) "
                   "ORDER BY start") == "59:basic;60:async-range;34:synced");
  CHECK(trace.integer("SELECT count(*) FROM NVTX_EVENTS WHERE eventType IN (59, 60) AND end > start") == 2);
  CHECK(apiCount(trace, "cudaLaunchKernel_v7000") == 6);
  CHECK(apiCount(trace, "cudaMemcpyAsync_v3020") == 2);
  CHECK(apiCount(trace, "cudaStreamSynchronize_v3020") == 2);
  CHECK(trace.integer(kNoBadTimes) == 0);
  // Each kernel starts after the API call that launched it, inside the session's time span.
  CHECK(trace.integer("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN CUPTI_ACTIVITY_KIND_RUNTIME r "
                      "ON r.correlationId = k.correlationId WHERE r.start <= k.start") == 6);
  CHECK(trace.integer("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE start < (SELECT CAST(value "
                      "AS INTEGER) FROM CUOVERLAP_SESSION WHERE key = 'start_ns')") == 0);
  // One row per GPU the process can see (1, 2 or 4 on the hosts we test), each complete.
  const auto gpus = trace.integer("SELECT count(*) FROM TARGET_INFO_GPU");
  CHECK(gpus >= 1);
  CHECK(trace.integer("SELECT count(DISTINCT id) FROM TARGET_INFO_GPU") == gpus);
  CHECK(trace.integer("SELECT count(*) FROM TARGET_INFO_GPU WHERE smCount > 0 AND asyncEngines > 0 "
                      "AND name IS NOT NULL") == gpus);
  WARN("driver API rows: " << trace.integer("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE eventClass = 1")
       << ", GPU: " << trace.text("SELECT name || ' engines ' || asyncEngines FROM TARGET_INFO_GPU"));
}

TEST_CASE("SIGINT in the middle: flushed, complete, exit status of the signal") {
  std::string path = tracePath("sigint"), ready = g_dir + "/sigint.ready";
  pid_t cli = startRecord(path, {"spin", ready});
  REQUIRE(waitForFile(ready, 60));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  kill(cli, SIGINT);  // sent to cuoverlap alone: it forwards it to the program
  CHECK(waitExit(cli) == 128 + SIGINT);
  INFO(readFile(path + ".log"));
  TraceFile trace(path);
  CHECK(trace.text("PRAGMA integrity_check") == "ok");
  CHECK(trace.session("complete") == "1");
  CHECK(trace.integer("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL") > 100);
  CHECK(trace.integer(kNoBadTimes) == 0);
}

TEST_CASE("SIGTERM in the middle, program without a handler: flushed, complete, dies by SIGTERM") {
  std::string path = tracePath("sigterm"), ready = g_dir + "/sigterm.ready";
  pid_t cli = startRecord(path, {"spin", ready});
  REQUIRE(waitForFile(ready, 60));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  kill(cli, SIGTERM);  // forwarded to the program
  CHECK(waitExit(cli) == 128 + SIGTERM);
  INFO(readFile(path + ".log"));
  TraceFile trace(path);
  CHECK(trace.text("PRAGMA integrity_check") == "ok");
  CHECK(trace.session("complete") == "1");
  CHECK(trace.session("dropped_records") == "0");
  CHECK(trace.integer("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL") > 100);
  CHECK(trace.integer(kNoBadTimes) == 0);
}

TEST_CASE("SIGTERM with the program's own handler: the handler runs, exit code 3, trace complete") {
  // "before": installed before the first CUDA call, so the collector's handler chains to it;
  // "after": installed after, replacing the collector's; exit from main flushes either way.
  for (std::string when : {"before", "after"}) {
    INFO("handler installed " << when << " the first CUDA call");
    std::string path = tracePath("sigterm_handler_" + when), ready = path + ".ready";
    pid_t cli = startRecord(path, {"spin_handler", ready, when});
    REQUIRE(waitForFile(ready, 60));
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    kill(cli, SIGTERM);
    CHECK(waitExit(cli) == 3);
    std::string log = readFile(path + ".log");
    INFO(log);
    CHECK(linesWith(log, "stop handler ran").size() == 1);
    TraceFile trace(path);
    CHECK(trace.text("PRAGMA integrity_check") == "ok");
    CHECK(trace.session("complete") == "1");
    CHECK(trace.session("dropped_records") == "0");
    CHECK(trace.integer("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL") > 100);
    CHECK(trace.integer(kNoBadTimes) == 0);
  }
}

TEST_CASE("another CUPTI subscriber attached first: one warning, untraced, exit code kept, no file") {
  std::string path = tracePath("own_subscriber");
  CHECK(record(path, {}, CUOVERLAP_OWN_SUBSCRIBER_APP) == 7);
  std::string log = readFile(path + ".log");
  INFO(log);
  CHECK(linesWith(log, "own subscriber attached").size() == 1);
  std::vector<std::string> warnings = linesWith(log, "cuoverlap: warning");
  REQUIRE(warnings.size() == 1);
  CHECK(linesWith(warnings[0], "another CUPTI tool").size() == 1);
  CHECK(linesWith(log, "no trace written to " + path).size() == 1);
  CHECK_FALSE(exists(path));
}

TEST_CASE("collector alone, unwritable output: one warning, the program runs untraced, exit 0") {
  std::string output = g_dir + "/no-such-dir/direct.sqlite", log = g_dir + "/direct_unwritable.log";
  std::string command = std::string("CUDA_INJECTION64_PATH=") + CUOVERLAP_COLLECTOR_LIB +
                        " NVTX_INJECTION64_PATH=" + CUOVERLAP_COLLECTOR_LIB + " CUOVERLAP_OUTPUT=" + output +
                        " " + CUOVERLAP_PROBE_APP + " basic > " + log + " 2>&1";
  int status = std::system(command.c_str());
  std::string text = readFile(log);
  INFO(text);
  CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));
  std::vector<std::string> warnings = linesWith(text, "cuoverlap: warning");
  REQUIRE(warnings.size() == 1);
  CHECK(linesWith(warnings[0], "not tracing this process").size() == 1);
  CHECK(linesWith(warnings[0], output).size() == 1);
  CHECK_FALSE(exists(output));
}

TEST_CASE("SIGKILL in the middle: a valid file holding what was committed") {
  std::string path = tracePath("sigkill"), ready = g_dir + "/sigkill.ready";
  pid_t cli = startRecord(path, {"spin", ready});
  REQUIRE(waitForFile(ready, 60));
  std::this_thread::sleep_for(std::chrono::milliseconds(3000));  // > flush interval + commit interval
  kill(std::stoi(readFile(ready)), SIGKILL);
  CHECK(waitExit(cli) == 128 + SIGKILL);
  INFO(readFile(path + ".log"));
  TraceFile trace(path);
  CHECK(trace.text("PRAGMA integrity_check") == "ok");
  CHECK(trace.session("complete").empty());
  CHECK(trace.integer("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL") >= 100);
  CHECK(trace.integer(kNoBadTimes) == 0);
}

TEST_CASE("fork after CUDA: the child traces nothing, holds nothing up, leaves the parent's file intact") {
  std::string path = tracePath("fork");
  REQUIRE(record(path, {"fork"}) == 0);
  INFO(readFile(path + ".log"));
  TraceFile trace(path);
  CHECK(trace.session("complete") == "1");
  CHECK(trace.session("processes") == "1");
  CHECK(trace.integer("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL") == 4);
  CHECK(trace.text("PRAGMA integrity_check") == "ok");
}

TEST_CASE("fork after CUDA, 300 times while the collector reads the devices: every child exits") {
  std::string path = tracePath("fork_many");
  const int rc = record(path, {"fork_many", "300"});
  INFO(readFile(path + ".log"));
  REQUIRE(rc == 0);
  TraceFile trace(path);
  CHECK(trace.session("complete") == "1");
  CHECK(trace.session("processes") == "1");
  CHECK(trace.integer("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL") == 1);
}

TEST_CASE("fork without exec before CUDA: parent and child both traced, into one file") {
  std::string path = tracePath("fork_cuda");
  REQUIRE(record(path, {"fork_cuda"}) == 0);
  std::string log = readFile(path + ".log");
  INFO(log);
  TraceFile trace(path);
  CHECK(trace.session("complete") == "1");
  CHECK(trace.session("processes") == "2");
  CHECK(trace.integer("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL") == 8);
  CHECK(trace.text("SELECT group_concat(n, ',') FROM (SELECT count(*) AS n FROM CUPTI_ACTIVITY_KIND_KERNEL "
                   "GROUP BY globalPid ORDER BY n)") == "3,5");
  CHECK(trace.integer(kKernelsJoinTheirLaunch) == 8);
  CHECK(linesWith(log, "    pid ").size() == 2);
}

TEST_CASE("subprocess (fork + exec) that uses CUDA: traced, with its own command line") {
  std::string path = tracePath("subprocess");
  REQUIRE(record(path, {"subprocess"}) == 0);
  INFO(readFile(path + ".log"));
  TraceFile trace(path);
  CHECK(trace.session("complete") == "1");
  CHECK(trace.session("processes") == "2");
  CHECK(trace.integer("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL") == 5);
  CHECK(trace.integer("SELECT count(*) FROM CUOVERLAP_PROCESS_SESSION WHERE key = 'command' AND "
                      "value LIKE '%collector_probe_app kernels 3'") == 1);
  CHECK(trace.integer(kKernelsJoinTheirLaunch) == 5);
}

TEST_CASE("several CUDA processes at once: one trace, every kernel joined to its own launch") {
  std::string path = tracePath("multi");
  REQUIRE(record(path, {"multi", "4"}) == 0);
  INFO(readFile(path + ".log"));
  TraceFile trace(path);
  CHECK(trace.session("complete") == "1");
  CHECK(trace.session("processes") == "5");
  CHECK(trace.integer("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL") == 4 * 50 + 1);
  CHECK(trace.integer("SELECT count(DISTINCT correlationId) FROM CUPTI_ACTIVITY_KIND_KERNEL") == 201);
  CHECK(trace.integer(kKernelsJoinTheirLaunch) == 201);
  CHECK(trace.integer("SELECT count(*) FROM TARGET_INFO_GPU") >= 1);
  CHECK(trace.integer(kNoBadTimes) == 0);
}

TEST_CASE("per-process files with %p: one file per CUDA process, each reported") {
  std::string pattern = g_dir + "/multi-%p.sqlite";
  REQUIRE(record(pattern, {"multi", "2"}) == 0);
  std::string log = readFile(pattern + ".log");
  INFO(log);
  CHECK(linesWith(log, "cuoverlap: trace " + g_dir + "/multi-").size() == 3);
}

TEST_CASE("quick_exit right after launching: every kernel reaches the file, exit code kept") {
  std::string path = tracePath("quick_exit");
  CHECK(record(path, {"quick_exit"}) == 5);
  INFO(readFile(path + ".log"));
  TraceFile trace(path);
  CHECK(trace.session("complete") == "1");
  CHECK(trace.text("SELECT value FROM CUOVERLAP_PROCESS_SESSION WHERE key = 'ended_by'") == "quick_exit");
  CHECK(trace.integer("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL") == 500);
  CHECK(trace.integer(kNoBadTimes) == 0);
}

TEST_CASE("abort and SIGSEGV: flushed, then the same death") {
  for (auto [mode, signal_number] : {std::pair<std::string, int>{"abort", SIGABRT}, {"segv", SIGSEGV}}) {
    INFO(mode);
    std::string path = tracePath(mode);
    CHECK(record(path, {mode}) == 128 + signal_number);
    INFO(readFile(path + ".log"));
    TraceFile trace(path);
    CHECK(trace.text("PRAGMA integrity_check") == "ok");
    CHECK(trace.session("complete") == "1");
    CHECK(trace.text("SELECT value FROM CUOVERLAP_PROCESS_SESSION WHERE key = 'ended_by'") ==
          "signal " + std::to_string(signal_number));
    CHECK(trace.integer("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL") == 100);
    // A fault names its instruction (the program's, not the collector's); abort() is no fault.
    const std::string fault_at = trace.text("SELECT value FROM CUOVERLAP_PROCESS_SESSION WHERE key = 'fault_at'");
    if (mode == "segv") {
      CHECK(fault_at.find("collector_probe_app+0x") != std::string::npos);
      CHECK(fault_at.find("in the cuoverlap collector") == std::string::npos);
      CHECK(readFile(path + ".log").find("cuoverlap: the traced process got signal 11 at ") != std::string::npos);
    } else {
      CHECK(fault_at.empty());
    }
  }
}

TEST_CASE("SIGKILL after 1 s: the file holds all but the last commit interval") {
  std::string path = tracePath("sigkill_1s"), ready = g_dir + "/sigkill_1s.ready";
  pid_t cli = startRecord(path, {"spin", ready});
  REQUIRE(waitForFile(ready, 60));
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  timespec now{};
  clock_gettime(CLOCK_REALTIME, &now);
  std::int64_t killed_ns = static_cast<std::int64_t>(now.tv_sec) * 1000000000 + now.tv_nsec;
  kill(std::stoi(readFile(ready)), SIGKILL);
  CHECK(waitExit(cli) == 128 + SIGKILL);
  INFO(readFile(path + ".log"));
  TraceFile trace(path);
  CHECK(trace.text("PRAGMA integrity_check") == "ok");
  CHECK(trace.session("complete").empty());
  // 1 ms kernels, one at a time: about 1100 ran; a 100 ms commit interval and a 100 ms flush
  // period lose at most ~200 ms of them (400 ms allowed for scheduling).
  std::int64_t last_end = trace.integer("SELECT max(end) FROM CUPTI_ACTIVITY_KIND_KERNEL");
  INFO("last kernel ended " << (killed_ns - last_end) / 1000000 << " ms before the kill");
  CHECK(killed_ns - last_end < 400 * 1000000LL);
  CHECK(trace.integer("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL") >= 700);
  CHECK(trace.integer(kNoBadTimes) == 0);
}

TEST_CASE("SIGINT twice: the second one ends the program at once, by SIGINT") {
  std::string path = tracePath("sigint_twice"), ready = g_dir + "/sigint_twice.ready";
  pid_t cli = startRecord(path, {"spin", ready});
  REQUIRE(waitForFile(ready, 60));
  pid_t app = std::stoi(readFile(ready));
  kill(app, SIGINT);
  std::this_thread::sleep_for(std::chrono::milliseconds(2));  // two signals, not one pending
  kill(app, SIGINT);
  CHECK(waitExit(cli) == 128 + SIGINT);
  INFO(readFile(path + ".log"));
}

TEST_CASE("SIGHUP without a handler: flushed, complete, dies by SIGHUP") {
  std::string path = tracePath("sighup"), ready = g_dir + "/sighup.ready";
  pid_t cli = startRecord(path, {"spin", ready});
  REQUIRE(waitForFile(ready, 60));
  kill(cli, SIGHUP);  // forwarded to the program
  CHECK(waitExit(cli) == 128 + SIGHUP);
  INFO(readFile(path + ".log"));
  TraceFile trace(path);
  CHECK(trace.session("complete") == "1");
  CHECK(trace.integer("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL") > 100);
}

TEST_CASE("--api all records every call; lean records only the chosen ones") {
  std::string lean = tracePath("api_lean"), all = g_dir + "/api_all.sqlite";
  REQUIRE(record(lean, {"basic"}) == 0);
  pid_t pid = fork();
  if (pid == 0) {
    int log = open((all + ".log").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(log, 2);
    execl(CUOVERLAP_CLI, CUOVERLAP_CLI, "record", "--api", "all", "-o", all.c_str(), "--",
          CUOVERLAP_PROBE_APP, "basic", static_cast<char*>(nullptr));
    _exit(126);
  }
  REQUIRE(waitExit(pid) == 0);
  TraceFile lean_trace(lean), all_trace(all);
  const char* queries = "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id = r.nameId "
                        "WHERE s.value LIKE 'cudaGetLastError%' OR s.value LIKE 'cudaGetDevice%'";
  CHECK(lean_trace.integer(queries) == 0);
  CHECK(all_trace.integer(queries) >= 6);
  CHECK(lean_trace.session("api_tracing") == "lean");
  CHECK(lean_trace.integer("SELECT CAST(value AS INTEGER) FROM CUOVERLAP_PROCESS_SESSION WHERE key = 'lean_api_calls'") > 50);
  CHECK(all_trace.session("api_tracing") == "all");
  CHECK(apiCount(lean_trace, "cudaLaunchKernel_v7000") == 6);
  CHECK(apiCount(all_trace, "cudaLaunchKernel_v7000") == 6);
  WARN("runtime+driver rows, lean: " << lean_trace.integer("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME")
       << ", all: " << all_trace.integer("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME"));
}

TEST_CASE("8 threads launching at once: every kernel, every stream, every thread") {
  std::string path = tracePath("threads");
  REQUIRE(record(path, {"threads"}) == 0);
  INFO(readFile(path + ".log"));
  TraceFile trace(path);
  CHECK(trace.session("dropped_records") == "0");
  CHECK(trace.integer("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL") == 800);
  CHECK(trace.integer("SELECT count(DISTINCT streamId) FROM CUPTI_ACTIVITY_KIND_KERNEL") == 8);
  CHECK(trace.integer("SELECT count(DISTINCT r.globalTid) FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN "
                      "StringIds s ON s.id = r.nameId WHERE s.value = 'cudaLaunchKernel_v7000'") == 8);
}

TEST_CASE("3,000 short-lived threads, 64 alive at a time: no record dropped, every kernel kept") {
  // Each thread holds a per-thread activity buffer until the next flush; at a fixed 4 MiB such a
  // program ran the 1 GiB pool dry (the lab dropped 491,025 records of 15,481 threads).
  std::string path = tracePath("short_threads");
  REQUIRE(record(path, {"short_threads", "3000", "64"}) == 0);
  INFO(readFile(path + ".log"));
  TraceFile trace(path);
  CHECK(trace.session("dropped_records") == "0");
  CHECK(trace.integer("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL") == 3000);
  CHECK(trace.integer("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON "
                      "s.id = r.nameId WHERE s.value = 'cudaLaunchKernel_v7000'") == 3000);
}

TEST_CASE("CUDA graph: kernels and memsets launched from a graph carry graph ids") {
  std::string path = tracePath("graph");
  REQUIRE(record(path, {"graph"}) == 0);
  INFO(readFile(path + ".log"));
  TraceFile trace(path);
  CHECK(trace.integer("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE graphId IS NOT NULL") == 12);
  CHECK(trace.integer("SELECT count(DISTINCT graphNodeId) FROM CUPTI_ACTIVITY_KIND_KERNEL") == 3);
  CHECK(trace.integer("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMSET WHERE graphId IS NOT NULL") == 4);
}

TEST_CASE("exit() from another thread: flushed, exit code unchanged") {
  std::string path = tracePath("exit_thread");
  CHECK(record(path, {"exit_thread"}) == 5);
  INFO(readFile(path + ".log"));
  TraceFile trace(path);
  CHECK(trace.session("complete") == "1");
  CHECK(trace.integer("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL") == 100);
}

int main(int argc, char** argv) {
  std::string probe = std::string(CUOVERLAP_PROBE_APP) + " probe";
  int rc = std::system(probe.c_str());
  if (!WIFEXITED(rc) || WEXITSTATUS(rc) != 0) {
    std::puts("no usable GPU: collector GPU tests skipped");
    return 77;
  }
  char dir[] = "/tmp/cuoverlap_gpu_test_XXXXXX";
  g_dir = mkdtemp(dir);
  return Catch::Session().run(argc, argv);
}
