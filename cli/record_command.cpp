// `cuoverlap record [-o OUT] [--force] -- PROGRAM ARGS...`: runs PROGRAM with the collector
// injected (CUDA_INJECTION64_PATH / NVTX_INJECTION64_PATH), forwards SIGINT/SIGTERM to it,
// returns its exit status, and prints a summary read back from the trace it wrote.
#include <CLI/CLI.hpp>
#include <dlfcn.h>
#include <fmt/core.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "collector_env.h"
#include "commands.h"
#include "cuoverlap/error.h"
#include "trace_schema.h"

namespace cuoverlap::cli {
namespace {

constexpr const char* kCollectorFile = "libcuoverlap_collector.so";
constexpr const char* kCollectorEnv = "CUOVERLAP_COLLECTOR";  // overrides the search

struct RecordArgs {
  std::string output{schema::kDefaultOutputPattern};
  bool force = false;
  std::vector<std::string> command;
};

pid_t g_child = 0;

bool fileExists(const std::string& path) {
  struct stat info {};
  return ::stat(path.c_str(), &info) == 0;
}

std::string hostName() {
  char host[256] = {};
  return gethostname(host, sizeof host - 1) == 0 ? host : "localhost";
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
    if (fileExists(candidate)) return candidate;
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

// The collector creates the file inside the program; a directory it cannot write in is found
// here, before the run, so the user gets one clear line instead of a trace that never appears.
std::string outputProblem(const std::string& path) {
  std::size_t slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  auto cannot = [&](const std::string& why) { return fmt::format("cannot write {}: {}", path, why); };
  struct stat info {};
  if (::stat(dir.c_str(), &info) != 0) return cannot(fmt::format("{}: {}", dir, std::strerror(errno)));
  if (!S_ISDIR(info.st_mode)) return cannot(dir + " is not a directory");
  if (::access(dir.c_str(), W_OK) != 0) return cannot(fmt::format("{}: {}", dir, std::strerror(errno)));
  return "";
}

void removeTrace(const std::string& path) {
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) ::unlink((path + suffix).c_str());
}

std::string joinCommand(const std::vector<std::string>& command) {
  std::string joined;
  for (const std::string& word : command) joined += (joined.empty() ? "" : " ") + word;
  return joined;
}

[[noreturn]] void execProgram(const RecordArgs& args, const std::string& collector) {
  std::string output = schema::expandOutputPattern(args.output, getpid(), hostName());
  if (args.force) removeTrace(output);
  if (!collector.empty()) {
    setenv("CUDA_INJECTION64_PATH", collector.c_str(), 1);
    setenv("NVTX_INJECTION64_PATH", collector.c_str(), 1);
    setenv(schema::kEnvOutput, output.c_str(), 1);
    setenv(schema::kEnvQuiet, "1", 1);
    setenv(schema::kEnvCommand, joinCommand(args.command).c_str(), 1);
  }
  std::vector<char*> argv;
  for (const std::string& word : args.command) argv.push_back(const_cast<char*>(word.c_str()));
  argv.push_back(nullptr);
  execvp(argv[0], argv.data());
  fmt::print(stderr, "cuoverlap: error: cannot run '{}': {}\n", args.command[0], std::strerror(errno));
  _exit(127);
}

// A signal sent to cuoverlap alone (kill) goes on to the program; one from the terminal already
// reached the whole process group, the program included, and is not sent twice.
void forwardSignal(int signal_number, siginfo_t* info, void*) {
  if (g_child > 0 && info != nullptr && info->si_code <= 0) kill(g_child, signal_number);
}

int waitForProgram(pid_t child) {
  g_child = child;
  struct sigaction action {};
  action.sa_sigaction = forwardSignal;
  action.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&action.sa_mask);
  for (int signal_number : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) sigaction(signal_number, &action, nullptr);
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);  // as a shell reports it
  return 1;
}

