// `cuoverlap record [-o OUT] [--force] [--summary] [--api lean|all] [--capture KIND] [--delay S]
// [--duration S] -- PROGRAM ARGS...`: runs PROGRAM with the collector injected
// (CUDA_INJECTION64_PATH / NVTX_INJECTION64_PATH) into it and every descendant that uses CUDA,
// forwards SIGINT/SIGTERM/SIGHUP/SIGQUIT sent to record alone, waits for every traced process
// (they register in a run directory record creates, docs/collector.md), merges their traces into
// OUT (or, with %p/%r in OUT, leaves one file per process), returns PROGRAM's exit status and
// prints what it wrote. It reports only files it can prove this run wrote: the entry of a traced
// process in its own run directory, whose session names the same pid and began after the run
// started; it opens them read-only and never follows a symlink.
#include <CLI/CLI.hpp>
#include <dlfcn.h>
#include <fcntl.h>
#include <fmt/core.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "capture_spec.h"
#include "collector_env.h"
#include "commands.h"
#include "help_sections.h"
#include "cuoverlap/error.h"
#include "cuoverlap/summary.h"
#include "output_file.h"
#include "trace_merge.h"
#include "record_run_dir.h"
#include "terminal.h"
#include "trace_schema.h"

namespace cuoverlap::cli {
namespace {

constexpr const char* kCollectorFile = "libcuoverlap_collector.so";
constexpr const char* kCollectorEnv = "CUOVERLAP_COLLECTOR";  // overrides the search

struct RecordArgs {
  std::string output{schema::kDefaultRecordOutput};
  bool force = false;
  bool summary = false;  // also write each trace's rank summary beside it
  std::string api = "lean";
  std::string capture, delay, duration;  // as given; checked by captureSpec()
  std::string gpu_metrics;  // µs between GPU-metric samples, as given; checked by gpuMetricsUs()
  bool no_op_buffers = false;  // CUOVERLAP_OP_BUFFERS=0
  std::vector<std::string> command;
};

// --gpu-metrics US: whole microseconds from 10 (below that, decoding a sample costs more than the
// interval: docs/collector.md, "GPU metrics by PM sampling") to 1,000,000; bad input exits 2
// before the program runs.
std::string gpuMetricsUs(const RecordArgs& args) {
  if (args.gpu_metrics.empty()) return {};
  const std::string& text = args.gpu_metrics;
  const bool digits = text.size() <= 7 && std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
  const long us = digits ? std::stol(text) : 0;
  if (us < 10 || us > 1000000) {
    throw UserError(fmt::format("--gpu-metrics takes the microseconds between samples, 10 to 1000000 (got '{}')",
                                stderrText(text)));
  }
  return std::to_string(us);
}

// The capture window asked for; bad input is a one-line error (exit 2) before the program runs.
schema::CaptureSpec captureSpec(const RecordArgs& args) {
  schema::CaptureSpec spec;
  std::string problem;
  if (!args.capture.empty()) problem = schema::parseCaptureKind(args.capture, spec);
  if (problem.empty() && !args.delay.empty()) problem = schema::parseCaptureSeconds("--delay", args.delay, spec.delay_s);
  if (problem.empty() && !args.duration.empty()) {
    problem = schema::parseCaptureSeconds("--duration", args.duration, spec.duration_s);
    if (problem.empty() && spec.duration_s <= 0.0) problem = "--duration must be more than 0 seconds";
  }
  if (!problem.empty()) throw UserError(problem);
  return spec;
}

volatile sig_atomic_t g_child = 0;
volatile sig_atomic_t g_child_done = 0;
volatile sig_atomic_t g_stop_waiting = 0;
// `--capture signal`: <run dir>/capture-open, created and removed by SIGUSR2 to record (the
// collectors of the run look at it; capture_control.h). Set before the program starts.
char g_switch_file[4096] = {};
volatile sig_atomic_t g_switch_open = 0;

// Async-signal-safe: open/close/unlink/write only. Each signal is acknowledged on stderr, also
// when no traced process has started CUDA yet (it then opens its window at its start).
void onCaptureSignal(int) {
  static constexpr char kOpened[] = "cuoverlap: SIGUSR2: capture window open in every traced process (one "
                                    "that has not started CUDA yet opens it when it does)\n";
  static constexpr char kClosed[] = "cuoverlap: SIGUSR2: capture window closed\n";
  const int saved_errno = errno;
  g_switch_open = !g_switch_open;
  if (g_switch_open) {
    int fd = ::open(g_switch_file, O_CREAT | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd >= 0) ::close(fd);
    [[maybe_unused]] const ssize_t n = ::write(STDERR_FILENO, kOpened, sizeof kOpened - 1);
  } else {
    ::unlink(g_switch_file);
    [[maybe_unused]] const ssize_t n = ::write(STDERR_FILENO, kClosed, sizeof kClosed - 1);
  }
  errno = saved_errno;
}

void serveCaptureSignal(const std::string& run_dir) {
  const std::string path = run_dir + "/" + schema::kCaptureOpenFile;
  if (path.size() >= sizeof g_switch_file) throw UserError("run directory name too long for --capture signal");
  std::memcpy(g_switch_file, path.c_str(), path.size() + 1);
  struct sigaction action {};
  action.sa_handler = onCaptureSignal;
  action.sa_flags = SA_RESTART;
  sigemptyset(&action.sa_mask);
  sigaction(SIGUSR2, &action, nullptr);
  fmt::print(stderr, "cuoverlap: capture by signal: 'kill -USR2 {}' opens the window of every traced "
             "process, again closes it (a process that starts CUDA later joins it open)\n", getpid());
}

std::string hostName() {
  char host[256] = {};
  return gethostname(host, sizeof host - 1) == 0 ? host : "localhost";
}

std::uint64_t realtimeNs() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000u + static_cast<std::uint64_t>(ts.tv_nsec);
}

std::string executableDir() {
  char path[4096] = {};
  ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
  std::string exe = n > 0 ? std::string(path, static_cast<std::size_t>(n)) : ".";
  return exe.substr(0, exe.rfind('/'));
}

// Next to the executable (build tree), then the install tree's lib/.
std::string findCollector() {
  if (const char* path = std::getenv(kCollectorEnv)) return path;
  std::string dir = executableDir();
  for (const std::string& candidate : {dir + "/" + kCollectorFile, dir + "/../lib/" + kCollectorFile,
                                       dir + "/../collector/" + kCollectorFile}) {
    if (lexists(candidate)) return candidate;
  }
  return "";
}

// Loads the collector here first: if it (or CUPTI, which it needs) cannot load, the CUDA driver
// would fail inside the program instead. Returns "" or the reason.
std::string checkCollectorLoads(const std::string& path) {
  if (path.empty()) return fmt::format("{} not found next to cuoverlap or in ../lib", kCollectorFile);
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) return fmt::format("cannot load the collector or CUPTI: {}", dlerror());
  dlclose(handle);
  return "";
}

