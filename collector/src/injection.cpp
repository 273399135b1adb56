// Entry points called by the CUDA driver (CUDA_INJECTION64_PATH) and by NVTX
// (NVTX_INJECTION64_PATH), and the process-lifecycle hooks: atexit, SIGINT/SIGTERM, fork.
// Nothing here may exit, abort or throw into the host program.
#include <pthread.h>
#include <signal.h>

#include <chrono>
#include <cstdlib>

#include "collector.h"
#include "cupti/activity_tracing.h"

namespace cuoverlap::collector {
namespace {

constexpr auto kExitTimeout = std::chrono::seconds(30);
constexpr auto kSignalTimeout = std::chrono::seconds(5);
constexpr int kHandledSignals[] = {SIGINT, SIGTERM};
struct sigaction g_previous[NSIG];

void onProcessExit() { finishCollector(kExitTimeout); }

// The application's own handler runs instead of ours when it has one (if it exits, atexit
// flushes); otherwise the trace is flushed and the signal's previous action runs, so the exit
// status is what it would have been untraced. Flushing here is not async-signal-safe: a signal
// that lands while its thread holds a CUPTI or collector lock can cost the flush (bounded wait).
void onTerminatingSignal(int signal_number, siginfo_t* info, void* context) {
  const struct sigaction& previous = g_previous[signal_number];
  if (previous.sa_flags & SA_SIGINFO) return previous.sa_sigaction(signal_number, info, context);
  if (previous.sa_handler == SIG_IGN) return;
  if (previous.sa_handler != SIG_DFL) return previous.sa_handler(signal_number);
  finishCollector(kSignalTimeout);
  sigaction(signal_number, &previous, nullptr);
  raise(signal_number);  // delivered when this handler returns
}

void installLifecycleHooks() {
  std::atexit(onProcessExit);
  pthread_atfork(nullptr, nullptr, detachCollectorInChild);
  for (int signal_number : kHandledSignals) {
    struct sigaction action {};
    action.sa_sigaction = onTerminatingSignal;
    action.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&action.sa_mask);
    sigaction(signal_number, &action, &g_previous[signal_number]);
  }
}

bool startWithHooks() {
  static bool tracing = [] {
    bool started = startCollectorOnce();
    if (started) installLifecycleHooks();
    return started;
  }();
  return tracing;
}

}  // namespace
}  // namespace cuoverlap::collector

extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {
  cuoverlap::collector::startWithHooks();
  return 1;  // the program runs either way
}

// Returning 0 turns NVTX calls into no-ops when the process is not traced.
extern "C" __attribute__((visibility("default"))) int InitializeInjectionNvtx2(
    const void* get_export_table) {
  if (!cuoverlap::collector::startWithHooks()) return 0;
  return cuoverlap::collector::activity::initializeNvtx(get_export_table) ? 1 : 0;
}
