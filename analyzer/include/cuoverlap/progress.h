// How far long work is (reading a trace, analyzing it, writing an export), for the command line's
// progress line (cli/terminal.h, ProgressLine). Work names its phase with the units it will take
// and says how many are done; the line reads a snapshot a few times a second. Reporting costs a
// relaxed atomic store, so readers report every few thousand rows.
//
// The state is process-wide. When several files are analyzed at once (analyzeFiles), the files
// done are the progress: the workers' own phases are muted (MuteThisThread).
#pragma once

#include <cstdint>
#include <string>

namespace cuoverlap::progress {

struct Snapshot {
  std::string phase;        // "reading run.sqlite: GPU ops"; empty: nothing reported yet
  std::uint64_t done = 0;
  std::uint64_t total = 0;  // 0: no known amount (no percentage)
};

// Starts a phase of `total` units, none done yet.
void phase(std::string name, std::uint64_t total = 0);
// Units of the current phase done so far (absolute, not added).
void done(std::uint64_t units);
Snapshot snapshot();

// While alive, phase() and done() from this thread are ignored.
class MuteThisThread {
 public:
  MuteThisThread();
  ~MuteThisThread();
  MuteThisThread(const MuteThisThread&) = delete;
  MuteThisThread& operator=(const MuteThisThread&) = delete;

 private:
  bool was_muted_;
};

}  // namespace cuoverlap::progress
