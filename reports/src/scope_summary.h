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

}  // namespace cuoverlap::render
