#include "summarizer_process.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <vector>

#include "collector_env.h"

extern char** environ;

namespace cuoverlap::collector {
namespace {

using Clock = std::chrono::steady_clock;

constexpr auto kTermGrace = std::chrono::seconds(2);  // SIGTERM, then SIGKILL
constexpr auto kPollInterval = std::chrono::milliseconds(10);
constexpr std::size_t kMaxStderrBytes = 4096;  // the tail kept for the warning
constexpr const char* kSummarizerName = "cuoverlap";

class ErrnoKept {
 public:
  ErrnoKept() : saved_(errno) {}
  ~ErrnoKept() { errno = saved_; }
  ErrnoKept(const ErrnoKept&) = delete;
  ErrnoKept& operator=(const ErrnoKept&) = delete;

 private:
  int saved_;
};

bool isExecutableFile(const std::string& path) {
  struct stat info {};
  return !path.empty() && ::stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode) &&
         ::access(path.c_str(), X_OK) == 0;
}

std::string directoryOf(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
}

std::string absolutePath(const std::string& path) {
  if (path.empty() || path[0] == '/') return path;
  char cwd[PATH_MAX] = {};
  return ::getcwd(cwd, sizeof cwd) == nullptr ? path : std::string(cwd) + "/" + path;
}

// The traced program's environment, less what would make the summarizer trace or summarize itself.
std::vector<std::string> summarizerEnvironment() {
  constexpr std::string_view kDropped[] = {"CUDA_INJECTION64_PATH", "NVTX_INJECTION64_PATH",
                                           schema::kEnvSummary};
  std::vector<std::string> out;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    const std::string_view text(*entry);
    const std::string_view name = text.substr(0, text.find('='));
    bool dropped = false;
    for (std::string_view drop : kDropped) dropped = dropped || name == drop;
    if (!dropped) out.emplace_back(text);
  }
  return out;
}

std::vector<char*> pointersTo(std::vector<std::string>& words) {
  std::vector<char*> pointers;
  for (std::string& word : words) pointers.push_back(word.data());
  pointers.push_back(nullptr);
  return pointers;
}

// posix_spawn's attributes and file actions, destroyed on every path.
struct SpawnSetup {
  posix_spawnattr_t attr;
  posix_spawn_file_actions_t actions;
  bool ready = false;

  explicit SpawnSetup(int stderr_fd) {
    if (posix_spawnattr_init(&attr) != 0) return;
    if (posix_spawn_file_actions_init(&actions) != 0) {
      posix_spawnattr_destroy(&attr);
      return;
    }
    ready = true;
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    // The exiting thread may block signals and the program may ignore some: the summarizer must
    // still end on SIGTERM, and clean up on it.
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &all);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, stderr_fd, 2);
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
    posix_spawn_file_actions_addclosefrom_np(&actions, 3);  // the program's sockets, pipes, locks
#endif
  }
  ~SpawnSetup() {
    if (!ready) return;
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
  }
  SpawnSetup(const SpawnSetup&) = delete;
  SpawnSetup& operator=(const SpawnSetup&) = delete;
};

// The summarizer's stderr, read without blocking; only the last kMaxStderrBytes are kept.
class StderrTail {
 public:
  explicit StderrTail(int fd) : fd_(fd) { ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) | O_NONBLOCK); }
  ~StderrTail() { closeEnd(); }
  StderrTail(const StderrTail&) = delete;
  StderrTail& operator=(const StderrTail&) = delete;

  // Reads what is there; waits up to `interval` for more (a plain sleep once the pipe is closed).
  void drain(std::chrono::milliseconds interval) {
    if (fd_ >= 0) {
      pollfd ready{fd_, POLLIN, 0};
      ::poll(&ready, 1, static_cast<int>(interval.count()));
    } else {
      timespec pause{0, static_cast<long>(interval.count()) * 1000000L};
      ::nanosleep(&pause, nullptr);
    }
    char buffer[1024];
    while (fd_ >= 0) {
      const ssize_t n = ::read(fd_, buffer, sizeof buffer);
      if (n > 0) {
        text_.append(buffer, static_cast<std::size_t>(n));
        if (text_.size() > kMaxStderrBytes) text_.erase(0, text_.size() - kMaxStderrBytes);
      } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
        closeEnd();  // end of file: the summarizer (and whatever inherited its stderr) is gone
      } else if (errno == EAGAIN) {
        break;
      }
    }
  }
  std::string lastLine() const {
    std::string_view text(text_);
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.remove_suffix(1);
    const std::size_t newline = text.rfind('\n');
    if (newline != std::string_view::npos) text.remove_prefix(newline + 1);
    return std::string(text);
  }

 private:
  void closeEnd() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  int fd_;
  std::string text_;
};

