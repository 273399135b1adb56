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
#pragma once

#include <cstdint>
#include <string>

namespace cuoverlap::sqlite {

class PrivateSnapshot {
 public:
  // True when `path` has a non-empty -wal or -journal beside it.
  static bool needed(const std::string& path);

  explicit PrivateSnapshot(const std::string& path);  // throws UserError
  ~PrivateSnapshot();
  PrivateSnapshot(const PrivateSnapshot&) = delete;
  PrivateSnapshot& operator=(const PrivateSnapshot&) = delete;

  const std::string& databasePath() const { return database_; }
  std::uint64_t logBytes() const { return log_bytes_; }  // size of the -wal/-journal copied
  const char* logSuffix() const { return log_suffix_; }

 private:
  void removeFiles();
  std::string directory_;
  std::string database_;
  std::uint64_t log_bytes_ = 0;
  const char* log_suffix_ = "-wal";
};

}  // namespace cuoverlap::sqlite
