// User-facing names of enum values, shared by every renderer so that text, JSON, Markdown and
// HTML say the same thing.
#pragma once

#include <string_view>

#include "cuoverlap/report.h"

namespace cuoverlap {

std::string_view engineName(Engine engine);        // "compute", "h2d", "d2h", "d2d", "other_copy", "memset", "comm"
std::string_view gapCauseName(GapCause cause);     // "sync-wait", "allocation", ...
std::string_view severityName(Severity severity);  // "info", "warning", "error"
std::string_view opKindName(OpKind kind);          // "kernel", "memcpy", "memset"
std::string_view copyKindName(CopyKind kind);      // "HtoD", "DtoH", ...
std::string_view memKindName(MemKind kind);        // "pageable", "pinned", ...
std::string_view sourceName(TraceSource source);   // "cuoverlap", "nsys"

}  // namespace cuoverlap