// Opening read-write replays a killed program's last commits (WAL) into the file itself.
std::map<std::string, std::string> readSession(const std::string& path) {
  std::map<std::string, std::string> session;
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr) == SQLITE_OK) {
    sqlite3_exec(db, "PRAGMA journal_mode=DELETE", nullptr, nullptr, nullptr);
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(db, "SELECT key, value FROM CUOVERLAP_SESSION", -1, &stmt, nullptr) ==
        SQLITE_OK) {
      while (sqlite3_step(stmt) == SQLITE_ROW) {
        const unsigned char* value = sqlite3_column_text(stmt, 1);
        session[reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0))] =
            value != nullptr ? reinterpret_cast<const char*>(value) : "";
      }
    }
    sqlite3_finalize(stmt);
  }
  sqlite3_close(db);
  return session;
}

void printSummary(const std::string& path, double wall_seconds) {
  if (!fileExists(path)) {
    fmt::print(stderr, "cuoverlap: no trace written to {}: the program made no CUDA call, or the collector "
               "could not trace it (its warning is above); wall time {:.3f} s\n", path, wall_seconds);
    return;
  }
  auto session = readSession(path);
  std::string records;
  const std::string prefix(schema::session_key::kRecordsPrefix);
  for (const auto& [key, value] : session) {
    if (key.rfind(prefix, 0) == 0 && value != "0") {
      records += fmt::format("{}{} {}", records.empty() ? "" : ", ", key.substr(prefix.size()), value);
    }
  }
  auto get = [&session](std::string_view key) {
    auto it = session.find(std::string(key));
    return it != session.end() ? it->second : std::string("unknown");
  };
  bool complete = session.count(std::string(schema::session_key::kComplete)) != 0;
  fmt::print(stderr, "cuoverlap: trace {}{}\n", path,
             complete ? "" : " (program ended before the collector finished: holds the last commit)");
  fmt::print(stderr, "  records: {}\n", records.empty() ? "none" : records);
  fmt::print(stderr, "  dropped records: {}\n", get(schema::session_key::kDroppedRecords));
  fmt::print(stderr, "  wall time: {:.3f} s\n", wall_seconds);
}

int record(const RecordArgs& args) {
  bool per_process = args.output.find("%p") != std::string::npos;
  std::string fixed_output = schema::expandOutputPattern(args.output, 0, hostName());
  if (!per_process && fileExists(fixed_output)) {
    if (!args.force) throw UserError(fmt::format("'{}' exists; use --force to overwrite it", fixed_output));
  }
  std::string collector = findCollector();
  std::string problem = outputProblem(fixed_output);
  if (problem.empty()) problem = checkCollectorLoads(collector);
  if (!problem.empty()) {
    fmt::print(stderr, "cuoverlap: warning: not tracing ({}); the program runs untraced\n", problem);
    collector.clear();
  }
  auto start = std::chrono::steady_clock::now();
  pid_t child = fork();
  if (child < 0) throw UserError(fmt::format("cannot start the program: {}", std::strerror(errno)));
  if (child == 0) execProgram(args, collector);
  int exit_code = waitForProgram(child);
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!collector.empty()) printSummary(schema::expandOutputPattern(args.output, child, hostName()), wall);
  return exit_code;
}

}  // namespace

void registerRecordCommand(CLI::App& app, CommandResult& result) {
  auto args = std::make_shared<RecordArgs>();
  auto* cmd = app.add_subcommand("record", "Run a CUDA program and record a trace of it");
  cmd->add_option("-o,--output", args->output,
                  "Trace file; %p is the program's pid, %h the host name")
      ->capture_default_str();
  cmd->add_flag("--force", args->force, "Overwrite an existing trace file");
  cmd->add_option("command", args->command, "The program and its arguments, after --")
      ->required()
      ->expected(-1);
  cmd->callback([args, &result] { result.exit_code = record(*args); });
}

}  // namespace cuoverlap::cli
