// Several ranks as one job: the per-rank summary (rank_timeline.cpp), collectives matched across
// ranks and their skew (collective_matching.cpp), the rank-straggler finding (rank_straggler.cpp)
// and the analysis of many rank files in parallel (parallel_files.cpp). Definitions:
// docs/metrics.md, "Several ranks as one job".
//
// Memory: a RankTimeline keeps O(collectives) data, never the rank's ops, so that a job of N rank
// files is analyzed with the trace of one rank per worker thread alive at a time. A rank read from
// a summary keeps none: the job analysis streams its collectives from the file, a slice of
// sequence numbers of every rank at a time (collective_matching.cpp).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cuoverlap/analysis.h"
#include "cuoverlap/intervals.h"
#include "cuoverlap/report.h"

namespace cuoverlap {

// What a rank did just before one of its collectives: from the start of its previous collective
// on the same stream (the rank's first op for the first one) to the collective's start.
struct CollectiveWindow {
  Ns compute_ns = 0;  // |U(compute kernels) ∩ window|
  Ns idle_ns = 0;     // window - |U(all ops) ∩ window|
  Ns h2d_ns = 0;      // |U(HtoD copies) ∩ window|
};

struct RankCollective {
  Ns start = 0;
  Ns end = 0;
  std::string type;  // "AllReduce", ... (collective_name.cpp); the kernel name when not NCCL's
  CollectiveWindow before;
  // Its exposed pieces (no compute kernel of the rank beside it), as offsets from `start`, in
  // order: how much of a wait for a late peer at its start was exposed (peer_wait.h).
  std::vector<Interval> exposed;
};

// The communication kernels of one stream of a rank, in start order.
struct RankStream {
  std::uint32_t context_id = 0;
  std::uint32_t stream_id = 0;
  std::uint64_t count = 0;                  // its collectives
  RankCollective first;                     // the first of them (count > 0)
  std::vector<RankCollective> collectives;  // all of them, or none when RankTimeline::reader
                                            // reads them from a rank summary
};

// Reads the collectives of a rank's streams from where they are kept (a rank summary file,
// summary.h), a slice at a time, so that the job analysis holds a slice of every rank at once and
// never all of them. Throws UserError when the file holds fewer than the stream's count.
class CollectiveReader {
 public:
  virtual ~CollectiveReader() = default;
  // Replaces `out` with collectives [from, to) of stream `stream` (an index into
  // RankTimeline::streams).
  virtual void read(std::size_t stream, std::uint64_t from, std::uint64_t to,
                    std::vector<RankCollective>& out) = 0;
};

// One rank: one process of a trace, on the device where it ran most of its ops.
struct RankTimeline {
  std::string path;
  std::size_t file_index = 0;
  std::uint32_t pid = 0;
  std::optional<std::int32_t> rank;  // from the launcher's variables (Trace::processes)
  std::optional<std::int32_t> world_size;
  std::string host;
  std::uint16_t device_id = 0;
  DeviceMetrics metrics;             // the rank's own ops on that device
  // The trace report's steady-state window on the rank's own clock, when it has one: the job
  // tells the steady-state findings apart from the whole run's (peer_wait.h).
  std::optional<Interval> steady_window;
  std::vector<RankStream> streams;   // communication streams, by first collective start
  std::shared_ptr<CollectiveReader> reader;  // null: the streams hold their collectives
};

// The communication ranks of one analyzed trace (processes with GPU ops in scope; all of them
// when none ran communication), each on its busiest device. `report` (analyzeTrace of the same
// trace and options, optional) lends its device metrics when the trace has one process.
std::vector<RankTimeline> rankTimelines(const Trace& trace, const AnalysisOptions& options,
                                        std::size_t file_index,
                                        const TraceReport* report = nullptr);

// Builds the job analysis from every rank of every file: numbers the ranks, matches collectives,
// computes skews and the rank-straggler finding. Empty when fewer than two ranks ran
// communication kernels.
std::optional<JobAnalysis> analyzeJob(std::vector<RankTimeline> ranks);

// Reads and analyzes `files` on up to `threads` worker threads (0: one per core), one file per
// worker at a time, and joins the per-file reports and rank summaries into one Report with its
// job analysis. Traces are kept (and returned in `traces`, which the report points into) only
// when `keep_traces`; otherwise each is freed as soon as its file is summarized, so memory stays
// bounded by the largest file per worker. The first error in file order is rethrown.
Report analyzeFiles(const std::vector<std::string>& files, const AnalysisOptions& options,
                    bool keep_traces, std::vector<std::unique_ptr<Trace>>& traces,
                    unsigned threads = 0);

}  // namespace cuoverlap
