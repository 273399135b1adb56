// Temporary files that must not outlive the process on any exit path: the output's
// `.NAME.cuoverlap-XXXXXX` before its rename, and the private copy of a trace with a -wal.
//
// Errors and exceptions remove them through their owners' destructors. Signals do not run
// destructors, so each temporary path is also registered here while it exists, and
// installSignalCleanup() sets a handler for SIGINT, SIGTERM, SIGHUP, SIGQUIT and SIGPIPE that
// removes every registered path (files first, then directories) and then dies of the same signal
// (the exit status still says which). SIGXFSZ is ignored instead, so that a write over
// `ulimit -f` fails with EFBIG and goes the error path (one line, exit 2, temporaries removed).
//
// The handler only reads a fixed table of atomics and calls unlink/rmdir (async-signal-safe);
// registering takes a free slot with a compare-and-swap, so threads reading traces in parallel
// may register at the same time. A path that does not fit (more than kSlots at once, or longer
// than PATH_MAX) is still removed by its owner on every path but a signal.
#pragma once

#include <signal.h>

#include <string>

namespace cuoverlap::temporary {

void installSignalCleanup();

// Registers `path` for removal on a signal while this object lives; `directory`: rmdir, not unlink.
class Registration {
 public:
  Registration() = default;
  Registration(const std::string& path, bool directory);
  ~Registration();
  Registration(Registration&& other) noexcept;
  Registration& operator=(Registration&& other) noexcept;
  Registration(const Registration&) = delete;
  Registration& operator=(const Registration&) = delete;

 private:
  int slot_ = -1;
};

// Blocks every signal while it lives: create a temporary and register it inside one, so that no
// signal falls between the two.
class SignalsBlocked {
 public:
  SignalsBlocked();
  ~SignalsBlocked();
  SignalsBlocked(const SignalsBlocked&) = delete;
  SignalsBlocked& operator=(const SignalsBlocked&) = delete;

 private:
  sigset_t previous_;
};

}  // namespace cuoverlap::temporary
