// `cuoverlap record`'s run directory: where every traced process of a run registers
// (<pid>.lock, flock-ed while it writes; collector/src/run_registry.h) and, for one merged trace,
// writes its part file. Scanning, waiting for the locks, and proving a trace is this run's.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace cuoverlap::cli {

using Session = std::map<std::string, std::string>;

// One traced process, from its entry in the run directory.
struct TracedProcess {
  pid_t pid = 0;
  std::string trace;
  bool finished = false;  // its lock was released: the collector closed the file or it died
  Session session;
};

// Merged: next to the output (same file system). Per process: only the registry, in $TMPDIR.
// Always a fresh directory (mkdtemp, mode 0700): nothing stale in it. "" on failure (errno set).
std::string makeRunDir(bool merged, const std::string& output);
void removeRunDir(const std::string& dir);

// Waits until every registered process has released its lock (a descendant may outlive the
// program record started); `stop` turning non-zero (SIGINT/SIGTERM to record) ends the wait.
std::vector<TracedProcess> waitForTracedProcesses(const std::string& dir, const volatile sig_atomic_t& stop);

// Read-only, never through a symlink; empty when unreadable.
Session readSession(const std::string& path, const char* sql = "SELECT key, value FROM CUOVERLAP_SESSION");
std::string get(const Session& session, std::string_view key, const char* fallback = "unknown");

// Whether the trace an entry names is this run's: a regular file of this user (not a link), whose
// session names the entry's pid and began after the run started. Fills process.session. Returns
// "" or why not ("no file" when the process left none).
std::string verifyTrace(TracedProcess& process, std::uint64_t run_start_ns, uid_t uid);

// A killed process's last commits are in the WAL beside its file: fold them in so that the file
// stands alone (only for a file verified as this run's).
void foldWal(const std::string& path);

bool lexists(const std::string& path);

}  // namespace cuoverlap::cli
