// analyzeWindows' single window in two parts, for analyzeTrace's two threads: the steady state's
// window analyzed without its metrics on one, its metrics on the other (window_analysis.cpp).
#pragma once

#include <vector>

#include "cuoverlap/diagnosis.h"

namespace cuoverlap {

// analyzeWindows(trace, options, {window})[0] with each device's metrics empty but its device_id.
WindowReport analyzeWindowWithoutMetrics(const Trace& trace, const AnalysisOptions& options,
                                         Interval window);
// The metrics that analyzeWindows gives each device of that window, in the same order.
std::vector<DeviceMetrics> windowMetrics(const Trace& trace, const Scope& scope, Interval window);

}  // namespace cuoverlap
