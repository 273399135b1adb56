#include "capture_control.h"

#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <thread>

#include "cupti/activity_tracing.h"

namespace cuoverlap::collector {
namespace {

constexpr int kSwitchPollMs = 20;  // how often the run's switch file is looked at (one stat)

int g_wake_fd = -1;
std::atomic<std::uint64_t> g_toggles{0};
struct sigaction g_previous_usr2 {};

void onToggleSignal(int signal_number, siginfo_t* info, void* context) {
  g_toggles.fetch_add(1);
  const std::uint64_t one = 1;
  if (g_wake_fd >= 0) (void)!write(g_wake_fd, &one, sizeof one);
  const struct sigaction& previous = g_previous_usr2;
  if (previous.sa_flags & SA_SIGINFO) {
    if (previous.sa_sigaction != nullptr) previous.sa_sigaction(signal_number, info, context);
  } else if (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN) {
    previous.sa_handler(signal_number);
  }
}

void installToggleHandler() {
  struct sigaction action {};
  action.sa_sigaction = onToggleSignal;
  action.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&action.sa_mask);
  sigaction(SIGUSR2, &action, &g_previous_usr2);
}

bool switchFileExists(const std::string& path) {
  struct stat info {};
  return !path.empty() && ::stat(path.c_str(), &info) == 0;
}

// Serves the clock and the switch: sleeps until the next deadline, a signal or the next look at
// the switch file. Blocks every asynchronous signal (they belong to the program's threads).
void controlLoop(CaptureWindow* window, std::string switch_file) {
  const bool by_signal = window->spec().kind == schema::CaptureKind::kSignal;
  for (;;) {
    const std::uint64_t now = activity::timestampNs();
    const std::uint64_t deadline = window->nextDeadlineNs();
    int wait_ms = deadline == 0 ? -1 : static_cast<int>(std::min<std::uint64_t>(
                                           deadline > now ? (deadline - now) / 1000000 + 1 : 0, 60000));
    // A window a callback opens gets its --duration deadline only then: look again soon.
    const bool look_often = (by_signal && !switch_file.empty()) || window->spec().duration_s > 0.0;
    if (look_often) wait_ms = wait_ms < 0 ? kSwitchPollMs : std::min(wait_ms, kSwitchPollMs);
    pollfd wake{g_wake_fd, POLLIN, 0};
    if (poll(&wake, 1, wait_ms) > 0) {
      std::uint64_t count = 0;
      (void)!read(g_wake_fd, &count, sizeof count);
    }
    const std::uint64_t at = activity::timestampNs();
    if (by_signal) {
      const bool want_open = switchFileExists(switch_file) != (g_toggles.load() % 2 == 1);
      activity::applyWindowChange(window->onSwitch(want_open, at));
    }
    activity::applyWindowChange(window->onTick(at));
  }
}

}  // namespace

CaptureWindow& startCaptureWindow(const schema::CaptureSpec& spec, const std::string& run_dir,
                                  std::uint64_t now_ns) {
  auto* window = new CaptureWindow(spec, now_ns);
  activity::attachCaptureWindow(*window);
  const bool by_signal = spec.kind == schema::CaptureKind::kSignal;
  const std::string switch_file = run_dir.empty() ? "" : run_dir + "/" + schema::kCaptureOpenFile;
  if (by_signal) {
    // A signal `record` got before this process started CUDA already opened the run's window.
    activity::applyWindowChange(window->onSwitch(switchFileExists(switch_file), now_ns));
  }
  activity::applyWindowChange(window->onTick(now_ns));
  if (!by_signal && spec.delay_s <= 0.0 && spec.duration_s <= 0.0) return *window;
  g_wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  sigset_t all, previous;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &previous);
  std::thread(controlLoop, window, switch_file).detach();  // lives until the process ends
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  if (by_signal) installToggleHandler();
  return *window;
}

}  // namespace cuoverlap::collector