std::string directoryOf(const std::string& path) {
  std::size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
}

// The collector creates the files inside the program; a directory it cannot write in is found
// here, before the run, so the user gets one clear line instead of a trace that never appears.
std::string outputProblem(const std::string& path) {
  std::string dir = directoryOf(path);
  auto cannot = [&](const std::string& why) { return fmt::format("cannot write {}: {}", path, why); };
  struct stat info {};
  if (::stat(dir.c_str(), &info) != 0) return cannot(fmt::format("{}: {}", dir, std::strerror(errno)));
  if (!S_ISDIR(info.st_mode)) return cannot(dir + " is not a directory");
  if (::access(dir.c_str(), W_OK) != 0) return cannot(fmt::format("{}: {}", dir, std::strerror(errno)));
  return "";
}

// Descendants may change directory: every path handed to them is absolute.
std::string absolute(const std::string& path) {
  if (path.empty() || path[0] == '/') return path;
  char cwd[4096] = {};
  if (getcwd(cwd, sizeof cwd) == nullptr) return path;
  return std::string(cwd) + "/" + path;
}

std::string joinCommand(const std::vector<std::string>& command) {
  std::string joined;
  for (const std::string& word : command) joined += (joined.empty() ? "" : " ") + word;
  return joined;
}

[[noreturn]] void execProgram(const RecordArgs& args, const std::string& collector,
                              const std::string& pattern, const std::string& run_dir,
                              const std::string& gpu_metrics_us) {
  if (!collector.empty()) {
    setenv("CUDA_INJECTION64_PATH", collector.c_str(), 1);
    setenv("NVTX_INJECTION64_PATH", collector.c_str(), 1);
    setenv(schema::kEnvOutput, pattern.c_str(), 1);
    setenv(schema::kEnvRunDir, run_dir.c_str(), 1);
    setenv(schema::kEnvRootPid, std::to_string(getpid()).c_str(), 1);
    setenv(schema::kEnvQuiet, "1", 1);
    setenv(schema::kEnvApi, args.api.c_str(), 1);
    setenv(schema::kEnvCommand, joinCommand(args.command).c_str(), 1);
    setenv(schema::kEnvCapture, args.capture.c_str(), 1);
    setenv(schema::kEnvCaptureDelay, args.delay.c_str(), 1);
    setenv(schema::kEnvCaptureDuration, args.duration.c_str(), 1);
    unsetenv(schema::kEnvSummary);  // record summarizes the files it reports, once (--summary)
    if (!gpu_metrics_us.empty()) setenv(schema::kEnvGpuMetricsUs, gpu_metrics_us.c_str(), 1);
    if (args.no_op_buffers) setenv(schema::kEnvOpBuffers, "0", 1);
  }
  std::vector<char*> argv;
  for (const std::string& word : args.command) argv.push_back(const_cast<char*>(word.c_str()));
  argv.push_back(nullptr);
  signal(SIGXFSZ, SIG_DFL);  // cuoverlap ignores it (temporary_files.h); the program gets its own default
  execvp(argv[0], argv.data());
  fmt::print(stderr, "cuoverlap: error: cannot run '{}': {}\n", stderrText(args.command[0]),
             std::strerror(errno));
  _exit(127);
}

