// Every way out of a traced process, and how the trace reaches the file on each (docs/collector.md,
// "Lifecycle"):
//   exit(), return from main, exit() from any thread   atexit -> finishCollector, then the
//                                                       summary (CUOVERLAP_SUMMARY, exit_summary.h)
//   quick_exit()                                        at_quick_exit -> bounded GPU sync, finish,
//                                                       summary
//   SIGINT, SIGTERM, SIGHUP, SIGQUIT (default action)   handler wakes the lifecycle thread, which
//                                                       finishes the trace, restores the default
//                                                       action and sends the signal again
//   the same with the program's own handler installed   the program's handler runs (chained when
//     before the first CUDA call / after it             installed before, replacing ours after)
//   a second one of those while the flush runs          the default action at once
//   SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT (abort,    handler wakes the lifecycle thread, waits
//     std::terminate)                                   (bounded) for the finish, then the
//                                                       previous action: the same exit status
//   SIGKILL, OOM killer, _exit()                        nothing runs: the file holds the last
//                                                       commit (every 100 ms by default)
// The handlers only write to an eventfd, read atomics, call getpid/sigaction/raise/nanosleep: no
// allocation, lock or stdio.
#pragma once

namespace cuoverlap::collector {

// Installs the hooks once, after the session started.
void installLifecycleHooks();

}  // namespace cuoverlap::collector
