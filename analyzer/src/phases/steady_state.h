// Phases of a run and its steady state (definitions: steady_state.cpp, docs/metrics.md).
#pragma once

#include "cuoverlap/analysis.h"

namespace cuoverlap::phases {

// The steady state of the scoped trace, analyzed (found == false with a reason when there is none).
SteadyState findSteadyState(const Trace& trace, const AnalysisOptions& options);

// Start-up and the idle stretches longer than a quarter of the run.
Phases findPhases(const Trace& trace, const Scope& scope);

}  // namespace cuoverlap::phases