// A signal sent to cuoverlap alone (kill) goes on to the program; one from the terminal already
// reached the whole process group, the program included, and is not sent twice. Once the program
// has ended, SIGINT/SIGTERM stop the wait for its traced descendants.
void onSignal(int signal_number, siginfo_t* info, void*) {
  if (g_child_done) {
    g_stop_waiting = 1;
    return;
  }
  if (g_child > 0 && info != nullptr && info->si_code <= 0) kill(g_child, signal_number);
}

int waitForProgram(pid_t child) {
  g_child = child;
  struct sigaction action {};
  action.sa_sigaction = onSignal;
  action.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&action.sa_mask);
  for (int signal_number : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) sigaction(signal_number, &action, nullptr);
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  g_child_done = 1;
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);  // as a shell reports it
  return 1;
}

std::string recordsLine(const Session& session) {
  std::string records;
  const std::string prefix(schema::session_key::kRecordsPrefix);
  for (const auto& [key, value] : session) {
    if (key.rfind(prefix, 0) == 0 && value != "0") {
      records += fmt::format("{}{} {}", records.empty() ? "" : ", ", key.substr(prefix.size()), value);
    }
  }
  return records.empty() ? "none" : records;
}

std::string processLine(pid_t pid, const Session& session) {
  namespace k = schema::session_key;
  std::string rank = session.count(std::string(k::kRank)) ? fmt::format(" rank {}", get(session, k::kRank)) : "";
  if (session.count(std::string(k::kWorldSize))) rank += "/" + get(session, k::kWorldSize);
  if (session.count(std::string(k::kLocalRank))) rank += fmt::format(" (local {})", get(session, k::kLocalRank));
  bool complete = get(session, k::kComplete, "") == "1";
  return fmt::format("pid {}{}{}: {}", pid, rank, complete ? "" : " (ended before the collector finished)",
                     get(session, k::kCommand));
}

