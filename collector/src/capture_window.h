// The capture window's state machine (schema/capture_spec.h): told about the triggers (profiler
// start/stop, NVTX pushes/pops/starts/ends, SIGUSR2 toggles, the clock), it says when recording
// must start or stop. No CUPTI here: cupti/capture_triggers.cpp feeds it and toggles the
// activity kinds; the tests feed it by hand.
//
// NVTX instances are counted per process in call order: the k-th push (or start) of a range named
// NAME in the default domain is instance k. A per-thread stack of pushes tells which pop ends an
// instance; start/end ranges are matched by the id nvtxRangeStart returned. The window opens at the
// start of instance FIRST and closes at the end of instance LAST.
//
// Thread-safe: every call takes one mutex (a push/pop costs a lock and a hash lookup).
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "capture_spec.h"

namespace cuoverlap::collector {

enum class WindowChange : std::uint8_t { kNone, kOpen, kClose };

struct WindowSummary {
  bool opened = false;
  std::uint64_t first_open_ns = 0, last_close_ns = 0;  // 0: never
  std::uint64_t windows = 0;
  std::uint64_t instances = 0;  // nvtx: instances of the range seen
};

class CaptureWindow {
 public:
  // `started_ns`: when the collector started (the origin of --delay).
  CaptureWindow(schema::CaptureSpec spec, std::uint64_t started_ns);

  WindowChange onProfilerStart(std::uint64_t now_ns);
  WindowChange onProfilerStop(std::uint64_t now_ns);
  WindowChange onRangePush(std::uint64_t thread, const char* name, std::uint64_t now_ns);
  WindowChange onRangePop(std::uint64_t thread, std::uint64_t now_ns);
  WindowChange onRangeStart(std::uint64_t range_id, const char* name, std::uint64_t now_ns);
  WindowChange onRangeEnd(std::uint64_t range_id, std::uint64_t now_ns);
  // SIGUSR2 (or the run's shared switch) asks for the window open or closed.
  WindowChange onSwitch(bool want_open, std::uint64_t now_ns);
  // The clock: opens after --delay (without another trigger) and closes after --duration.
  WindowChange onTick(std::uint64_t now_ns);
  // When onTick next has something to do (0: never).
  std::uint64_t nextDeadlineNs() const;

  bool isOpen() const;
  // Whether [start_ns, end_ns] meets a window (one still open reaches to the future). The writer
  // keeps an NVTX range only then: marker records stay enabled outside the window, so that the
  // range that opens it and the one that closes it are never cut (their records are taken in the
  // same NVTX call as the trigger, before or after it).
  bool overlapsWindow(std::uint64_t start_ns, std::uint64_t end_ns) const;
  // At the end of the session: a window still open closes at `end_ns`.
  WindowSummary summary(std::uint64_t end_ns) const;
  const schema::CaptureSpec& spec() const { return spec_; }

 private:
  bool delayPassed(std::uint64_t now_ns) const;
  WindowChange open(std::uint64_t now_ns);
  WindowChange close(std::uint64_t now_ns);
  WindowChange instanceBegins(std::uint64_t instance, std::uint64_t now_ns);
  WindowChange instanceEnds(std::uint64_t instance, std::uint64_t now_ns);

  const schema::CaptureSpec spec_;
  const std::uint64_t started_ns_;
  mutable std::mutex mutex_;
  bool open_ = false;
  bool tick_opened_ = false;  // without --capture: the delay's one opening happened
  std::uint64_t opened_at_ns_ = 0;
  WindowSummary summary_;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> intervals_;  // [open, close]; close 0: open
  std::unordered_map<std::uint64_t, std::vector<std::uint64_t>> pushes_;  // thread -> instances (0: other)
  std::unordered_map<std::uint64_t, std::uint64_t> started_ranges_;        // range id -> instance
};

}  // namespace cuoverlap::collector
