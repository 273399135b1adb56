// The rank summary's tables (docs/summaries.md): one home for the writer and the reader.
//
// Collectives are kept in blocks of kCollectivesPerBlock of one stream, a row per block, each a
// BLOB of unsigned LEB128 varints, per collective: type_id, start − the previous collective's
// start (the block's first: start − summary_streams.first_start), end − start, then the window
// before it: compute, idle and HtoD ns, then its exposed pieces: their count and, per piece, its
// start − the previous piece's end (the first: − the collective's start) and its length (signed
// values zigzag-encoded: (v << 1) ^ (v >> 63)). About 18 bytes a collective where a row of
// integers takes 40, and one SQLite step per block: merging 4,096 ranks reads 82 million
// collectives. Format cuoverlap.summary/2 (/1 had no exposed pieces).
#pragma once

#include <cstdint>

namespace cuoverlap::summary {

inline constexpr std::uint64_t kCollectivesPerBlock = 64;

// summary_meta keys: format (kSummaryFormatId), trace (the summarized trace's path), options
// (analysisOptionsKey), report (the TraceReport, report_codec.h), ranks and collectives (counts,
// checked on reading), collectives_per_block.
inline constexpr const char* kCreateTables = R"SQL(
CREATE TABLE summary_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE summary_ranks (
  rank_row INTEGER PRIMARY KEY, pid INTEGER NOT NULL, launcher_rank INTEGER, world_size INTEGER,
  host TEXT NOT NULL, device_id INTEGER NOT NULL, metrics TEXT NOT NULL);
CREATE TABLE summary_streams (
  rank_row INTEGER NOT NULL, stream INTEGER NOT NULL, context_id INTEGER NOT NULL,
  stream_id INTEGER NOT NULL, collectives INTEGER NOT NULL, first_type_id INTEGER NOT NULL,
  first_start INTEGER NOT NULL, first_end INTEGER NOT NULL, PRIMARY KEY (rank_row, stream));
CREATE TABLE summary_collective_types (type_id INTEGER PRIMARY KEY, name TEXT NOT NULL);
CREATE TABLE summary_collectives (
  rank_row INTEGER NOT NULL, stream INTEGER NOT NULL, first_sequence INTEGER NOT NULL,
  count INTEGER NOT NULL, data BLOB NOT NULL,
  PRIMARY KEY (rank_row, stream, first_sequence)) WITHOUT ROWID;
)SQL";

}  // namespace cuoverlap::summary
