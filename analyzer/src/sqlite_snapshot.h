// A consistent, private snapshot of a trace that still has a write-ahead log (-wal) or a rollback
// journal (-journal) beside it: the program that wrote it was killed, or is still writing.
//
// Opening such a file `immutable` ignores the log (half the trace, silently); opening it normally
// would create -shm/-wal files next to the input, or fail in a read-only directory. Instead the
// database and its log are copied into a fresh directory of our own (TMPDIR), where SQLite
// recovers the last committed state; nothing is ever written next to the input.
//
// Consistency: a checkpoint may run while we copy. WAL frames are only ever appended between
// restarts, and a restart rewrites the 32-byte WAL header (new salts), so the copy is retried
// when the header of the log we copied differs from the header seen before copying the database.
// A torn last frame fails its checksum and SQLite ignores it: the snapshot ends at the last commit.
//
// Bounds: a log larger than CUOVERLAP_MAX_LOG_MIB (default 256 MiB; a killed collector's log holds
// at most a few MiB) is refused before anything is copied, and the copy stops at the reader's
// deadline; both are one-line errors. The copies are removed on every exit path: errors and
// exceptions through the destructor, signals through cuoverlap/temporary_files.h.
//
// The same private directory holds a gzip-compressed trace (`trace.sqlite.gz`, as the lab corpora
// store theirs) inflated to read it: SQLite reads only plain files. Bounds: the inflated size
// (CUOVERLAP_MAX_INFLATE_MIB, default 16384 MiB: a gzip file can expand a thousandfold) and the
// reader's deadline; a truncated or corrupt stream is a one-line error, never a partial trace.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "cuoverlap/temporary_files.h"

namespace cuoverlap::sqlite {

class PrivateSnapshot {
 public:
  // True when `path` has a non-empty -wal or -journal beside it.
  static bool needed(const std::string& path);

  // True when `path` is gzip data whose content starts as an SQLite database does.
  static bool gzippedSqlite(const std::string& path);

  // Throws UserError; `deadline`: when the copy must have finished.
  PrivateSnapshot(const std::string& path, std::chrono::steady_clock::time_point deadline);
  // The inflated content of gzip file `path` (gzippedSqlite), which has no log.
  struct Inflate {};
  PrivateSnapshot(const std::string& path, std::chrono::steady_clock::time_point deadline, Inflate);
  ~PrivateSnapshot();
  PrivateSnapshot(const PrivateSnapshot&) = delete;
  PrivateSnapshot& operator=(const PrivateSnapshot&) = delete;

  const std::string& databasePath() const { return database_; }
  std::uint64_t logBytes() const { return log_bytes_; }  // size of the -wal/-journal copied
  const char* logSuffix() const { return log_suffix_; }
  bool inflated() const { return inflated_; }  // a gzip file's content, not a log replayed

 private:
  void makeDirectory();
  void removeFiles();
  std::string directory_;
  std::vector<temporary::Registration> registrations_;  // the directory and its files
  std::string database_;
  std::uint64_t log_bytes_ = 0;
  const char* log_suffix_ = "-wal";
  bool inflated_ = false;
};

}  // namespace cuoverlap::sqlite
