#include "lifecycle.h"

#include <pthread.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "collector.h"
#include "cupti/activity_tracing.h"
#include "fork_exclusion.h"

namespace cuoverlap::collector {
namespace {

constexpr auto kExitTimeout = std::chrono::seconds(30);
constexpr auto kSignalTimeout = std::chrono::seconds(5);
constexpr auto kQuickExitSyncTimeout = std::chrono::seconds(2);
constexpr int kFatalWaitMs = 5000;
constexpr int kTerminatingSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
constexpr int kFatalSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};

struct sigaction g_previous[NSIG];
int g_wake_fd = -1;
std::atomic<int> g_requested_signal{0};
std::atomic<long> g_signal_tid{0};     // the thread the terminating signal landed on
std::atomic<long> g_lifecycle_tid{0};  // the thread that finishes the trace for a signal
std::atomic<std::uintptr_t> g_fault_pc{0};  // the first faulting instruction, 0 for none

long currentTid() { return static_cast<long>(syscall(SYS_gettid)); }

bool isFatal(int signal_number) {
  for (int fatal : kFatalSignals) {
    if (fatal == signal_number) return true;
  }
  return false;
}

bool hasOwnHandler(const struct sigaction& action) {
  if (action.sa_flags & SA_SIGINFO) return action.sa_sigaction != nullptr;
  return action.sa_handler != SIG_DFL && action.sa_handler != SIG_IGN;
}

void callHandler(const struct sigaction& action, int signal_number, siginfo_t* info, void* context) {
  if (action.sa_flags & SA_SIGINFO) return action.sa_sigaction(signal_number, info, context);
  action.sa_handler(signal_number);
}

// Async-signal-safe: sigaction and raise only.
void endWithDefaultAction(int signal_number) {
  struct sigaction action {};
  action.sa_handler = SIG_DFL;
  sigemptyset(&action.sa_mask);
  sigaction(signal_number, &action, nullptr);
  raise(signal_number);  // blocked inside the handler: delivered as it returns
}

void wakeLifecycleThread() {
  std::uint64_t one = 1;
  if (g_wake_fd >= 0) (void)!::write(g_wake_fd, &one, sizeof one);
}

void onTerminatingSignal(int signal_number, siginfo_t* info, void* context) {
  int saved_errno = errno;
  const struct sigaction& previous = g_previous[signal_number];
  if (hasOwnHandler(previous)) {
    callHandler(previous, signal_number, info, context);  // the program decides; exit() flushes
  } else if (previous.sa_handler == SIG_IGN) {
    // ignored before the collector came: still ignored
  } else if (!tracingInThisProcess()) {
    endWithDefaultAction(signal_number);  // a forked child, or the trace is already closed
  } else {
    int expected = 0;
    if (g_requested_signal.compare_exchange_strong(expected, signal_number)) {
      g_signal_tid.store(currentTid());
      wakeLifecycleThread();  // it finishes the trace, then ends the process with this signal
    } else {
      endWithDefaultAction(signal_number);  // a second Ctrl-C while the trace is written
    }
  }
  errno = saved_errno;
}

// The instruction a fault signal interrupted (async-signal-safe: reads the context only).
std::uintptr_t programCounter(const void* context) {
  if (context == nullptr) return 0;
  const auto* machine = &static_cast<const ucontext_t*>(context)->uc_mcontext;
#if defined(__x86_64__)
  return static_cast<std::uintptr_t>(machine->gregs[REG_RIP]);
#elif defined(__aarch64__)
  return static_cast<std::uintptr_t>(machine->pc);
#else
  (void)machine;
  return 0;
#endif
}

void sleepOneMillisecond() {
  timespec ts{0, 1000000};
  nanosleep(&ts, nullptr);
}

void onFatalSignal(int signal_number, siginfo_t* info, void* context) {
  int saved_errno = errno;
  if (tracingInThisProcess() && currentTid() != g_lifecycle_tid.load()) {
    if (info != nullptr && info->si_code > 0) {  // a fault: note where, for the session table
      std::uintptr_t none = 0;
      g_fault_pc.compare_exchange_strong(none, programCounter(context));
    }
    int expected = 0;
    if (g_requested_signal.compare_exchange_strong(expected, signal_number)) wakeLifecycleThread();
    // Bounded: the crash may hold a lock the flush needs.
    for (int waited = 0; waited < kFatalWaitMs && !collectorFinished(); ++waited) sleepOneMillisecond();
  }
  const struct sigaction& previous = g_previous[signal_number];
  bool sent = info == nullptr || info->si_code <= 0;  // kill/raise/abort, not a fault
  if (hasOwnHandler(previous)) {
    callHandler(previous, signal_number, info, context);
  } else if (previous.sa_handler == SIG_IGN && sent) {
    // ignored before the collector came
  } else if (sent) {
    endWithDefaultAction(signal_number);
  } else {
    // A fault: with the default action back, the faulting instruction runs again and ends the
    // process by this signal, as it would have untraced.
    struct sigaction action {};
    action.sa_handler = SIG_DFL;
    sigemptyset(&action.sa_mask);
    sigaction(signal_number, &action, nullptr);
  }
  errno = saved_errno;
}

void finishAfterSignal(int signal_number) {
  bool fatal = isFatal(signal_number);
  std::string fault_at;
  if (const std::uintptr_t pc = g_fault_pc.load(); fatal && pc != 0) {
    fault_at = mappedLocation(pc, reinterpret_cast<std::uintptr_t>(&programCounter));
    std::fprintf(stderr, "cuoverlap: the traced process got signal %d at %s; the trace keeps what it recorded until then\n",
                 signal_number, fault_at.c_str());
  }
  finishCollector(fatal ? std::chrono::milliseconds(kFatalWaitMs - 500) : kSignalTimeout,
                  "signal " + std::to_string(signal_number), false, fault_at);
  if (fatal) return;  // the handler waits for this and takes the previous action itself
  sigaction(signal_number, &g_previous[signal_number], nullptr);
  long tid = g_signal_tid.load();
  if (tid <= 0 || syscall(SYS_tgkill, getpid(), tid, signal_number) != 0) kill(getpid(), signal_number);
}

void lifecycleLoop() {
  g_lifecycle_tid.store(currentTid());
  for (;;) {
    std::uint64_t count = 0;
    ssize_t n = ::read(g_wake_fd, &count, sizeof count);
    if (n < 0 && errno == EINTR) continue;
    if (n != static_cast<ssize_t>(sizeof count)) return;
    int signal_number = g_requested_signal.load();
    if (signal_number != 0) return finishAfterSignal(signal_number);
  }
}

void startLifecycleThread() {
  g_wake_fd = eventfd(0, EFD_CLOEXEC);
  if (g_wake_fd < 0) return;  // signals then take their default action, unflushed
  sigset_t all, previous;
  sigfillset(&all);
  for (int synchronous : {SIGSEGV, SIGBUS, SIGFPE, SIGILL}) sigdelset(&all, synchronous);
  pthread_sigmask(SIG_BLOCK, &all, &previous);
  std::thread(lifecycleLoop).detach();  // never joined: exit paths may run on any thread
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
}

void onProcessExit() { finishCollector(kExitTimeout, "exit", true); }

// quick_exit runs no atexit handler and the program may not have waited for its GPU work: wait
// for it (bounded, on the calling thread's context) so that the kernels end in the trace.
void onQuickExit() {
  if (!tracingInThisProcess()) return;
  activity::synchronizeCurrentContext(kQuickExitSyncTimeout);
  finishCollector(kExitTimeout, "quick_exit", true);
}

void installHandler(int signal_number, void (*handler)(int, siginfo_t*, void*)) {
  struct sigaction action {};
  action.sa_sigaction = handler;
  action.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&action.sa_mask);
  sigaction(signal_number, &action, &g_previous[signal_number]);
}

}  // namespace

