// A traced process's entry in `record`'s run directory (CUOVERLAP_RUN_DIR): the file
// <run_dir>/<pid>.lock holds the path of the trace this process writes, and stays flock-ed
// (LOCK_EX) from before the trace is created until the trace is closed. `record` reads the entries
// to learn every file of the run, and waits on the locks for every traced process, including
// descendants that outlive the program it started. A killed process's lock is released by the
// kernel. The entry appears (rename) already locked, so record never sees an unlocked live one.
#pragma once

#include <string>

namespace cuoverlap::collector {

class RunRegistration {
 public:
  RunRegistration() = default;
  RunRegistration(const RunRegistration&) = delete;
  RunRegistration& operator=(const RunRegistration&) = delete;
  ~RunRegistration() = default;  // never unlocks on destruction: only release() does

  // Registers this process; returns "" or why not (the process then runs untraced).
  std::string registerTrace(const std::string& run_dir, const std::string& trace_path);
  // The trace path changed before the file was created (pid-suffixed name).
  void updateTracePath(const std::string& trace_path);
  // The trace was not created after all: the entry is removed.
  void withdraw();
  // The trace is closed: record may read it now.
  void release();
  // In a forked child: the inherited descriptor must not keep the parent's lock alive.
  void closeInForkedChild();

 private:
  int fd_ = -1;
  std::string entry_path_;
};

}  // namespace cuoverlap::collector
