// The summary at exit (CUOVERLAP_SUMMARY) without a GPU: where the collector finds `cuoverlap`
// (install prefix, build tree, a symlinked library, CUOVERLAP_BIN), and one summarizer run with
// shell scripts standing in for `cuoverlap summarize`: its arguments and environment, a failure,
// a timeout (SIGTERM, then SIGKILL), a program that ignores or blocks signals, ignores SIGCHLD or
// closed its standard descriptors; the child is always reaped, errno kept, and the OOM killer
// takes the summarizer first.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <string>

#include "collector_options.h"
#include "exit_summary.h"
#include "summarizer_process.h"
#include "summary_path.h"
#include "../scratch_dir.h"

using namespace cuoverlap::collector;
using Outcome = SummarizerRun::Outcome;

namespace {

const std::string& scratch() { return cuoverlap_test::scratchDir("cuoverlap_summarizer_test_"); }

std::string readAll(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void writeFile(const std::string& path, const std::string& text, mode_t mode) {
  std::ofstream(path) << text;
  REQUIRE(::chmod(path.c_str(), mode) == 0);
}

// A stand-in `cuoverlap`: `body` runs with $3 the trace and $5 the output.
std::string script(const std::string& name, const std::string& body) {
  const std::string path = scratch() + "/" + name;
  writeFile(path, "#!/bin/sh\n" + body + "\n", 0755);
  return path;
}

bool exists(const std::string& path) {
  struct stat info {};
  return ::lstat(path.c_str(), &info) == 0;
}

bool reaped(pid_t pid) { return ::waitpid(pid, nullptr, WNOHANG) == -1 && errno == ECHILD; }

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

const std::chrono::milliseconds kLong{30000};

}  // namespace

TEST_CASE("summarizer found beside the collector (build tree) or in ../bin (install prefix)") {
  const std::string prefix = scratch() + "/prefix", build = scratch() + "/build";
  for (const std::string& dir : {prefix, prefix + "/lib", prefix + "/bin", build}) ::mkdir(dir.c_str(), 0755);
  writeFile(prefix + "/lib/libcuoverlap_collector.so", "", 0644);
  writeFile(prefix + "/bin/cuoverlap", "#!/bin/sh\n", 0755);
  writeFile(build + "/libcuoverlap_collector.so", "", 0644);
  writeFile(build + "/cuoverlap", "#!/bin/sh\n", 0755);
  std::string reason;
  CHECK(findSummarizer("", prefix + "/lib/libcuoverlap_collector.so", reason) == prefix + "/lib/../bin/cuoverlap");
  CHECK(findSummarizer("", build + "/libcuoverlap_collector.so", reason) == build + "/cuoverlap");
  // A symlink to the installed library elsewhere: the real file's prefix.
  const std::string links = scratch() + "/links";
  ::mkdir(links.c_str(), 0755);
  REQUIRE(::symlink((prefix + "/lib/libcuoverlap_collector.so").c_str(), (links + "/libcuoverlap_collector.so").c_str()) == 0);
  CHECK(findSummarizer("", links + "/libcuoverlap_collector.so", reason) == prefix + "/lib/../bin/cuoverlap");
  CHECK(reason.empty());
}

TEST_CASE("no summarizer: a non-executable file is not one; CUOVERLAP_BIN overrides the search") {
  const std::string lonely = scratch() + "/lonely";
  for (const std::string& dir : {lonely, lonely + "/lib", lonely + "/bin"}) ::mkdir(dir.c_str(), 0755);
  writeFile(lonely + "/bin/cuoverlap", "#!/bin/sh\n", 0644);  // not executable
  std::string reason;
  CHECK(findSummarizer("", lonely + "/lib/libcuoverlap_collector.so", reason).empty());
  CHECK(reason.find("CUOVERLAP_BIN") != std::string::npos);
  const std::string mine = script("my-cuoverlap", "exit 0");
  reason.clear();
  CHECK(findSummarizer(mine, lonely + "/lib/libcuoverlap_collector.so", reason) == mine);
  CHECK(findSummarizer(lonely + "/bin/cuoverlap", "", reason).empty());
  CHECK(reason == "CUOVERLAP_BIN=" + lonely + "/bin/cuoverlap is not an executable file");
}

TEST_CASE("the summarizer's arguments, environment and descriptors; written; reaped; errno kept") {
  const std::string args = scratch() + "/args.txt", env = scratch() + "/env.txt", fds = scratch() + "/fds.txt";
  const std::string oom = scratch() + "/oom.txt";
  const std::string ok = script("ok", "printf '%s\\n' \"$@\" > " + args + "\nenv > " + env +
                                          "\nsleep 0.5; cat /proc/$$/oom_score_adj > " + oom +
                                          "\nls /proc/$$/fd > " + fds + "\nread line; echo \"stdin:$line\" >> " +
                                          fds + "\necho done > \"$5\"");
  const std::string trace = scratch() + "/rank0.sqlite", output = scratch() + "/rank0.cosum";
  setenv("CUDA_INJECTION64_PATH", "/x/libcuoverlap_collector.so", 1);
  setenv("NVTX_INJECTION64_PATH", "/x/libcuoverlap_collector.so", 1);
  setenv("CUOVERLAP_SUMMARY", "1", 1);
  setenv("KEPT_FOR_THE_SUMMARIZER", "yes", 1);
  const int stray = ::open("/dev/null", O_RDONLY);  // a descriptor of the program, no O_CLOEXEC
  REQUIRE(::dup2(stray, 47) == 47);
  errno = 4242;
  const SummarizerRun run = runSummarizer(ok, trace, output, kLong);
  CHECK(errno == 4242);
  ::close(47);
  ::close(stray);
  for (const char* name : {"CUDA_INJECTION64_PATH", "NVTX_INJECTION64_PATH", "CUOVERLAP_SUMMARY",
                           "KEPT_FOR_THE_SUMMARIZER"}) {
    unsetenv(name);
  }
  CHECK(run.outcome == Outcome::kWritten);
  CHECK(run.exit_status == 0);
  CHECK(reaped(run.pid));
  CHECK(readAll(args) == "summarize\n-q\n" + trace + "\n-o\n" + output + "\n");
  CHECK(readAll(output) == "done\n");
  const std::string environment = readAll(env);
  CHECK(environment.find("KEPT_FOR_THE_SUMMARIZER=yes") != std::string::npos);
  CHECK(environment.find("CUDA_INJECTION64_PATH") == std::string::npos);
  CHECK(environment.find("NVTX_INJECTION64_PATH") == std::string::npos);
  CHECK(environment.find("CUOVERLAP_SUMMARY") == std::string::npos);
  const std::string descriptors = readAll(fds);
  CHECK(descriptors.find("47") == std::string::npos);
  CHECK(descriptors.find("stdin:\n") != std::string::npos);  // /dev/null: nothing to read
  CHECK(readAll(oom) == "1000\n");  // the OOM killer takes it before the rank
}

TEST_CASE("a failed summarize: its exit code and last stderr line, no output") {
  const std::string bad = script("bad", "echo 'reading the trace' >&2\necho 'cuoverlap: error: not a trace' >&2\nexit 2");
  const std::string output = scratch() + "/bad.cosum";
  const SummarizerRun run = runSummarizer(bad, scratch() + "/bad.sqlite", output, kLong);
  CHECK(run.outcome == Outcome::kFailed);
  CHECK(run.exit_status == 2);
  CHECK(run.detail == "cuoverlap: error: not a trace");
  CHECK(reaped(run.pid));
  CHECK_FALSE(exists(output));
}

TEST_CASE("a missing summarizer does not start; nothing left behind") {
  const SummarizerRun run = runSummarizer(scratch() + "/no-such-cuoverlap", "t.sqlite", "t.cosum", kLong);
  CHECK(run.outcome == Outcome::kNotStarted);
  CHECK(run.detail.find("No such file") != std::string::npos);
}

TEST_CASE("past the timeout: SIGTERM ends it, even when the program ignores and blocks SIGTERM") {
  const std::string slow = script("slow", "exec sleep 30");
  struct sigaction ignore {}, previous {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  sigaction(SIGTERM, &ignore, &previous);
  sigset_t term, old_mask;
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &term, &old_mask);
  const auto start = std::chrono::steady_clock::now();
  const SummarizerRun run = runSummarizer(slow, "t.sqlite", scratch() + "/slow.cosum", std::chrono::milliseconds(300));
  const double took = secondsSince(start);
  pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
  sigaction(SIGTERM, &previous, nullptr);
  CHECK(run.outcome == Outcome::kTimedOut);
  CHECK(run.kill_signal == SIGTERM);
  CHECK(run.reaped);
  CHECK(reaped(run.pid));
  CHECK(took < 10.0);
}

TEST_CASE("a summarizer that ignores SIGTERM is killed 2 s later") {
  const std::string stubborn = script("stubborn", "trap '' TERM\nwhile true; do sleep 0.1; done");
  const auto start = std::chrono::steady_clock::now();
  const SummarizerRun run = runSummarizer(stubborn, "t.sqlite", scratch() + "/stubborn.cosum", std::chrono::milliseconds(300));
  const double took = secondsSince(start);
  CHECK(run.outcome == Outcome::kTimedOut);
  CHECK(run.kill_signal == SIGKILL);
  CHECK(reaped(run.pid));
  CHECK(took >= 2.0);
  CHECK(took < 15.0);
}

TEST_CASE("a program that ignores SIGCHLD reaps the child itself: the output file decides") {
  struct sigaction ignore {}, previous {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  sigaction(SIGCHLD, &ignore, &previous);
  const std::string output = scratch() + "/sigchld.cosum";
  const SummarizerRun written = runSummarizer(script("writes", "echo x > \"$5\""), "t.sqlite", output, kLong);
  const SummarizerRun failed = runSummarizer(script("fails", "exit 3"), "t.sqlite", scratch() + "/none.cosum", kLong);
  sigaction(SIGCHLD, &previous, nullptr);
  CHECK(written.outcome == Outcome::kWritten);
  CHECK(failed.outcome == Outcome::kFailed);
  CHECK(failed.exit_status == -1);
}

TEST_CASE("a program that closed stdin, stdout and stderr: the summarizer still runs and reports") {
  const int saved[3] = {::dup(0), ::dup(1), ::dup(2)};
  for (int fd = 0; fd < 3; ++fd) ::close(fd);
  const SummarizerRun run = runSummarizer(script("complains", "echo 'cuoverlap: error: nope' >&2\nexit 2"),
                                          "t.sqlite", scratch() + "/closed.cosum", kLong);
  const bool still_closed = ::fcntl(0, F_GETFD) == -1 && ::fcntl(1, F_GETFD) == -1 && ::fcntl(2, F_GETFD) == -1;
  for (int fd = 0; fd < 3; ++fd) ::dup2(saved[fd], fd), ::close(saved[fd]);
  CHECK(still_closed);
  CHECK(run.outcome == Outcome::kFailed);
  CHECK(run.detail == "cuoverlap: error: nope");
}

TEST_CASE("the plan: off unless CUOVERLAP_SUMMARY=1, off under record, the trace made absolute") {
  CollectorOptions options;
  options.output_path = "run-7.sqlite";
  options.summarizer = script("plan-cuoverlap", "exit 0");
  CHECK_FALSE(planExitSummary(options, "").active);
  options.summary_at_exit = true;
  options.run_dir = scratch();
  CHECK_FALSE(planExitSummary(options, "").active);
  options.run_dir.clear();
  options.summary_timeout = std::chrono::seconds(5);
  const ExitSummary plan = planExitSummary(options, "");
  char cwd[4096] = {};
  REQUIRE(::getcwd(cwd, sizeof cwd) != nullptr);
  CHECK(plan.active);
  CHECK(plan.trace == std::string(cwd) + "/run-7.sqlite");
  CHECK(plan.output == std::string(cwd) + "/run-7.cosum");
  CHECK(plan.timeout == std::chrono::seconds(5));
  options.summarizer = scratch() + "/no-such-cuoverlap";  // one warning, no summary at exit
  CHECK_FALSE(planExitSummary(options, "").active);
}

TEST_CASE("summary names: the rule `summarize` and `record --summary` use") {
  using cuoverlap::schema::summaryPathFor;
  CHECK(summaryPathFor("/a/rank3.sqlite") == "/a/rank3.cosum");
  CHECK(summaryPathFor("/a/rank3.json.gz") == "/a/rank3.cosum");
  CHECK(summaryPathFor("/a/rank3.sqlite.gz") == "/a/rank3.cosum");
  CHECK(summaryPathFor("/a.b/rank3") == "/a.b/rank3.cosum");
}

TEST_CASE("CUOVERLAP_SUMMARY and CUOVERLAP_SUMMARY_TIMEOUT from the environment") {
  setenv("CUOVERLAP_QUIET", "1", 1);
  unsetenv("CUOVERLAP_SUMMARY");
  unsetenv("CUOVERLAP_SUMMARY_TIMEOUT");
  CollectorOptions o = optionsFromEnvironment();
  CHECK_FALSE(o.summary_at_exit);
  CHECK(o.summary_timeout == std::chrono::seconds(600));
  setenv("CUOVERLAP_SUMMARY", "1", 1);
  setenv("CUOVERLAP_SUMMARY_TIMEOUT", "45", 1);
  setenv("CUOVERLAP_BIN", "/opt/c/bin/cuoverlap", 1);
  o = optionsFromEnvironment();
  CHECK(o.summary_at_exit);
  CHECK(o.summary_timeout == std::chrono::seconds(45));
  CHECK(o.summarizer == "/opt/c/bin/cuoverlap");
  setenv("CUOVERLAP_SUMMARY", "yes", 1);  // not 0 or 1: ignored
  setenv("CUOVERLAP_SUMMARY_TIMEOUT", "0", 1);
  o = optionsFromEnvironment();
  CHECK_FALSE(o.summary_at_exit);
  CHECK(o.summary_timeout == std::chrono::seconds(600));
  for (const char* name : {"CUOVERLAP_QUIET", "CUOVERLAP_SUMMARY", "CUOVERLAP_SUMMARY_TIMEOUT", "CUOVERLAP_BIN"}) {
    unsetenv(name);
  }
}
