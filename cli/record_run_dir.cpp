#include "record_run_dir.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/core.h>
#include <sqlite3.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <thread>

#include "trace_schema.h"

namespace cuoverlap::cli {
namespace {

constexpr std::uint64_t kClockSlackNs = 2'000'000'000;  // CUPTI's clock vs ours

// "<pid>.lock" -> pid, else 0.
pid_t pidOfEntry(const std::string& name) {
  constexpr std::string_view kSuffix = ".lock";
  if (name.size() <= kSuffix.size() || name.compare(name.size() - kSuffix.size(), kSuffix.size(), kSuffix) != 0) return 0;
  std::string digits = name.substr(0, name.size() - kSuffix.size());
  if (digits.empty() || digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos) return 0;
  return static_cast<pid_t>(std::stol(digits));
}

// Whether the entry's lock is free: the process closed its trace or no longer exists.
bool entryFinished(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return true;
  bool free = flock(fd, LOCK_SH | LOCK_NB) == 0;
  ::close(fd);
  return free;
}

std::vector<TracedProcess> scanRunDir(const std::string& dir) {
  std::vector<TracedProcess> found;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return found;
  while (dirent* entry = readdir(d)) {
    TracedProcess process;
    process.pid = pidOfEntry(entry->d_name);
    if (process.pid <= 0) continue;
    std::string path = dir + "/" + entry->d_name;
    process.finished = entryFinished(path);
    std::ifstream in(path);
    std::getline(in, process.trace);
    found.push_back(process);
  }
  closedir(d);
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.pid < b.pid; });
  return found;
}

Session readSessionTable(sqlite3* db, const char* sql) {
  Session session;
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v2(db, sql, -1, &stmt, nullptr) == SQLITE_OK) {
    while (sqlite3_step(stmt) == SQLITE_ROW) {
      const unsigned char* key = sqlite3_column_text(stmt, 0);
      const unsigned char* value = sqlite3_column_text(stmt, 1);
      if (key == nullptr) continue;
      session[reinterpret_cast<const char*>(key)] = value != nullptr ? reinterpret_cast<const char*>(value) : "";
    }
  }
  sqlite3_finalize(stmt);
  return session;
}

}  // namespace

bool lexists(const std::string& path) {
  struct stat info {};
  return ::lstat(path.c_str(), &info) == 0;
}

std::string makeRunDir(bool merged, const std::string& output) {
  const char* tmp = std::getenv("TMPDIR");
  std::string base = merged ? output + ".parts-" : std::string(tmp != nullptr && *tmp ? tmp : "/tmp") + "/cuoverlap-run-";
  std::string name = base + "XXXXXX";
  if (mkdtemp(name.data()) == nullptr) return "";
  return name;
}

void removeRunDir(const std::string& dir) {
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* entry = readdir(d)) {
      std::string name = entry->d_name;
      if (name != "." && name != "..") ::unlink((dir + "/" + name).c_str());
    }
    closedir(d);
  }
  ::rmdir(dir.c_str());
}

// Waits until every registered process has released its lock (a descendant may outlive the
// program record started); SIGINT/SIGTERM to record stop the wait.
std::vector<TracedProcess> waitForTracedProcesses(const std::string& dir,
                                                  const volatile sig_atomic_t& stop) {
  auto notice_at = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  bool noticed = false;
  for (;;) {
    std::vector<TracedProcess> processes = scanRunDir(dir);
    std::string running;
    for (const TracedProcess& p : processes) {
      if (!p.finished) running += (running.empty() ? "" : " ") + std::to_string(p.pid);
    }
    if (running.empty()) return processes;
    if (stop) {
      fmt::print(stderr, "cuoverlap: stopped waiting for traced processes {}: their traces hold "
                 "their last commit\n", running);
      return processes;
    }
    if (!noticed && std::chrono::steady_clock::now() >= notice_at) {
      fmt::print(stderr, "cuoverlap: waiting for traced processes still running ({}); Ctrl-C stops "
                 "waiting\n", running);
      noticed = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

// Read-only, never through a symlink.
Session readSession(const std::string& path, const char* sql) {
  sqlite3* db = nullptr;
  Session session;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOFOLLOW, nullptr) == SQLITE_OK) {
    session = readSessionTable(db, sql);
  }
  sqlite3_close(db);
  return session;
}

std::string get(const Session& session, std::string_view key, const char* fallback) {
  auto it = session.find(std::string(key));
  return it != session.end() ? it->second : std::string(fallback);
}

// Whether the trace an entry names is this run's: a regular file of ours (not a link), whose
// session names the entry's pid and began after the run started. "" or why not.
std::string verifyTrace(TracedProcess& process, std::uint64_t run_start_ns, uid_t uid) {
  struct stat info {};
  if (::lstat(process.trace.c_str(), &info) != 0) return "no file";
  if (!S_ISREG(info.st_mode) || info.st_uid != uid) return "not a regular file of this user";
  process.session = readSession(process.trace);
  if (get(process.session, schema::session_key::kPid, "") != std::to_string(process.pid)) {
    return "its session names another process";
  }
  std::uint64_t start = std::strtoull(get(process.session, schema::session_key::kStartNs, "0").c_str(), nullptr, 10);
  if (start + kClockSlackNs < run_start_ns) return "written before this run";
  return "";
}

// A killed process's last commits are in the WAL beside its file: fold them in so that the file
// stands alone (only for a file verified as this run's).
void foldWal(const std::string& path) {
  if (!lexists(path + "-wal")) return;
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOFOLLOW, nullptr) == SQLITE_OK) {
    sqlite3_exec(db, "PRAGMA journal_mode=DELETE", nullptr, nullptr, nullptr);
  }
  sqlite3_close(db);
}

}  // namespace cuoverlap::cli
