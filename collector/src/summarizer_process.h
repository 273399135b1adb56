// The `cuoverlap summarize` process the collector starts at exit for CUOVERLAP_SUMMARY
// (exit_summary.h): where the command is, and one bounded run of it. Plain POSIX, no CUDA, so the
// CPU tests run it with stand-in commands (tests/collector/summarizer_process_test.cpp).
//
// Nothing here runs the summary in the traced process: the summarizer is a process of its own,
// started with posix_spawn, never fork(). glibc's posix_spawn clones with CLONE_VM|CLONE_VFORK:
// the child shares the parent's memory until it execs and copies no page table, so an MPI rank
// whose buffers are registered with an InfiniBand card (ibverbs) is safe; fork() would mark those
// pages copy-on-write, and the parent's next write would move it off the pages the card writes to.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>

namespace cuoverlap::collector {

// The path of the file holding this code: the collector library when injected (dladdr), made
// absolute; "" if unknown.
std::string thisLibraryPath();

// The `cuoverlap` command for a collector at `library_path`: `override_path` (CUOVERLAP_BIN) when
// given, else beside the library (the build tree: build/cli holds both), else in ../bin (an
// install prefix, the Python wheel), both for the library's path as loaded and its real path.
// Returns "" with `reason` set when none is an executable file.
std::string findSummarizer(const std::string& override_path, const std::string& library_path,
                           std::string& reason);

struct SummarizerRun {
  enum class Outcome { kWritten, kFailed, kTimedOut, kNotStarted };
  Outcome outcome = Outcome::kNotStarted;
  pid_t pid = -1;
  int exit_status = -1;  // kFailed: its exit code, 128+N for signal N, -1 when unknown
  int kill_signal = 0;   // kTimedOut: the signal that ended it (SIGTERM, else SIGKILL)
  bool reaped = false;   // the child is gone (waited for, or reaped by the program)
  std::string detail;    // the last line it wrote on stderr, or why it did not start
};

// Runs `SUMMARIZER summarize -q TRACE -o OUTPUT` and waits for it at most `timeout`; past it,
// SIGTERM (the summarizer removes its temporary file), SIGKILL 2 s later. The child gets default
// signal actions and an empty mask, /dev/null as stdin and stdout, a pipe as stderr, no other
// descriptor of this process, this environment without CUDA_INJECTION64_PATH,
// NVTX_INJECTION64_PATH and CUOVERLAP_SUMMARY, and oom_score_adj 1000. Reaps it; if the program reaps it first (SIGCHLD
// ignored, or its own handler), the outcome is whether OUTPUT exists (written through a rename).
// Never throws; errno is kept.
SummarizerRun runSummarizer(const std::string& summarizer, const std::string& trace,
                            const std::string& output, std::chrono::milliseconds timeout);

}  // namespace cuoverlap::collector
