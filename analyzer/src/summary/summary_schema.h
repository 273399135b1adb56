// The rank summary's tables (docs/summaries.md): one home for the writer and the reader.
#pragma once

namespace cuoverlap::summary {

// summary_meta keys: format (kSummaryFormatId), trace (the summarized trace's path), options
// (analysisOptionsKey), report (the TraceReport, report_codec.h), ranks and collectives (row
// counts, checked on reading).
inline constexpr const char* kCreateTables = R"SQL(
CREATE TABLE summary_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE summary_ranks (
  rank_row INTEGER PRIMARY KEY, pid INTEGER NOT NULL, launcher_rank INTEGER, world_size INTEGER,
  host TEXT NOT NULL, device_id INTEGER NOT NULL, metrics TEXT NOT NULL);
CREATE TABLE summary_streams (
  rank_row INTEGER NOT NULL, stream INTEGER NOT NULL, context_id INTEGER NOT NULL,
  stream_id INTEGER NOT NULL, collectives INTEGER NOT NULL, first_id INTEGER NOT NULL,
  PRIMARY KEY (rank_row, stream));
CREATE TABLE summary_collective_types (type_id INTEGER PRIMARY KEY, name TEXT NOT NULL);
CREATE TABLE summary_collectives (
  id INTEGER PRIMARY KEY, rank_row INTEGER NOT NULL, stream INTEGER NOT NULL,
  sequence INTEGER NOT NULL, type_id INTEGER NOT NULL, start INTEGER NOT NULL,
  end INTEGER NOT NULL, compute_before_ns INTEGER NOT NULL, idle_before_ns INTEGER NOT NULL,
  h2d_before_ns INTEGER NOT NULL);
)SQL";

}  // namespace cuoverlap::summary
