// Diagnosis: why overlap was lost. Idle gaps with their causes, and findings (rules) with
// evidence, estimated time lost and a fix. Definitions: docs/findings.md.
#pragma once

#include <cstdint>
#include <vector>

#include <string_view>

#include "cuoverlap/analysis.h"
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
GapAnalysis diagnoseDevice(const Trace& trace, const Scope& scope, std::uint16_t device_id,
                           Ns threshold_ns, std::vector<Finding>& findings);
// The most costly first; ties keep their order (device order, then rule order).
void sortFindingsByCost(std::vector<Finding>& findings);

// "250", "250ns", "12.5us", "3ms", "1.5s" -> nanoseconds. Throws UserError on anything else.
Ns parseDuration(std::string_view text);

// "START:END" (each as parseDuration, in the trace's own timestamps) -> [start, end).
// Throws UserError when malformed or END <= START.
std::pair<Ns, Ns> parseWindow(std::string_view text);

// With options.scope.range set: one analysis (metrics, gaps, findings) per instance of the NVTX
// range of that name (push/pop or start/end), in time order. Definition: docs/findings.md, "Scope".
std::vector<RangeInstance> analyzeRangeInstances(const Trace& trace, const AnalysisOptions& options);

// The instances summed per device: counts and times added, ratios recomputed (docs/findings.md).
std::vector<DeviceReport> sumRangeInstances(const std::vector<RangeInstance>& instances);
// Findings of all instances merged per (id, device): counts and times added, the worst severity.
std::vector<Finding> mergeRangeFindings(const std::vector<RangeInstance>& instances);

}  // namespace cuoverlap
