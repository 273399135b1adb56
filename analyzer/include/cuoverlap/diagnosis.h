// Diagnosis: why overlap was lost. Idle gaps with their causes, and findings (rules) with
// evidence, estimated time lost and a fix. Definitions: docs/findings.md.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include <string_view>

#include "cuoverlap/analysis.h"
#include "cuoverlap/intervals.h"
#include "cuoverlap/report.h"

namespace cuoverlap {

// How many of the largest gaps GapAnalysis::largest keeps.
inline constexpr std::size_t kLargestGaps = 10;

// Gaps of at least threshold_ns inside the device's span (within scope), each attributed to one cause.
GapAnalysis analyzeGaps(const Trace& trace, const Scope& scope, std::uint16_t device_id,
                        Ns threshold_ns);

// Every gap of at least threshold_ns with its cause, in time order (analyzeGaps keeps only totals
// and the largest): for timelines that draw them all.
std::vector<IdleGap> listGaps(const Trace& trace, const Scope& scope, std::uint16_t device_id,
                              Ns threshold_ns);

// Every finding rule over the scoped trace; `devices` are the already computed device reports.
std::vector<Finding> runFindings(const Trace& trace, const Scope& scope,
                                 const std::vector<DeviceReport>& devices);

// analyzeGaps and the findings of runFindings for one device, from one view of its ops built once
// and shared (the cost of one view instead of two). The device's findings are appended to
// `findings` unsorted; sortFindingsByCost then orders them as runFindings does.
// When `explained` is given, it receives how much of the device's lost time the findings explain.
GapAnalysis diagnoseDevice(const Trace& trace, const Scope& scope, std::uint16_t device_id,
                           Ns threshold_ns, std::vector<Finding>& findings,
                           FindingsExplained* explained = nullptr);
// The most costly first; ties keep their order (device order, then rule order).
void sortFindingsByCost(std::vector<Finding>& findings);

// "250", "250ns", "12.5us", "3ms", "1.5s" -> nanoseconds. Throws UserError on anything else.
Ns parseDuration(std::string_view text);

// "START:END" -> [start, end). Each side is a parseDuration in the trace's own timestamps, or
// "+DURATION" counted from `origin` (the trace's first GPU op, firstOpStart): "+9.741ms:+20ms".
// Throws UserError when malformed, END <= START, or a "+" side without an origin.
std::pair<Ns, Ns> parseWindow(std::string_view text, std::optional<Ns> origin = std::nullopt);

// A push/pop or start/end range with end > start (not a mark).
bool isNvtxRange(const NvtxRange& range);
// Indices into trace.nvtx of the ranges scope.range selects (exact name, glob, or /regex/;
// range_pattern.cpp) of the scope's process, intersecting its window, in trace order. UserError
// naming the closest range names when the pattern matches no range name of the trace.
std::vector<std::size_t> rangesMatching(const Trace& trace, const Scope& scope);

// Per range (indices into trace.nvtx), the range projected onto the GPU (range_scope.cpp): from
// the first start of the ops launched by calls of its thread that began inside it (the range
// start when none) to max(range end, the last end of those ops).
std::vector<Interval> projectedRangeWindows(const Trace& trace, const std::vector<std::size_t>& ranges);
// Windows sorted by start: each ends no later than where the next begins (disjoint windows).
void endWhereTheNextBegins(std::vector<Interval>& windows);

// With options.scope.range set: the range summary over all instances (report.range_summary), the
// instances' metrics summed per device (report.devices), their findings merged (report.findings)
// and the options.range_detail slowest instances in full (report.range_instances, time order).
void analyzeRanges(const Trace& trace, const AnalysisOptions& options, TraceReport& report);

// With options.scope.range set: one analysis (metrics, gaps, findings) per instance of the NVTX
// range of that name (push/pop or start/end), in time order. Definition: docs/findings.md, "Scope".
std::vector<RangeInstance> analyzeRangeInstances(const Trace& trace, const AnalysisOptions& options);

// What one time window holds: per device in scope with work in the window (every window lists
// Scope::device when set), its metrics and gaps; and the findings of those devices, most costly first.
struct WindowReport {
  std::vector<DeviceReport> devices;
  std::vector<Finding> findings;
};

// One WindowReport per window, each equal to analyzeTrace over options.scope with its window
// intersected with the window, from per-device indices built once (window_analysis.cpp): linear
// in the trace plus the work inside the windows, never a rescan of the trace per window.
std::vector<WindowReport> analyzeWindows(const Trace& trace, const AnalysisOptions& options,
                                         const std::vector<Interval>& windows);
// The same, streamed: visit(window, device report, that device's findings unsorted) per device
// (ascending) and window, device by device, so that nothing per window need be kept.
using WindowVisitor = std::function<void(std::size_t, DeviceReport&&, std::vector<Finding>&&)>;
void analyzeWindows(const Trace& trace, const AnalysisOptions& options,
                    const std::vector<Interval>& windows, const WindowVisitor& visit);

// The instances summed per device: counts and times added, ratios recomputed (docs/findings.md).
std::vector<DeviceReport> sumRangeInstances(const std::vector<RangeInstance>& instances);
// Findings of all instances merged per (id, device): counts and times added, the worst severity.
std::vector<Finding> mergeRangeFindings(const std::vector<RangeInstance>& instances);

}  // namespace cuoverlap