// "nvtx:step@50-60, open 1.234 s" or "nvtx:step@50-60, never opened (the program ran 12 instances
// of step)".
std::string captureLine(const Session& session) {
  namespace k = schema::session_key;
  const std::string spec = get(session, k::kCapture);
  if (get(session, k::kCaptureOpened, "0") == "1") {
    const double open = std::strtod(get(session, k::kCaptureOpenNs, "0").c_str(), nullptr);
    const double close = std::strtod(get(session, k::kCaptureCloseNs, "0").c_str(), nullptr);
    return fmt::format("{}, open {:.3f} s", spec, std::max(0.0, close - open) / 1e9);
  }
  std::string why;
  if (session.count(std::string(k::kCaptureInstances)) != 0) {
    why = fmt::format(" (the program ran {} instance(s) of that range)", get(session, k::kCaptureInstances));
  }
  return fmt::format("{}, never opened{}: the trace holds no GPU activity", spec, why);
}

void printSummary(const std::string& path, const Session& session, double wall_seconds) {
  bool complete = get(session, schema::session_key::kComplete, "") == "1";
  fmt::print(stderr, "cuoverlap: trace {}{}\n", stderrText(path),
             complete ? "" : " (a process ended before the collector finished: holds its last commit)");
  fmt::print(stderr, "  records: {}\n", stderrText(recordsLine(session)));
  fmt::print(stderr, "  dropped records: {}\n", stderrText(get(session, schema::session_key::kDroppedRecords)));
  if (session.count(std::string(schema::session_key::kCapture)) != 0) {
    fmt::print(stderr, "  capture window: {}\n", stderrText(captureLine(session)));
  }
  fmt::print(stderr, "  wall time: {:.3f} s\n", wall_seconds);
}

// The collector prints a warning whenever it could not trace a process that used CUDA; without
// one, the program made no CUDA call.
void printNoTrace(const std::string& output, double wall_seconds, bool collector_warned) {
  if (collector_warned) {
    fmt::print(stderr, "cuoverlap: no trace written to {}: the collector could not trace the program "
               "(its warning is above); wall time {:.3f} s\n", stderrText(output), wall_seconds);
  } else {
    fmt::print(stderr, "cuoverlap: no trace written to {}: the program made no CUDA call (nothing "
               "loaded the collector); wall time {:.3f} s\n", stderrText(output), wall_seconds);
  }
}

struct RunPlan {
  bool merged = true;
  std::string output;   // merged: the file; per process: the pattern
  std::string run_dir;
  std::uint64_t start_ns = 0;
  pid_t child = 0;
  bool collector_warned = false;  // a collector said why it could not trace (schema::kCollectorWarnedFile)
};

std::vector<TracedProcess> verifiedTraces(RunPlan& plan) {
  plan.collector_warned = lexists(plan.run_dir + "/" + schema::kCollectorWarnedFile);
  std::vector<TracedProcess> kept;
  for (TracedProcess& process : waitForTracedProcesses(plan.run_dir, g_stop_waiting)) {
    if (plan.merged && process.trace != plan.run_dir + "/" + std::to_string(process.pid) + ".sqlite") continue;
    std::string problem = verifyTrace(process, plan.start_ns, getuid());
    if (problem == "no file") continue;  // it touched CUDA but recorded nothing
    if (!problem.empty()) {
      fmt::print(stderr, "cuoverlap: warning: ignoring {} (pid {}): {}\n", stderrText(process.trace),
                 process.pid, stderrText(problem));
      continue;
    }
    kept.push_back(process);
  }
  std::sort(kept.begin(), kept.end(), [](const TracedProcess& a, const TracedProcess& b) {
    return std::make_pair(get(a.session, schema::session_key::kStartNs, ""), a.pid) <
           std::make_pair(get(b.session, schema::session_key::kStartNs, ""), b.pid);
  });
  return kept;
}

// The traces written: the merged file, or none when merging failed.
std::vector<std::string> reportMerged(const RunPlan& plan, const RecordArgs& args,
                                      const std::vector<TracedProcess>& traces, double wall) {
  if (traces.empty()) return removeRunDir(plan.run_dir), printNoTrace(plan.output, wall, plan.collector_warned), std::vector<std::string>{};
  std::vector<std::string> parts;
  for (const TracedProcess& process : traces) parts.push_back(process.trace);
  try {
    schema::MergeOptions options{joinCommand(args.command), static_cast<std::uint32_t>(plan.child), args.force};
    if (parts.size() == 1) schema::adoptTraceFile(parts[0], plan.output, options);
    else schema::mergeTraceFiles(parts, plan.output, options);
  } catch (const std::exception& e) {
    fmt::print(stderr, "cuoverlap: error: {}; the per-process traces are in {}\n",
               stderrText(e.what()), stderrText(plan.run_dir));
    return {};
  }
  removeRunDir(plan.run_dir);
  Session session = readSession(plan.output);
  printSummary(plan.output, session, wall);
  fmt::print(stderr, "  processes: {}\n", traces.size());
  for (const TracedProcess& process : traces) {
    fmt::print(stderr, "    {}\n", stderrText(processLine(process.pid, process.session)));
  }
  return {plan.output};
}

