// The analysis pipeline: one trace in, one TraceReport out (metrics per device, idle gaps and
// findings). Every front end (analyze, gate, diff, reports) goes through analyzeTrace().
#pragma once

#include "cuoverlap/report.h"

namespace cuoverlap {

struct AnalysisOptions {
  Scope scope;
  Ns gap_threshold_ns = 10'000;  // gaps shorter than this are not attributed (docs/gaps.md says why)
};

TraceReport analyzeTrace(const Trace& trace, const AnalysisOptions& options);

}  // namespace cuoverlap
