// The one trace reader: our traces (CUOVERLAP_SESSION present) and Nsight Systems SQLite exports
// (schema variants from about 2020 to 2026) into the in-memory model of model.h.
#pragma once

#include <string>

#include "cuoverlap/model.h"

namespace cuoverlap {

// Opens `path` read-only (immutable: no locks, no journal, the file is never modified) and loads
// every activity it holds. Missing tables mean no such activity; missing columns are tolerated
// unless a metric needs them. Vectors come back sorted by start. Throws UserError on bad input
// (missing, empty, non-SQLite, truncated file, no trace tables, wrong column types).
Trace readTrace(const std::string& path);

}  // namespace cuoverlap
