// Export of a trace as Chrome trace-event JSON, which ui.perfetto.dev and chrome://tracing load.
//
// Layout: one process per device ("GPU 0: name") with one thread per stream; GPU ops are complete
// ("X") events with cat "kernel", "memcpy" or "memset". Ops that overlap on one stream (graph
// nodes, clock jitter) would be mis-nested or dropped by the viewers, so they go on extra threads
// of that stream ("stream 7 · overlap 1"). Each host process has its threads with their CUDA API
// calls (cat "cuda_api"), NVTX push/pop ranges on a track per thread and start/end ranges on
// tracks of their own (cat "nvtx"), and flow arrows (ph s/f, cat "launch") from each call to the
// ops it launched (same process and correlation id).
//
// Timestamps are microseconds with three decimals (exact nanoseconds) relative to the earliest
// timestamp in the trace, so they keep nanosecond precision as doubles; the origin is written
// to otherData.time_origin_ns.
#pragma once

#include <cstdint>
#include <iosfwd>

#include "cuoverlap/model.h"

namespace cuoverlap {

struct PerfettoExportStats {
  std::uint64_t ops = 0;     // complete events for GPU ops
  std::uint64_t calls = 0;   // complete events for runtime/driver calls
  std::uint64_t flows = 0;   // launch -> op arrows
  std::uint64_t nvtx = 0;    // NVTX ranges and marks
};

PerfettoExportStats writePerfettoTrace(const Trace& trace, std::ostream& out);

}  // namespace cuoverlap
