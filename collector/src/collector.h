// One tracing session per process: options from the environment, the trace file, the buffer
// pool, the writer thread and the CUPTI subscription, started once and finished once.
//
// How each way out reaches finishCollector is in lifecycle.cpp. A forked child traces nothing
// with the parent's session: it does not own the parent's file or writer thread (a child that
// initializes CUDA itself, because its parent never did, is injected and traced on its own).
#pragma once

#include <chrono>
#include <string>

#include "collector_options.h"

namespace cuoverlap::collector {

// Starts the session on the first call (thread-safe); later calls return the same answer:
// whether tracing runs. On failure one warning has been printed and the program runs untraced.
bool startCollectorOnce();
// Flushes everything, writes the session summary and closes the file; waits at most `timeout`
// for the writer. Only the first call does the work, and only in the process that started it; a
// concurrent second call (atexit while a signal's flush runs) waits for the first, bounded.
// `ended_by` goes into the session table ("exit", "signal 15", ...). `exiting`: the process ends
// by exit or quick_exit, not a signal; only then is the trace summarized (CUOVERLAP_SUMMARY,
// exit_summary.h), after the file is closed, on the exiting thread. `fault_at`: where a fault
// happened ("FILE+0xOFFSET", lifecycle.cpp), written as the session's fault_at when not empty.
void finishCollector(std::chrono::milliseconds timeout, const std::string& ended_by, bool exiting,
                     const std::string& fault_at = {});
// Whether this process (not a forked copy of it) runs a session not yet finished.
// Async-signal-safe: reads atomics and calls getpid() only.
bool tracingInThisProcess();
// Whether finishCollector has completed (async-signal-safe).
bool collectorFinished();
// pthread_atfork child handler.
void detachCollectorInChild();

}  // namespace cuoverlap::collector
