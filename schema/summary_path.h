// Where a trace's rank summary goes by default: beside the trace, its extension (.sqlite,
// .sqlite.gz, .db, .json, .json.gz) replaced by ".cosum". One rule for every writer of summaries:
// `cuoverlap summarize`, `record --summary` and the collector's summary at exit
// (CUOVERLAP_SUMMARY), which passes the name to the summarizer it starts (docs/summaries.md).
#pragma once

#include <string>
#include <string_view>

namespace cuoverlap::schema {

inline constexpr std::string_view kSummaryExtension = ".cosum";

inline std::string summaryPathFor(const std::string& trace_path) {
  for (const std::string_view extension : {".sqlite", ".sqlite.gz", ".json.gz", ".json", ".db"}) {
    if (trace_path.size() > extension.size() &&
        trace_path.compare(trace_path.size() - extension.size(), extension.size(), extension) == 0) {
      return trace_path.substr(0, trace_path.size() - extension.size()) + std::string(kSummaryExtension);
    }
  }
  return trace_path + std::string(kSummaryExtension);
}

}  // namespace cuoverlap::schema
