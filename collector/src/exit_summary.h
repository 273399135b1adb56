// The rank summary at exit for processes traced without `record` (CUOVERLAP_SUMMARY=1;
// docs/summaries.md, "Ranks launched without record"): once the process's trace is finished and
// closed, `cuoverlap summarize` writes NAME.cosum beside it, the name `record --summary` gives
// (schema/summary_path.h). The summarizing runs in a process of its own (summarizer_process.h),
// which the exiting process waits for, bounded by CUOVERLAP_SUMMARY_TIMEOUT: a launcher ends its
// step, and kills what is left of it, when the ranks have exited, so the summary must be written
// by then. Only an exit (exit, return from main, quick_exit) summarizes; a signal or a crash does
// not, and neither does a trace the collector could not finish. The exit status stays the one the
// program chose: the wait happens inside exit(), whose status is already set.
#pragma once

#include <chrono>
#include <string>

#include "collector_options.h"

namespace cuoverlap::collector {

struct ExitSummary {
  bool active = false;
  std::string summarizer;  // the `cuoverlap` command
  std::string trace;       // absolute: the program may change directory before it exits
  std::string output;
  std::chrono::seconds timeout{600};
  bool quiet = false;
};

// Decided once the trace's name is final (after openTraceOutput): inactive without
// CUOVERLAP_SUMMARY=1 and under `record` (a run directory: record summarizes, once). A requested
// summary without a `cuoverlap` command to make it is one warning now, none at exit.
ExitSummary planExitSummary(const CollectorOptions& options, const std::string& library_path);

// After the trace was closed complete: runs the summarizer and waits. One line on stderr: the
// summary's path (unless quiet), or a warning saying why there is none. Never throws; keeps errno.
void writeExitSummary(const ExitSummary& plan);

}  // namespace cuoverlap::collector
