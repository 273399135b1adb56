// The analysis pipeline: one trace in, one TraceReport out (metrics per device, idle gaps and
// findings). Every front end (analyze, gate, diff, reports) goes through analyzeTrace().
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>

#include "cuoverlap/report.h"

namespace cuoverlap {

struct AnalysisOptions {
  Scope scope;
  Ns gap_threshold_ns = 10'000;  // gaps shorter than this are not attributed (docs/gaps.md says why)
  // With Scope::range: how many instances TraceReport::range_instances keeps in full (the slowest,
  // in time order); the summary always covers all of them.
  std::size_t range_detail = static_cast<std::size_t>(-1);
  // Without Scope::range and a window: find the phases and the steady state (phases/).
  bool steady_state = true;
  // `analyze --iterations NAME`: the NVTX range whose instances are the steady state's iterations
  // (a name, "step 7", its pattern "step N" or the glob `cuoverlap ranges` prints, "step *"),
  // instead of the candidate chosen (phases/). A name that no range has is a UserError.
  std::optional<std::string> iterations;
  // --window as the user wrote it ("START:END", absolute or "+9.7ms:+20ms" relative to each
  // trace's first GPU op): analyzeTrace resolves it per trace into scope.window_start/end, so that
  // the files of one job can each have their own origin. Empty: scope's window as set.
  std::string window;
};

// The start of the trace's first GPU op (start > 0, any device); 0 without ops. Relative times
// ("+9.741ms") in reports and in --window count from it.
Ns firstOpStart(const Trace& trace);

// Builds every index the analyses build lazily over `trace` (trace_index.h, the call index), so
// that several threads may then analyze it at once: they only read them.
void buildTraceIndices(const Trace& trace);

TraceReport analyzeTrace(const Trace& trace, const AnalysisOptions& options);
// The same, and `beside` called on the calling thread with the whole run's report (its devices
// and findings; not yet its phases and steady state, which may still be found on a thread of
// their own) once that is done: work that needs only those runs beside the steady state.
TraceReport analyzeTrace(const Trace& trace, const AnalysisOptions& options,
                         const std::function<void(const TraceReport&)>& beside);

}  // namespace cuoverlap
