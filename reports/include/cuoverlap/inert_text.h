// Text that a trace or a user controls, made safe for a terminal line: stderr's error and warning
// lines, the `ranges` listing. Control characters, bidi overrides and invalid UTF-8 are escaped
// as in every report (reports/src/render_common.h, render::inert), newlines included, and the
// result is cut to at most `max_bytes` bytes of the escaped text (never inside a UTF-8 sequence
// or an escape) with "… (cut; N bytes in all)" — so an error is one line of bounded length.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace cuoverlap {

constexpr std::size_t kMaxErrorLineBytes = 2000;

std::string inertLine(std::string_view text, std::size_t max_bytes);

}  // namespace cuoverlap
