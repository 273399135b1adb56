// One trace in, its rank summary out: the same analysis as `analyze` (analyzeTrace, then the
// ranks' collectives), kept instead of rendered.
#include <chrono>

#include "cuoverlap/reader.h"
#include "cuoverlap/summary.h"

namespace cuoverlap {

std::string summarizeTrace(const std::string& trace_path, const AnalysisOptions& options) {
  const auto started = std::chrono::steady_clock::now();
  const Trace trace = readTrace(trace_path);
  std::vector<RankTimeline> ranks;
  TraceReport report = analyzeTrace(trace, options, [&](const TraceReport& whole_run) {
    ranks = rankTimelines(trace, options, 0, &whole_run);
  });
  report.analysis_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return serializeSummary(report, ranks, options);
}

std::string summaryPathFor(const std::string& trace_path) { return schema::summaryPathFor(trace_path); }

}  // namespace cuoverlap
