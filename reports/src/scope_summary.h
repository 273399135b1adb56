// The lines that say what part of a run a trace report covers: the time base of "+" times, the
// NVTX range summary (--range) and the steady state. Plain text; each renderer escapes and lays
// them out (text: indented lines, Markdown: a list, HTML: <ul>). Definitions: docs/reports.md.
#pragma once

#include <string>
#include <vector>

#include "cuoverlap/report.h"

namespace cuoverlap::render {

// "times are relative to the first GPU op, at 1795333499520 ns (trace clock)".
std::string timeBaseLine(const TraceReport& trace);

// Empty unless the trace was recorded in a capture window: "trace is a capture window:
// nvtx:step@50-60 (open 812.4 ms, from +0 ns); nothing outside it was recorded", or that it never
// opened.
std::string captureWindowLine(const TraceReport& trace);

// Empty without --range. First line: the pattern, the count and the total; then one line each.
std::vector<std::string> rangeSummaryLines(const TraceReport& trace);

// Empty without phases. The plain notes on long idle stretches, then the steady state: its source,
// iterations (warm-up dropped), iteration times and span, then one line per device with its
// headline metrics next to the whole run's; or why no steady state was found.
std::vector<std::string> steadyStateLines(const TraceReport& trace);

// A steady state was found and its own block (devices, findings) differs from the whole run's:
// false when its window holds every GPU op of the run, so the report says it once.
bool hasSeparateSteadyState(const TraceReport& trace);
// Empty without unified-memory activity in scope. One line per device ("unified memory, device 0:
// 512 GPU page faults in 32 groups serviced over 9.5 ms; 32 migrations moved 64.0 MiB HtoD, 0 B
// DtoH over 1.0 ms"), then the CPU page faults and thrashing records when there are any.
std::vector<std::string> unifiedMemoryLines(const TraceReport& trace);
// Empty without GPU metrics. One line per device ("GPU metrics, device 0 (every 10.0 µs, 2310
// samples): DRAM Read 1.21 TB/s, ..., Warps Active 35.2%"), then the kernels with most time (at
// most five), each with its values over its launches that ran alone.
std::vector<std::string> gpuMetricsLines(const TraceReport& trace);

}  // namespace cuoverlap::render