int exitStatusOf(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

// Waits for `run.pid` until `deadline`, reading its stderr. True once it is gone.
bool waitUntil(SummarizerRun& run, StderrTail& tail, Clock::time_point deadline, int& status) {
  for (;;) {
    const pid_t reaped = ::waitpid(run.pid, &status, WNOHANG);
    if (reaped == run.pid || (reaped < 0 && errno == ECHILD)) {
      run.reaped = true;
      if (reaped < 0) status = -1;  // reaped by the program (SIGCHLD ignored, or its own wait)
      tail.drain(std::chrono::milliseconds(0));
      return true;
    }
    if (Clock::now() >= deadline) return false;
    tail.drain(kPollInterval);
  }
}

void endAfterTimeout(SummarizerRun& run, StderrTail& tail, int& status) {
  run.outcome = SummarizerRun::Outcome::kTimedOut;
  run.kill_signal = SIGTERM;
  ::kill(run.pid, SIGTERM);
  if (waitUntil(run, tail, Clock::now() + kTermGrace, status)) return;
  run.kill_signal = SIGKILL;
  ::kill(run.pid, SIGKILL);
  // Bounded even so: a child stuck in an uninterruptible read (a hung file system) is left to
  // init rather than holding the program's exit.
  waitUntil(run, tail, Clock::now() + kTermGrace, status);
}

bool fileExists(const std::string& path) {
  struct stat info {};
  return ::lstat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode);
}

// Under memory pressure the kernel's OOM killer takes the summarizer, not a rank waiting for it
// (which would then die of SIGKILL instead of its own exit status). Raising the score needs no
// privilege; the window between exec and this write is microseconds of the summarizer's start.
void preferForOomKill(pid_t pid) {
  const std::string path = "/proc/" + std::to_string(pid) + "/oom_score_adj";
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return;
  (void)!::write(fd, "1000", 4);
  ::close(fd);
}

// A pipe for the summarizer's stderr, both ends above 2: a program that closed its standard
// descriptors would get them among 0..2, which the child's file actions reuse. "" or why not.
std::string openStderrPipe(int (&pipe_fds)[2]) {
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) return std::strerror(errno);
  for (int& fd : pipe_fds) {
    if (fd > 2) continue;
    const int moved = ::fcntl(fd, F_DUPFD_CLOEXEC, 3);
    ::close(fd);
    fd = moved;
  }
  if (pipe_fds[0] >= 0 && pipe_fds[1] >= 0) return "";
  for (int fd : pipe_fds) {
    if (fd >= 0) ::close(fd);
  }
  return "no descriptor for the summarizer's stderr";
}

SummarizerRun spawnAndWait(const std::string& summarizer, const std::string& trace,
                           const std::string& output, std::chrono::milliseconds timeout) {
  SummarizerRun run;
  int pipe_fds[2];
  run.detail = openStderrPipe(pipe_fds);
  if (!run.detail.empty()) return run;
  StderrTail tail(pipe_fds[0]);
  std::vector<std::string> argv_words = {summarizer, "summarize", "-q", trace, "-o", output};
  std::vector<std::string> env_words = summarizerEnvironment();
  std::vector<char*> argv = pointersTo(argv_words), envp = pointersTo(env_words);
  int error = ENOMEM;
  {
    SpawnSetup setup(pipe_fds[1]);
    if (setup.ready) {
      error = posix_spawn(&run.pid, summarizer.c_str(), &setup.actions, &setup.attr, argv.data(),
                          envp.data());
    }
  }
  ::close(pipe_fds[1]);
  if (error != 0) {
    run.pid = -1;
    run.detail = std::string("cannot start ") + summarizer + ": " + std::strerror(error);
    return run;
  }
  preferForOomKill(run.pid);
  int status = 0;
  if (!waitUntil(run, tail, Clock::now() + timeout, status)) endAfterTimeout(run, tail, status);
  run.detail = tail.lastLine();
  if (run.outcome == SummarizerRun::Outcome::kTimedOut) return run;
  run.exit_status = status == -1 ? -1 : exitStatusOf(status);
  const bool written = run.exit_status == 0 || (run.exit_status == -1 && fileExists(output));
  run.outcome = written ? SummarizerRun::Outcome::kWritten : SummarizerRun::Outcome::kFailed;
  return run;
}

}  // namespace

std::string thisLibraryPath() {
  Dl_info info{};
  if (::dladdr(reinterpret_cast<void*>(&thisLibraryPath), &info) == 0 || info.dli_fname == nullptr) {
    return "";
  }
  return absolutePath(info.dli_fname);
}

std::string findSummarizer(const std::string& override_path, const std::string& library_path,
                           std::string& reason) {
  if (!override_path.empty()) {
    const std::string path = absolutePath(override_path);
    if (isExecutableFile(path)) return path;
    reason = std::string(schema::kEnvBin) + "=" + override_path + " is not an executable file";
    return "";
  }
  std::vector<std::string> directories = {directoryOf(library_path)};
  if (char* real = ::realpath(library_path.c_str(), nullptr)) {
    if (directoryOf(real) != directories[0]) directories.push_back(directoryOf(real));
    std::free(real);
  }
  for (const std::string& dir : directories) {
    for (const std::string& candidate : {dir + "/" + kSummarizerName, dir + "/../bin/" + kSummarizerName}) {
      if (isExecutableFile(candidate)) return candidate;
    }
  }
  reason = std::string("no cuoverlap command beside the collector (") + directories[0] +
           ") or in ../bin; set " + schema::kEnvBin;
  return "";
}

SummarizerRun runSummarizer(const std::string& summarizer, const std::string& trace,
                            const std::string& output, std::chrono::milliseconds timeout) {
  ErrnoKept errno_kept;
  try {
    return spawnAndWait(summarizer, trace, output, timeout);
  } catch (...) {  // allocation failure: nothing of it may reach the program
    SummarizerRun run;
    run.detail = "internal error";
    return run;
  }
}

}  // namespace cuoverlap::collector
