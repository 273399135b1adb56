// Phases of a run and its steady state (definitions: steady_state.cpp, docs/metrics.md).
#pragma once

#include <vector>

#include "cuoverlap/analysis.h"

namespace cuoverlap::phases {

// The steady state of the scoped trace (found == false with a reason when there is none), in
// parts for analyzeTrace's two threads: its iterations and window (devices and findings empty);
// then the window's analysis but for the devices' metrics; then those, from steadyWindowMetrics
// (on any thread once the window is chosen), added in the devices' order.
SteadyState chooseSteadyState(const Trace& trace, const AnalysisOptions& options);
void analyzeSteadyWindow(const Trace& trace, const AnalysisOptions& options, SteadyState& steady);
std::vector<DeviceMetrics> steadyWindowMetrics(const Trace& trace, const AnalysisOptions& options,
                                               const SteadyState& steady);
void addSteadyWindowMetrics(SteadyState& steady, std::vector<DeviceMetrics> metrics);

// Start-up and the idle stretches longer than a quarter of the run.
Phases findPhases(const Trace& trace, const Scope& scope);

}  // namespace cuoverlap::phases