std::vector<std::string> reportPerProcess(const RunPlan& plan, const std::vector<TracedProcess>& traces,
                                          double wall) {
  removeRunDir(plan.run_dir);
  if (traces.empty()) return printNoTrace(plan.output, wall, plan.collector_warned), std::vector<std::string>{};
  std::vector<std::string> written;
  for (const TracedProcess& process : traces) {
    foldWal(process.trace);
    printSummary(process.trace, process.session, wall);
    fmt::print(stderr, "  process: {}\n", stderrText(processLine(process.pid, process.session)));
    written.push_back(process.trace);
  }
  return written;
}

// --summary: each trace's rank summary beside it, made here, after the traced processes exited,
// not in them (docs/summaries.md says why). A summary that cannot be made is a warning: the trace
// is there and `cuoverlap summarize` can make it later.
void writeSummaries(const std::vector<std::string>& traces, bool force) {
  for (const std::string& trace : traces) {
    const std::string path = summaryPathFor(trace);
    try {
      OutputFile out(path, {trace}, force);
      out.stream() << summarizeTrace(trace, AnalysisOptions{});
      out.commit();
      fmt::print(stderr, "  summary: {}\n", stderrText(path));
    } catch (const std::exception& e) {
      fmt::print(stderr, "cuoverlap: warning: no summary of {}: {}\n", stderrText(trace), stderrText(e.what()));
    }
  }
}

// CUOVERLAP_SUMMARY=1, set for the collector alone, asks record for --summary too: under record
// the collector leaves summarizing to it, so the variable is neither lost nor acted on twice.
bool summaryFromEnvironment() {
  const char* value = std::getenv(schema::kEnvSummary);
  if (value == nullptr || *value == '\0' || std::string_view(value) == "0") return false;
  if (std::string_view(value) == "1") return true;
  fmt::print(stderr, "cuoverlap: warning: ignoring {}={} (expected 0 or 1)\n", schema::kEnvSummary,
             stderrText(value));
  return false;
}

int record(const RecordArgs& args) {
  if (args.api != "lean" && args.api != "all") throw UserError("--api must be lean or all");
  const bool summary = args.summary || summaryFromEnvironment();
  const schema::CaptureSpec capture = captureSpec(args);
  const std::string gpu_metrics_us = gpuMetricsUs(args);
  RunPlan plan;
  std::string host = hostName();
  plan.merged = !schema::isPerProcessPattern(args.output);
  plan.output = absolute(plan.merged ? schema::expandOutputPattern(args.output, 0, host) : args.output);
  if (plan.merged && lexists(plan.output) && !args.force) {
    throw UserError(fmt::format("'{}' exists; use --force to overwrite it", plan.output));
  }
  std::string collector = findCollector();
  std::string problem = outputProblem(plan.merged ? plan.output : schema::expandOutputPattern(args.output, 0, host, 0));
  if (problem.empty()) problem = checkCollectorLoads(collector);
  if (problem.empty()) {
    plan.run_dir = makeRunDir(plan.merged, plan.output);
    if (plan.run_dir.empty()) problem = fmt::format("cannot create a run directory: {}", std::strerror(errno));
  }
  if (!problem.empty()) {
    fmt::print(stderr, "cuoverlap: warning: not tracing ({}); the program runs untraced\n",
               stderrText(problem));
    collector.clear();
  }
  if (!collector.empty() && capture.kind == schema::CaptureKind::kSignal) serveCaptureSignal(plan.run_dir);
  std::string pattern = plan.merged ? plan.run_dir + "/%p.sqlite" : args.output;
  plan.start_ns = realtimeNs();
  auto start = std::chrono::steady_clock::now();
  pid_t child = fork();
  if (child < 0) throw UserError(fmt::format("cannot start the program: {}", std::strerror(errno)));
  if (child == 0) execProgram(args, collector, pattern, plan.run_dir, gpu_metrics_us);
  plan.child = child;
  int exit_code = waitForProgram(child);
  if (collector.empty()) return exit_code;
  std::vector<TracedProcess> traces = verifiedTraces(plan);
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const std::vector<std::string> written =
      plan.merged ? reportMerged(plan, args, traces, wall) : reportPerProcess(plan, traces, wall);
  if (summary) writeSummaries(written, args.force);
  return exit_code;
}

}  // namespace

