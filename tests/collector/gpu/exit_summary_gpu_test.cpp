// CUOVERLAP_SUMMARY=1 on a GPU: collector_probe_app run with the collector injected directly
// (CUDA_INJECTION64_PATH, as a launcher starts a rank without `record`). When the process exits the
// collector runs `cuoverlap summarize`, found beside the library in the build tree: NAME.cosum
// beside the trace, analyzable, and the program's exit code unchanged (0, 5 from exit() on another
// thread, 5 from quick_exit); each process of a fork without exec summarizes its own trace, a
// forked child after CUDA none; abort is flushed but not summarized; without a `cuoverlap` command
// one warning; under `record` the summary is written once. Exits 77 when no GPU is usable.
#define CATCH_CONFIG_RUNNER
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "bounded_wait.h"
#include "trace_file.h"

namespace {

std::string g_dir;

using Variables = std::vector<std::pair<std::string, std::string>>;

struct Run {
  int exit_code = -1;  // 1000 + N when signal N ended it
  std::string log;
};

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// Runs `words` with `variables` added to the environment, stdout and stderr into LOG.
Run runWith(const std::string& log, const Variables& variables, std::vector<std::string> words) {
  pid_t pid = fork();
  if (pid == 0) {
    for (const auto& [name, value] : variables) setenv(name.c_str(), value.c_str(), 1);
    int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 1);
    dup2(fd, 2);
    std::vector<char*> argv;
    for (auto& w : words) argv.push_back(&w[0]);
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(126);
  }
  Run run;
  // Bounded: the summarizer's own limit is kSummaryTimeout (120 s); a run still going after 200 s
  // has hung, and is described (threads' wait channels, backtraces) and killed.
  run.exit_code = waitBounded(pid, 200);
  run.log = readFile(log);
  return run;
}

// A summary of these tiny traces takes well under a second: a summarizer that hangs fails the
// test in two minutes (it says so in the log) instead of waiting out the default ten.
constexpr const char* kSummaryTimeout = "120";

// The probe app with the collector injected and CUOVERLAP_SUMMARY=1.
Run runInjected(const std::string& output, const std::vector<std::string>& app_args, Variables extra = {}) {
  Variables variables = {{"CUDA_INJECTION64_PATH", CUOVERLAP_COLLECTOR_LIB},
                         {"NVTX_INJECTION64_PATH", CUOVERLAP_COLLECTOR_LIB},
                         {"CUOVERLAP_OUTPUT", output},
                         {"CUOVERLAP_SUMMARY", "1"},
                         {"CUOVERLAP_SUMMARY_TIMEOUT", kSummaryTimeout}};
  variables.insert(variables.end(), extra.begin(), extra.end());
  std::vector<std::string> words = {CUOVERLAP_PROBE_APP};
  words.insert(words.end(), app_args.begin(), app_args.end());
  return runWith(output + ".log", variables, words);
}

bool exists(const std::string& path) {
  struct stat info {};
  return stat(path.c_str(), &info) == 0;
}

std::vector<std::string> linesWith(const std::string& text, const std::string& part) {
  std::vector<std::string> found;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.find(part) != std::string::npos) found.push_back(line);
  }
  return found;
}

// Files of `dir` whose name starts with `prefix` and ends with `suffix`, sorted.
std::vector<std::string> files(const std::string& dir, const std::string& prefix, const std::string& suffix) {
  const std::string listing = g_dir + "/ls.txt";
  REQUIRE(std::system(("ls " + dir + " > " + listing).c_str()) == 0);
  std::vector<std::string> found;
  std::istringstream lines(readFile(listing));
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(prefix, 0) == 0 && line.size() >= prefix.size() + suffix.size() &&
        line.compare(line.size() - suffix.size(), suffix.size(), suffix) == 0) {
      found.push_back(dir + "/" + line);
    }
  }
  return found;
}

std::string summaryOf(const std::string& trace) { return trace.substr(0, trace.size() - 7) + ".cosum"; }

std::string summarizedTrace(const std::string& summary) {
  TraceFile file(summary);
  return file.isOpen() ? file.text("SELECT value FROM summary_meta WHERE key = 'trace'") : "";
}

