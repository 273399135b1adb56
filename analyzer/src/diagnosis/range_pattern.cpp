// Which NVTX ranges --range PATTERN selects. PATTERN is an exact name, a glob when it holds one of
// * ? [ (fnmatch, the whole name must match), or /REGEX/ (ECMAScript, anywhere in the name).
// Only push/pop and start/end ranges with end > start count (marks are instants). A pattern that
// matches no range name of the trace is a user error naming the closest names (edit distance).
#include <fnmatch.h>

#include <algorithm>
#include <cctype>
#include <regex>
#include <string>

#include <fmt/format.h>

#include "cuoverlap/diagnosis.h"
#include "cuoverlap/edit_distance.h"
#include "cuoverlap/error.h"

namespace cuoverlap {

std::size_t editDistance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      const bool same = std::tolower(static_cast<unsigned char>(a[i - 1])) ==
                        std::tolower(static_cast<unsigned char>(b[j - 1]));
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (same ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

namespace {

constexpr std::size_t kClosestNames = 5;

// Per interned string: 1 when it is the name of a range the pattern selects.
std::vector<char> matchingNames(const Trace& trace, const std::string& pattern,
                                const std::vector<char>& range_names) {
  std::vector<char> match(trace.strings.size(), 0);
  const bool regex = pattern.size() >= 2 && pattern.front() == '/' && pattern.back() == '/';
  const bool glob = pattern.find_first_of("*?[") != std::string::npos;
  std::regex re;
  if (regex) {
    try {
      re = std::regex(pattern.substr(1, pattern.size() - 2));
    } catch (const std::regex_error& e) {
      throw UserError(fmt::format("--range {}: bad regular expression ({})", pattern, e.what()));
    }
  }
  for (std::size_t id = 0; id < trace.strings.size(); ++id) {
    if (!range_names[id]) continue;
    const std::string& name = trace.strings[id];
    if (regex) match[id] = std::regex_search(name, re);
    else if (glob) match[id] = fnmatch(pattern.c_str(), name.c_str(), 0) == 0;
    else match[id] = name == pattern;
  }
  return match;
}

[[noreturn]] void throwNoMatch(const Trace& trace, const std::string& pattern,
                               const std::vector<char>& range_names) {
  std::vector<std::pair<std::size_t, std::string_view>> names;
  for (std::size_t id = 0; id < trace.strings.size(); ++id) {
    if (range_names[id]) names.emplace_back(editDistance(pattern, trace.strings[id]), trace.strings[id]);
  }
  if (names.empty()) {
    throw UserError(fmt::format("{}: --range {}: the trace has no NVTX ranges", trace.path, pattern));
  }
  std::stable_sort(names.begin(), names.end());
  if (names.size() > kClosestNames) names.resize(kClosestNames);
  std::vector<std::string> quoted;
  for (const auto& name : names) quoted.push_back(fmt::format("'{}'", name.second));
  throw UserError(fmt::format("{}: --range {}: no NVTX range matches; closest names: {} "
                              "(`cuoverlap ranges {}` lists them all)",
                              trace.path, pattern, fmt::join(quoted, ", "), trace.path));
}

}  // namespace

bool isNvtxRange(const NvtxRange& range) {
  const auto type = static_cast<schema::NvtxEventType>(range.event_type);
  return (type == schema::NvtxEventType::kPushPopRange ||
          type == schema::NvtxEventType::kStartEndRange) &&
         range.end > range.start;
}

std::vector<std::size_t> rangesMatching(const Trace& trace, const Scope& scope) {
  std::vector<std::size_t> selected;
  if (!scope.range) return selected;
  std::vector<char> range_names(trace.strings.size(), 0);
  for (const NvtxRange& range : trace.nvtx) {
    if (isNvtxRange(range) && range.text < range_names.size()) range_names[range.text] = 1;
  }
  const std::vector<char> match = matchingNames(trace, *scope.range, range_names);
  if (std::none_of(match.begin(), match.end(), [](char m) { return m != 0; })) {
    throwNoMatch(trace, *scope.range, range_names);
  }
  for (std::size_t i = 0; i < trace.nvtx.size(); ++i) {
    const NvtxRange& range = trace.nvtx[i];
    if (!isNvtxRange(range) || range.text >= match.size() || !match[range.text]) continue;
    if (scope.pid && range.pid != *scope.pid) continue;
    if (range.end <= scope.window_start || range.start >= scope.window_end) continue;
    selected.push_back(i);
  }
  return selected;
}

}  // namespace cuoverlap