std::string mappedLocation(std::uintptr_t address, std::uintptr_t own) {
  std::ifstream maps("/proc/self/maps");
  std::string base_file, address_file, own_file;
  std::uintptr_t base = 0, address_base = 0;
  for (std::string line; std::getline(maps, line);) {
    std::istringstream fields(line);
    std::uintptr_t start = 0, end = 0, offset = 0;
    char dash = 0;
    std::string permissions, device, inode, file;
    fields >> std::hex >> start >> dash >> end >> permissions >> offset >> device >> inode;
    std::getline(fields >> std::ws, file);
    if (file.empty()) file = "[anonymous]";
    if (file != base_file || offset == 0) {  // a file's mappings follow its first, at offset 0
      base_file = file;
      base = start - offset;
    }
    if (start <= address && address < end) {
      address_file = file;
      address_base = base;
    }
    if (start <= own && own < end) own_file = file;
  }
  if (address_file.empty()) {
    char unmapped[64];
    std::snprintf(unmapped, sizeof unmapped, "0x%jx (unmapped)", static_cast<std::uintmax_t>(address));
    return unmapped;
  }
  char offset[32];
  std::snprintf(offset, sizeof offset, "+0x%jx", static_cast<std::uintmax_t>(address - address_base));
  std::string location = address_file + offset;
  if (address_file == own_file) location += " in the cuoverlap collector";
  return location;
}

void installLifecycleHooks() {
  std::atexit(onProcessExit);
  std::at_quick_exit(onQuickExit);
  pthread_atfork(nullptr, nullptr, detachCollectorInChild);
  installForkExclusion();
  startLifecycleThread();
  if (g_wake_fd < 0) return;
  for (int signal_number : kTerminatingSignals) installHandler(signal_number, onTerminatingSignal);
  for (int signal_number : kFatalSignals) installHandler(signal_number, onFatalSignal);
}

}  // namespace cuoverlap::collector