void registerRecordCommand(CLI::App& app, CommandResult& result) {
  auto args = std::make_shared<RecordArgs>();
  auto* cmd = app.add_subcommand("record", "Run a CUDA program and record a trace of it and of "
                                           "every descendant process that uses CUDA");
  cmd->add_option("-o,--output", args->output,
                  "Trace file holding all processes; %p (pid) or %r (rank) in it: one file per "
                  "process; %h is the host name")
      ->capture_default_str();
  cmd->add_flag("--force", args->force, "Overwrite an existing trace file (and summary)");
  cmd->add_flag("--summary", args->summary,
                "Also write each trace's rank summary beside it (NAME.cosum), for analyzing a job "
                "from its summaries (docs/summaries.md); CUOVERLAP_SUMMARY=1 does the same");
  cmd->add_option("--api", args->api, "Runtime/driver calls recorded: lean (those the analysis "
                                      "reads) or all")
      ->capture_default_str();
  cmd->add_option("--capture", args->capture,
                  "Record only a window: cudaProfilerApi (cudaProfilerStart to Stop), "
                  "nvtx:NAME[@FIRST[-LAST]] (instances of NVTX range NAME, from 1, per process) "
                  "or signal (SIGUSR2 to cuoverlap opens and closes it)");
  cmd->add_option("--delay", args->delay,
                  "Seconds after CUDA starts in a process before the window may open (alone: "
                  "opens then)");
  cmd->add_option("--duration", args->duration, "Seconds after which an open window closes");
  cmd->add_option("--gpu-metrics", args->gpu_metrics,
                  "Also sample each GPU's DRAM and L2 traffic and warps active every US "
                  "microseconds (CUPTI PM sampling; 100 is a good start; docs/collector.md)")
      ->type_name("US");
  cmd->add_flag("--no-op-buffers", args->no_op_buffers,
                "Do not record which memory each kernel, copy and memset touched (the driver "
                "callbacks that tell a wait ordering data from one ordering nothing; docs/collector.md)");
  cmd->add_option("command", args->command, "The program and its arguments, after --")
      ->required()
      ->expected(-1);
  setHelpSections(*cmd, {
      "",
      {{"cuoverlap record -o run.sqlite -- ./app --size 1024", "one trace of the program and every process it starts that uses CUDA"},
       {"cuoverlap record -o 'rank%r.sqlite' -- torchrun --nproc-per-node 2 train.py", "one trace per rank"},
       {"cuoverlap record --capture nvtx:step@50-60 -o steps.sqlite -- python train.py", "only steps 50 to 60 of the NVTX range step"},
       {"cuoverlap record --capture signal -o run.sqlite -- ./server", "a window opened and closed by hand: record prints the kill -USR2 line that does it"}},
      {{"N", "the program's own exit status (128+S when signal S ended it): a trace does not change it"},
       {"127", "the program could not be run"},
       {"2", "bad usage, before the program runs: one line on stderr (a bad --capture, an output that exists without --force)"},
       {"3", "internal error (a bug: please report it with the line printed)"}},
      {{"CUOVERLAP_COLLECTOR", "the collector library to inject instead of the one beside cuoverlap "
                               "(runs with your rights, like LD_PRELOAD)"},
       {"TMPDIR", "where the run directory of per-process traces (-o with %p or %r) is made"},
       {"CUOVERLAP_API, CUOVERLAP_COMMIT_MS, ...", "the collector's settings: docs/collector.md"}}});
  cmd->callback([args, &result] { result.exit_code = record(*args); });
}

}  // namespace cuoverlap::cli
