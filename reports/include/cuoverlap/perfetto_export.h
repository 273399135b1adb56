// Export of a trace as Chrome trace-event JSON, which ui.perfetto.dev and chrome://tracing load.
//
// Layout: one process per device ("GPU 0: name") with one thread per stream; GPU ops are complete
// ("X") events with cat "kernel", "memcpy" or "memset" (kernels with their grid and block in x, y,
// z). Ops that overlap on one stream (graph nodes, clock jitter) would be mis-nested or dropped by
// the viewers, so they go on extra threads of that stream ("stream 7 · overlap 1"). Above the
// streams of each device, two tracks from the analysis (analyzeTrace): "idle gaps" (a complete
// event per idle gap, cat "idle_gap", named by its cause) and "findings" (an instant event, cat
// "finding", at each evidence time, named by the finding's id). Each host process (named by its
// command when the trace has it, with its rank) has its threads with their CUDA API calls (cat
// "cuda_api"), NVTX push/pop ranges on a track per thread and start/end ranges on tracks of their
// own (cat "nvtx"), and flow arrows (ph s/f, cat "launch") from each call to the ops it launched
// (same process and correlation id).
//
// Size: names longer than 256 bytes are shown shortened (trace_event_common.h displayName); such
// an event's args.name_index points into otherData.names, which holds each full name once. The
// file is written as it is built, in chunks of about 1 MiB.
//
// Timestamps are microseconds with three decimals (exact nanoseconds) relative to the earliest
// timestamp in the trace (also with filters), so they keep nanosecond precision as doubles; the
// origin is written to otherData.time_origin_ns.
#pragma once

#include <cstdint>
#include <iosfwd>

#include "cuoverlap/analysis.h"
#include "cuoverlap/model.h"

namespace cuoverlap {

// What to export. scope.device: only that device's ops, and the calls and NVTX ranges of the
// processes with ops on it; scope.window_start/end: only what intersects the window;
// scope.range: only what intersects the union of that NVTX range's instances (projected onto
// the GPU as analyze --range does). Events are kept whole, not clipped. The gap and finding
// tracks come from analyzeTrace with these options.
struct PerfettoExportOptions {
  AnalysisOptions analysis;
};

struct PerfettoExportStats {
  std::uint64_t ops = 0;       // complete events for GPU ops
  std::uint64_t calls = 0;     // complete events for runtime/driver calls
  std::uint64_t flows = 0;     // launch -> op arrows
  std::uint64_t nvtx = 0;      // NVTX ranges and marks
  std::uint64_t gaps = 0;      // events on the idle-gap tracks
  std::uint64_t unified_memory = 0;  // events on the unified-memory tracks
  std::uint64_t gpu_metrics = 0;     // counter events of the GPU metrics
  std::uint64_t memory_usage = 0;    // counter events of the device memory allocated
  std::uint64_t findings = 0;  // events on the finding tracks
  std::uint64_t long_names = 0;  // full names in otherData.names
};

PerfettoExportStats writePerfettoTrace(const Trace& trace, std::ostream& out,
                                       const PerfettoExportOptions& options = {});

}  // namespace cuoverlap
