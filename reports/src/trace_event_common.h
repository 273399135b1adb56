// Pieces shared by the two trace-event exports (perfetto_export.cpp, kineto_export.cpp): JSON
// strings, exact microsecond timestamps, the time origin, names shortened for display, and the
// buffered event stream that writes as it goes (memory stays bounded by the buffer, not the file).
#pragma once

#include <cstddef>
#include <ostream>
#include <string>
#include <string_view>

#include "cuoverlap/model.h"
#include "cuoverlap/progress.h"

namespace cuoverlap::trace_event {

// The exports report their progress (cuoverlap/progress.h) every kProgressItems + 1 ops or calls.
inline constexpr std::size_t kProgressItems = 4095;

// A JSON string literal (quotes included); invalid UTF-8 becomes U+FFFD.
std::string jsonString(std::string_view text);

// Microseconds with exactly three decimals ("-1.234"): integer arithmetic, exact nanoseconds.
std::string fixedMicros(Ns ns);

// The earliest timestamp of any op, call or NVTX range; 0 for an empty trace.
Ns traceOrigin(const Trace& trace);

// Names longer than this many bytes are shown shortened (template arguments and parameters
// elided as render::shortName does, then cut with "…"); exports write the full name once.
inline constexpr std::size_t kDisplayNameBytes = 256;

// `name` if it fits kDisplayNameBytes, else its shortened form (at most kDisplayNameBytes plus
// "…", cut on a UTF-8 character boundary).
std::string displayName(std::string_view name);

// `text` cut to at most `bytes` bytes on a UTF-8 character boundary, with "…" when cut: prose
// (finding summaries) that may quote names from the trace.
std::string capText(std::string_view text, std::size_t bytes);

// Events as a JSON array's items, written to `out` in chunks of about 1 MiB as they come.
class EventStream {
 public:
  // `separator` goes between two events, `first` before the first one.
  EventStream(std::ostream& out, std::string separator, std::string first = {})
      : out_(out), separator_(std::move(separator)), first_(std::move(first)) {}
  // Text outside the event list (headers, trailers), in order with the events.
  void raw(std::string_view text);
  void event(std::string_view text);
  void flush();  // writes what is buffered

 private:
  std::ostream& out_;
  std::string separator_;
  std::string first_;
  std::string buffer_;
  bool first_event_ = true;
};

}  // namespace cuoverlap::trace_event
