// The one trace reader: our traces (CUOVERLAP_SESSION present), Nsight Systems SQLite exports
// (schema variants from about 2020 to 2026) and PyTorch profiler (Kineto) JSON traces, plain or
// gzipped, into the in-memory model of model.h.
#pragma once

#include <string>

#include "cuoverlap/model.h"

namespace cuoverlap {

// A file starting with gzip's magic bytes or with '{' is read as Kineto JSON (streamed; memory
// grows with the GPU ops, calls and ranges kept, not with the file; truncated gzip, malformed
// JSON, wrong top-level type, no traceEvents or non-numeric timestamps are UserErrors). Otherwise
// Opens `path` read-only (immutable: no locks, no journal, the file is never modified; a trace
// with a -wal/-journal beside it, whose writer did not finish, is read through a private copy up
// to its last commit, and Trace::warnings says so) and loads every activity it holds. Only real
// tables are read, within the bounds of analyzer/src/sqlite_db.h (deadline, rows, value size). Missing tables mean no such activity; missing columns are tolerated
// unless a metric needs them. Vectors come back sorted by start. Throws UserError on bad input
// (missing, empty, non-SQLite, truncated file, no trace tables, wrong column types, a view in
// place of a table, a bound hit, a device id outside 0..65535).
Trace readTrace(const std::string& path);

}  // namespace cuoverlap
