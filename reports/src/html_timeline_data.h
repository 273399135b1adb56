// What the HTML timeline embeds for its script: every op, CUDA API call and NVTX range of the
// drawn time window, as compact numbers per lane, with each distinct name stored once.
//
// Size: a name is written once in the page's names table however many ops carry it, and an item
// costs a few characters (times are deltas in a base-32 variable-length code, names are indices),
// so the page grows with the number of items and distinct names, not with their product.
//
// Number code (decoded by `unpack` in html_assets.cpp): a value is written as base-32 digits, least
// significant first; a digit is one character of kDigits, the last digit of a value from its first
// half ('0'..'V'), the others from its second half ('W'..'_'). The alphabet holds no character
// that HTML or an attribute value treats specially.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "cuoverlap/html_report.h"
#include "cuoverlap/report.h"

namespace cuoverlap::html {

class NumberPacker {
 public:
  void add(std::uint64_t value);
  void addSigned(std::int64_t value) {  // zigzag: 0, -1, 1, -2, ... -> 0, 1, 2, 3, ...
    add((static_cast<std::uint64_t>(value) << 1) ^ static_cast<std::uint64_t>(value >> 63));
  }
  const std::string& text() const { return text_; }
  bool empty() const { return text_.empty(); }

 private:
  std::string text_;
};

// Distinct strings of a timeline, in first-use order; index 0 is "".
class NameTable {
 public:
  explicit NameTable(const Trace& trace) : trace_(trace), by_id_(trace.strings.size(), kUnset) {}
  std::uint32_t ofString(StringId id);       // a string of the trace
  std::uint32_t ofText(std::string text);    // a string made here ("memcpy HtoD", a gap's title)
  const std::vector<std::string_view>& names() const { return names_; }

 private:
  static constexpr std::uint32_t kUnset = 0xFFFFFFFFu;
  std::uint32_t intern(std::string_view text);
  const Trace& trace_;
  std::vector<std::uint32_t> by_id_;
  std::deque<std::string> owned_;
  std::unordered_map<std::string_view, std::uint32_t> index_;
  std::vector<std::string_view> names_{std::string_view()};
};

enum class LaneKind { kHeader, kNvtx, kApi, kEngine, kStream, kCounter };

// One row of the timeline. Items are packed as the script reads them (times relative to the axis
// start, ns): NVTX (start delta, length, name), API (start delta, length, name, correlation
// delta), engine (start delta, length: the union of the engine's ops), stream (start delta,
// length, label, correlation delta), counter (start delta, length, value in thousandths of the
// lane's largest). Deltas are from the lane's previous item (signed).
struct TimelineLane {
  LaneKind kind = LaneKind::kHeader;
  std::string label;   // raw text; the writer escapes it
  std::string title;   // the label whole, when `label` had to be cut; empty: `label`
  std::uint32_t pid = 0;
  int engine = -1;     // engine lanes and ops' colour come from here or the label table
  std::uint64_t items = 0;
  NumberPacker data;
  NumberPacker gaps;   // device headers: (start, length, cause name, title name) per largest gap
  double counter_max = 0;    // counter lanes: the largest value in the window, in `counter_unit`
  std::string counter_unit;  // "GB/s", "%"
};

struct TimelineData {
  explicit TimelineData(const Trace& trace) : names(trace) {}
  std::vector<TimelineLane> lanes;
  NameTable names;
  NumberPacker labels;  // per op label: name, engine, kind, bytes, grid blocks, block threads
  std::uint64_t ops = 0;
  std::uint64_t calls = 0;
  std::uint64_t ranges = 0;
};

// The names of Engine's values in order (engineName of 0, 1, ... up to the first "unknown"): the
// page numbers engines by them.
std::vector<std::string_view> engineNames();

// The lanes of a trace over [start, end]: per process and thread (in --pid scope) its NVTX levels
// and CUDA API calls, then per device of the report a header, one lane per busy engine and one
// lane per stream.
TimelineData collectTimeline(const TraceReport& report, Ns start, Ns end, const HtmlOptions& options);

}  // namespace cuoverlap::html
