// The one trace reader: our traces (CUOVERLAP_SESSION present), Nsight Systems SQLite exports
// (schema variants from about 2020 to 2026) and PyTorch profiler (Kineto) JSON traces, plain or
// gzipped, into the in-memory model of model.h.
#pragma once

#include <string>

#include "cuoverlap/model.h"

namespace cuoverlap {

// A file starting with gzip's magic bytes or with '{' is read as Kineto JSON (streamed; memory
// grows with the GPU ops, calls and ranges kept, not with the file). Otherwise:
// opens `path` read-only (immutable: no locks, no journal, the file is never modified) and loads
// every activity it holds. Missing tables mean no such activity; missing columns are tolerated
// unless a metric needs them. Vectors come back sorted by start. Throws UserError on bad input
// (missing, empty, non-SQLite, truncated file, no trace tables, wrong column types; for JSON:
// truncated gzip, malformed JSON, wrong top-level type, no traceEvents, non-numeric timestamps).
Trace readTrace(const std::string& path);

}  // namespace cuoverlap