// `cuoverlap analyze FILE`'s exit code (124 after two minutes: a hang); its output into FILE.txt.
int analyze(const std::string& file, const std::string& format = "text") {
  const std::string command = std::string("timeout 120 ") + CUOVERLAP_CLI + " analyze --format " + format + " " +
                              file + " > " + file + "." + format + " 2>&1";
  const int status = std::system(command.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// The summary at exit: there, one line saying so, no warning, analyzable, the trace's report.
void checkSummaryOf(const std::string& trace, const std::string& log) {
  INFO(trace);
  const std::string summary = summaryOf(trace);
  REQUIRE(exists(summary));
  CHECK(summarizedTrace(summary) == trace);
  CHECK(linesWith(log, "cuoverlap: summary " + summary).size() == 1);
  CHECK(analyze(summary) == 0);
  CHECK(readFile(summary + ".text").find("device 0") != std::string::npos);
  REQUIRE(analyze(summary, "json") == 0);
  REQUIRE(analyze(trace, "json") == 0);
  CHECK(readFile(summary + ".json") == readFile(trace + ".json"));
}

}  // namespace

TEST_CASE("exit 0: the summary beside the trace, the trace's report, exit code 0") {
  const std::string trace = g_dir + "/basic.sqlite";
  const Run run = runInjected(trace, {"basic"});
  INFO(run.log);
  CHECK(run.exit_code == 0);
  TraceFile file(trace);
  REQUIRE(file.isOpen());
  CHECK(file.session("complete") == "1");
  CHECK(file.integer("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL") == 6);
  checkSummaryOf(trace, run.log);
  CHECK(linesWith(run.log, "no summary").empty());
}

TEST_CASE("exit(5) from another thread and quick_exit(5): summarized, exit code 5 kept") {
  for (const char* mode : {"exit_thread", "quick_exit"}) {
    const std::string trace = g_dir + "/" + mode + ".sqlite";
    const Run run = runInjected(trace, {mode});
    INFO(run.log);
    CHECK(run.exit_code == 5);
    TraceFile file(trace);
    CHECK(file.session("complete") == "1");
    checkSummaryOf(trace, run.log);
    CHECK(linesWith(run.log, "no summary").empty());
  }
}

TEST_CASE("fork without exec before CUDA, %p: each process summarizes its own trace") {
  const Run run = runInjected(g_dir + "/fork_cuda-%p.sqlite", {"fork_cuda"});
  INFO(run.log);
  CHECK(run.exit_code == 0);
  const std::vector<std::string> traces = files(g_dir, "fork_cuda-", ".sqlite");
  REQUIRE(traces.size() == 2);
  CHECK(files(g_dir, "fork_cuda-", ".cosum").size() == 2);
  for (const std::string& trace : traces) checkSummaryOf(trace, run.log);
}

TEST_CASE("fork after CUDA: the child traces nothing and summarizes nothing") {
  const Run run = runInjected(g_dir + "/fork-%p.sqlite", {"fork"});
  INFO(run.log);
  CHECK(run.exit_code == 0);
  const std::vector<std::string> traces = files(g_dir, "fork-", ".sqlite");
  REQUIRE(traces.size() == 1);
  CHECK(files(g_dir, "fork-", ".cosum").size() == 1);
  CHECK(linesWith(run.log, "cuoverlap: summary ").size() == 1);
  checkSummaryOf(traces[0], run.log);
}

TEST_CASE("abort: the trace is flushed, not summarized, and the process dies of SIGABRT") {
  const std::string trace = g_dir + "/abort.sqlite";
  const Run run = runInjected(trace, {"abort"});
  INFO(run.log);
  CHECK(run.exit_code == 1000 + SIGABRT);
  TraceFile file(trace);
  CHECK(file.session("complete") == "1");
  CHECK_FALSE(exists(summaryOf(trace)));
}

TEST_CASE("no cuoverlap command: one warning, the trace complete, exit code 5 kept") {
  const std::string trace = g_dir + "/no_bin.sqlite";
  const Run run = runInjected(trace, {"exit_thread"}, {{"CUOVERLAP_BIN", g_dir + "/no-such-cuoverlap"}});
  INFO(run.log);
  CHECK(run.exit_code == 5);
  const std::vector<std::string> warnings = linesWith(run.log, "cuoverlap: warning");
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0].find("CUOVERLAP_BIN=" + g_dir + "/no-such-cuoverlap is not an executable file") !=
        std::string::npos);
  TraceFile file(trace);
  CHECK(file.session("complete") == "1");
  CHECK_FALSE(exists(summaryOf(trace)));
}

TEST_CASE("under record, CUOVERLAP_SUMMARY=1: record writes each summary once, the collector none") {
  const Variables summary_on = {{"CUOVERLAP_SUMMARY", "1"}, {"CUOVERLAP_SUMMARY_TIMEOUT", kSummaryTimeout}};
  const std::string pattern = g_dir + "/rec-%p.sqlite";
  Run run = runWith(g_dir + "/rec.log", summary_on, {CUOVERLAP_CLI, "record", "-o", pattern, "--", CUOVERLAP_PROBE_APP, "fork_cuda"});
  INFO(run.log);
  CHECK(run.exit_code == 0);
  CHECK(linesWith(run.log, "  summary: " + g_dir + "/rec-").size() == 2);
  CHECK(linesWith(run.log, "no summary").empty());
  CHECK(files(g_dir, "rec-", ".cosum").size() == 2);
  // One merged trace: its summary only, none of the per-process parts.
  const std::string merged = g_dir + "/merged.sqlite";
  run = runWith(g_dir + "/merged.log", summary_on, {CUOVERLAP_CLI, "record", "-o", merged, "--", CUOVERLAP_PROBE_APP, "fork_cuda"});
  INFO(run.log);
  CHECK(run.exit_code == 0);
  CHECK(linesWith(run.log, "  summary: ").size() == 1);
  CHECK(files(g_dir, "merged", ".cosum") == std::vector<std::string>{g_dir + "/merged.cosum"});
  CHECK(analyze(g_dir + "/merged.cosum") == 0);
}

int main(int argc, char** argv) {
  const int probe = std::system((std::string(CUOVERLAP_PROBE_APP) + " probe > /dev/null 2>&1").c_str());
  if (!WIFEXITED(probe) || WEXITSTATUS(probe) != 0) {
    std::puts("no usable GPU: collector GPU exit-summary tests skipped");
    return 77;
  }
  char dir[] = "/tmp/cuoverlap_gpu_exit_summary_XXXXXX";
  g_dir = mkdtemp(dir);
  return Catch::Session().run(argc, argv);
}
