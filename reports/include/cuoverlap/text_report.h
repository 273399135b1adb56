// The terminal report: a compact summary per device (counts, span/busy/idle, overlap, copy
// hiding, engines, concurrency, ideal time), idle gaps by cause, findings worst first, and NVTX
// range instances when present.
#pragma once

#include <cstddef>
#include <ostream>
#include <string>

#include "cuoverlap/report.h"

namespace cuoverlap {

// How the text is laid out for a terminal: ANSI colour for severities and headings, and a width
// that prose (summaries, advice, evidence) is wrapped to (0: no limit). Names are shortened in
// the text report at any width; JSON keeps them whole.
struct TextStyle {
  bool color = false;
  std::size_t width = 0;
};

void renderText(const Report& report, std::ostream& out);
void renderText(const Report& report, std::ostream& out, const TextStyle& style);
std::string renderTextString(const Report& report);

}  // namespace cuoverlap
