// Which NVTX ranges --range PATTERN selects. PATTERN is an exact name, a glob when it holds one of
// * ? [ (fnmatch's syntax without flags, the whole name must match), or /REGEX/ (RE2 syntax,
// anywhere in the name). Globs are translated to RE2 too: RE2 matches in time linear in the name,
// so no pattern (`/(q+)+x/`, `*a*a*a*b`) and no name (1 MB) can make the match hang or recurse.
// Only push/pop and start/end ranges with end > start count (marks are instants). A pattern that
// matches no range name of the trace is a user error naming the closest names (edit distance).
#include <re2/re2.h>

#include <algorithm>
#include <cctype>
#include <memory>
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
// The suggestion's cost is bounded whatever the trace holds: at most kSuggestionCandidates names,
// each compared on its first kSuggestionPrefix bytes (and the pattern's), shown cut to
// kSuggestionShown bytes: at most 2000 * 128 * 128 cell updates.
constexpr std::size_t kSuggestionCandidates = 2000;
constexpr std::size_t kSuggestionPrefix = 128;
constexpr std::size_t kSuggestionShown = 60;
// Longer patterns are refused before compiling (RE2 also bounds its own memory).
constexpr std::size_t kMaxPatternBytes = 4096;

// `text` cut to at most `bytes` bytes, never inside a UTF-8 sequence, with "…" when cut.
std::string prefixOf(std::string_view text, std::size_t bytes) {
  if (text.size() <= bytes) return std::string(text);
  std::size_t end = bytes;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
  return std::string(text.substr(0, end)) + "…";
}

// One character of a bracket expression as RE2 reads it inside [...].
void appendClassCharacter(std::string& out, char c) {
  if (std::isalnum(static_cast<unsigned char>(c)) || c == '-') out += c;
  else out += RE2::QuoteMeta(std::string(1, c));
}

// fnmatch's syntax (no flags: `*` and `?` match any byte, `/` and a leading `.` included; `\`
// quotes the next character; `[!...]`/`[^...]` negate; a `]` first in a class is literal; a `[`
// without its `]` is literal) as an anchored RE2 pattern.
std::string globToRegex(const std::string& glob) {
  std::string out = "(?s)^";
  for (std::size_t i = 0; i < glob.size(); ++i) {
    const char c = glob[i];
    if (c == '*') {
      out += ".*";
    } else if (c == '?') {
      out += ".";
    } else if (c == '\\' && i + 1 < glob.size()) {
      out += RE2::QuoteMeta(std::string(1, glob[++i]));
    } else if (c == '[') {
      std::size_t j = i + 1;
      if (j < glob.size() && (glob[j] == '!' || glob[j] == '^')) ++j;
      if (j < glob.size() && glob[j] == ']') ++j;
      while (j < glob.size() && glob[j] != ']') ++j;
      if (j >= glob.size()) {
        out += "\\[";
        continue;
      }
      std::size_t k = i + 1;
      out += '[';
      if (glob[k] == '!' || glob[k] == '^') {
        out += '^';
        ++k;
      }
      for (; k < j; ++k) appendClassCharacter(out, glob[k]);
      out += ']';
      i = j;
    } else {
      out += RE2::QuoteMeta(std::string(1, c));
    }
  }
  return out + "$";
}

// Regexes read the name as UTF-8; globs as bytes (Latin-1), as fnmatch does in the C locale, so
// that `*` also matches a name that is not valid UTF-8.
std::unique_ptr<RE2> compile(const std::string& pattern, const std::string& source,
                             RE2::Options::Encoding encoding) {
  RE2::Options options;
  options.set_log_errors(false);
  options.set_encoding(encoding);
  auto re = std::make_unique<RE2>(source, options);
  if (!re->ok()) {
    throw UserError(fmt::format("--range {}: bad regular expression ({})",
                                prefixOf(pattern, kSuggestionShown), re->error()));
  }
  return re;
}

// Per interned string: 1 when it is the name of a range the pattern selects.
std::vector<char> matchingNames(const Trace& trace, const std::string& pattern,
                                const std::vector<char>& range_names) {
  if (pattern.size() > kMaxPatternBytes) {
    throw UserError(fmt::format("--range {}: the pattern is {} bytes long; at most {}",
                                prefixOf(pattern, kSuggestionShown), pattern.size(), kMaxPatternBytes));
  }
  std::vector<char> match(trace.strings.size(), 0);
  const bool regex = pattern.size() >= 2 && pattern.front() == '/' && pattern.back() == '/';
  const bool glob = !regex && pattern.find_first_of("*?[") != std::string::npos;
  std::unique_ptr<RE2> re;
  if (regex) re = compile(pattern, pattern.substr(1, pattern.size() - 2), RE2::Options::EncodingUTF8);
  else if (glob) re = compile(pattern, globToRegex(pattern), RE2::Options::EncodingLatin1);
  for (std::size_t id = 0; id < trace.strings.size(); ++id) {
    if (!range_names[id]) continue;
    const std::string& name = trace.strings[id];
    if (re) match[id] = RE2::PartialMatch(name, *re);
    else match[id] = name == pattern;
  }
  return match;
}

[[noreturn]] void throwNoMatch(const Trace& trace, const std::string& pattern,
                               const std::vector<char>& range_names) {
  const std::string_view key = std::string_view(pattern).substr(0, kSuggestionPrefix);
  std::vector<std::pair<std::size_t, std::string_view>> names;
  for (std::size_t id = 0; id < trace.strings.size() && names.size() < kSuggestionCandidates; ++id) {
    if (!range_names[id]) continue;
    const std::string_view name = trace.strings[id];
    names.emplace_back(editDistance(key, name.substr(0, kSuggestionPrefix)), name);
  }
  if (names.empty()) {
    throw UserError(fmt::format("{}: --range {}: the trace has no NVTX ranges", trace.path,
                                prefixOf(pattern, kSuggestionShown)));
  }
  std::stable_sort(names.begin(), names.end());
  if (names.size() > kClosestNames) names.resize(kClosestNames);
  std::vector<std::string> quoted;
  for (const auto& name : names) quoted.push_back(fmt::format("'{}'", prefixOf(name.second, kSuggestionShown)));
  throw UserError(fmt::format("{}: --range {}: no NVTX range matches; closest names: {} "
                              "(`cuoverlap ranges {}` lists them all)",
                              trace.path, prefixOf(pattern, kSuggestionShown), fmt::join(quoted, ", "),
                              trace.path));
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
