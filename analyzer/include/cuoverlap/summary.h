// Rank summaries (docs/summaries.md): what the job analysis needs from one analyzed trace, in a
// small versioned SQLite file (`.cosum`), so that a job's ranks are analyzed where their traces
// lie and only the summaries travel. A summary holds the trace's report (devices whole run and
// steady state, findings with costs and evidence, gap totals by cause, the phases and iterations'
// spread) and, per rank of the trace, its row of the job table and every collective (stream,
// sequence number, type, start, end, the window before it). Its size grows with the collectives,
// not with the ops.
//
// Reading: openSummary reads the report and the ranks' headers; the collectives stay in the file
// and the job analysis streams them (job.h, CollectiveReader).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "cuoverlap/analysis.h"
#include "cuoverlap/job.h"
#include "summary_path.h"

namespace cuoverlap {

inline constexpr std::string_view kSummaryFormatId = "cuoverlap.summary/2";
inline constexpr std::string_view kSummaryExtension = schema::kSummaryExtension;

// The options a report depends on, as one string: a summary made with other options than the
// analysis asks for would give another report.
std::string analysisOptionsKey(const AnalysisOptions& options);

// The bytes of the summary file of `report` and `ranks` (rankTimelines of the same trace and
// options, their collectives in memory).
std::string serializeSummary(const TraceReport& report, const std::vector<RankTimeline>& ranks,
                             const AnalysisOptions& options);

// True for a path ending in kSummaryExtension.
bool isSummaryPath(std::string_view path);

struct RankSummary {
  TraceReport report;
  std::vector<RankTimeline> ranks;  // their collectives read from the file (RankTimeline::reader)
  std::string options;              // analysisOptionsKey of the options it was made with
  std::string trace_path;           // the trace it summarizes
};

// Opens a summary: UserError naming the file when it is no summary, of another format version,
// or truncated. `file_index` as for rankTimelines.
RankSummary openSummary(const std::string& path, std::size_t file_index);

}  // namespace cuoverlap

namespace cuoverlap {

// Reads and analyzes one trace (analyzeTrace, rankTimelines) and returns its summary's bytes.
std::string summarizeTrace(const std::string& trace_path, const AnalysisOptions& options);

// Where a summary of `trace_path` goes by default: beside it, its extension (.sqlite, .json,
// .json.gz) replaced by kSummaryExtension (schema/summary_path.h: the collector names it the same).
std::string summaryPathFor(const std::string& trace_path);

}  // namespace cuoverlap
