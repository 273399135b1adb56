// One trace in, its rank summary out: the same analysis as `analyze` (analyzeTrace, then the
// ranks' collectives), kept instead of rendered.
#include <chrono>

#include "cuoverlap/reader.h"
#include "cuoverlap/summary.h"

namespace cuoverlap {

std::string summarizeTrace(const std::string& trace_path, const AnalysisOptions& options) {
  const auto started = std::chrono::steady_clock::now();
  const Trace trace = readTrace(trace_path);
  TraceReport report = analyzeTrace(trace, options);
  const std::vector<RankTimeline> ranks = rankTimelines(trace, options, 0, &report);
  report.analysis_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return serializeSummary(report, ranks, options);
}

std::string summaryPathFor(const std::string& trace_path) {
  for (const std::string_view extension : {".sqlite", ".json.gz", ".json", ".db"}) {
    if (trace_path.size() > extension.size() &&
        trace_path.compare(trace_path.size() - extension.size(), extension.size(), extension) == 0) {
      return trace_path.substr(0, trace_path.size() - extension.size()) + std::string(kSummaryExtension);
    }
  }
  return trace_path + std::string(kSummaryExtension);
}

}  // namespace cuoverlap
