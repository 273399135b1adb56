// Diagnosis: why overlap was lost. Idle gaps with their causes, and findings (rules) with
// evidence, estimated time lost and a fix. Definitions: docs/findings.md.
#pragma once

#include <cstdint>
#include <vector>

#include "cuoverlap/report.h"

namespace cuoverlap {

// How many of the largest gaps GapAnalysis::largest keeps.
inline constexpr std::size_t kLargestGaps = 10;

// Gaps of at least threshold_ns inside the device's span (within scope), each attributed to one cause.
GapAnalysis analyzeGaps(const Trace& trace, const Scope& scope, std::uint16_t device_id,
                        Ns threshold_ns);

// Every finding rule over the scoped trace; `devices` are the already computed device reports.
std::vector<Finding> runFindings(const Trace& trace, const Scope& scope,
                                 const std::vector<DeviceReport>& devices);

}  // namespace cuoverlap
