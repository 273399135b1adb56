// Runs a session's capture window (capture_window.h): attaches CUPTI's triggers and, when the
// spec needs a clock (--delay, --duration) or a signal, a thread that serves them.
//
// `--capture signal`: SIGUSR2 toggles the window. The handler only counts and writes to an eventfd
// (async-signal-safe), then calls the program's own SIGUSR2 handler if one was installed before the
// collector started (one installed later replaces ours, as for the lifecycle signals). Under
// `record`, the run's switch file (<run dir>/capture-open, which SIGUSR2 to `record` creates and
// removes) holds every traced process open, including processes that start CUDA after the signal:
// the window is open while (file exists) != (this process got an odd number of SIGUSR2s).
#pragma once

#include <string>

#include "capture_window.h"

namespace cuoverlap::collector {

// Never destroyed (CUPTI may call back during exit). `now_ns`: CUPTI's clock at the start.
CaptureWindow& startCaptureWindow(const schema::CaptureSpec& spec, const std::string& run_dir,
                                  std::uint64_t now_ns);

}  // namespace cuoverlap::collector
