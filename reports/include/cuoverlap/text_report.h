// The terminal report: a compact summary per device (counts, span/busy/idle, overlap, copy
// hiding, engines, concurrency, ideal time), idle gaps by cause, findings worst first, and NVTX
// range instances when present.
#pragma once

#include <ostream>
#include <string>

#include "cuoverlap/report.h"

namespace cuoverlap {

void renderText(const Report& report, std::ostream& out);
std::string renderTextString(const Report& report);

}  // namespace cuoverlap
