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
// The handlers only write to an eventfd, read and write atomics (a fault's instruction address,
// from the signal context), call getpid/sigaction/raise/nanosleep: no allocation, lock or stdio.
// The lifecycle thread then names where the fault happened (/proc/self/maps): the session's
// fault_at and one line on stderr.
#pragma once

#include <cstdint>
#include <string>

namespace cuoverlap::collector {

// Where `address` lies in this process as "FILE+0xOFFSET": the file mapped there and the address
// relative to where that file is loaded (what addr2line and dladdr's base give), from
// /proc/self/maps (unlike dladdr it takes no loader lock a faulting thread may hold); "0x...
// (unmapped)" where nothing is. " in the cuoverlap collector" follows when the file is the one
// holding `own` (an address in the collector).
std::string mappedLocation(std::uintptr_t address, std::uintptr_t own);

// Installs the hooks once, after the session started.
void installLifecycleHooks();

}  // namespace cuoverlap::collector
