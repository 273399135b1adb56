// One tracing session per process: options from the environment, the trace file, the buffer
// pool, the writer thread and the CUPTI subscription, started once and finished once.
//
// Ends: normal exit, exit() from any thread and return from main go through atexit; SIGINT and
// SIGTERM whose action is the default are flushed, then the default action runs (injection.cpp).
// A forked child traces nothing: it does not own the parent's file or writer thread.
#pragma once

#include <chrono>
#include <string>

namespace cuoverlap::collector {

struct CollectorOptions {
  std::string output_path;  // already expanded
  std::string command;
  bool quiet = false;
};

// Reads CUOVERLAP_OUTPUT (default cuoverlap-%p.sqlite), CUOVERLAP_QUIET, CUOVERLAP_COMMAND.
CollectorOptions optionsFromEnvironment();

// Starts the session on the first call (thread-safe); later calls return the same answer:
// whether tracing runs. On failure one warning has been printed and the program runs untraced.
bool startCollectorOnce();
// Flushes everything, writes the session summary and closes the file; waits at most `timeout`
// for the writer. Only the first call does anything, and only in the process that started it.
void finishCollector(std::chrono::milliseconds timeout);
// pthread_atfork child handler.
void detachCollectorInChild();

}  // namespace cuoverlap::collector
