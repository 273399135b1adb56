// Unified-memory activity of a trace inside a scope, per device (docs/metrics.md, "Unified memory").
#pragma once

#include <optional>

#include "cuoverlap/report.h"

namespace cuoverlap {

// Per device: GPU page-fault groups and the faults in them, the time the driver spent servicing
// them (the union of the groups), migrations by direction with their bytes and the union of their
// times; for the trace, CPU page faults and thrashing records. A record is in scope when its pid
// and device match and its start lies in the window. Empty when the scope holds none.
std::optional<UnifiedMemoryReport> summarizeUnifiedMemory(const Trace& trace, const Scope& scope);

}  // namespace cuoverlap
