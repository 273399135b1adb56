#include "cuoverlap/kernel_name.h"

#include <limits>
#include <map>

namespace cuoverlap {
namespace {

// How much of a name is kept, the least first (distinctShortKernelNames raises it on a clash).
enum class Detail { kShort, kTemplateLevel, kTemplates, kWhole };

// Brackets ('<' and '(') opened at a nesting depth of `keep_depth` or more are elided to "<…>" /
// "(…)"; so are parameter lists at depth 0 when `elide_parameters`. An unbalanced name is kept whole.
std::string elide(std::string_view name, int keep_depth, bool elide_parameters) {
  std::string out;
  int depth = 0;
  int elided_at = -1;  // depth of the bracket being elided; -1: none
  for (char c : name) {
    const bool opens = c == '<' || c == '(';
    const bool closes = c == '>' || c == ')';
    if (opens) {
      if (elided_at < 0 && (depth >= keep_depth || (depth == 0 && c == '(' && elide_parameters))) {
        elided_at = depth;
        out += c == '<' ? "<…" : "(…";
      } else if (elided_at < 0) {
        out += c;
      }
      ++depth;
      continue;
    }
    if (closes && depth > 0) {
      --depth;
      if (elided_at < 0 || depth == elided_at) out += c;
      if (depth == elided_at) elided_at = -1;
      continue;
    }
    if (elided_at < 0) out += c;
  }
  return depth == 0 ? out : std::string(name);
}

std::string shown(std::string_view name, Detail detail) {
  switch (detail) {
    case Detail::kShort: return elide(name, 0, true);
    case Detail::kTemplateLevel: return elide(name, 1, true);
    case Detail::kTemplates: return elide(name, std::numeric_limits<int>::max(), true);
    case Detail::kWhole: break;
  }
  return std::string(name);
}

}  // namespace

std::string shortKernelName(std::string_view name) { return shown(name, Detail::kShort); }

std::vector<std::string> distinctShortKernelNames(const std::vector<std::string_view>& names) {
  std::vector<Detail> detail(names.size(), Detail::kShort);
  std::vector<std::string> out(names.size());
  for (bool clash = true; clash;) {
    clash = false;
    std::map<std::string, std::vector<std::size_t>> rows_by_text;
    for (std::size_t i = 0; i < names.size(); ++i) {
      out[i] = shown(names[i], detail[i]);
      rows_by_text[out[i]].push_back(i);
    }
    for (const auto& [text, rows] : rows_by_text) {
      bool differ = false;  // the same name twice is no clash
      for (std::size_t row : rows) differ = differ || names[row] != names[rows.front()];
      if (!differ) continue;
      for (std::size_t row : rows) {
        if (detail[row] == Detail::kWhole) continue;
        detail[row] = static_cast<Detail>(static_cast<int>(detail[row]) + 1);
        clash = true;
      }
    }
  }
  return out;
}

}  // namespace cuoverlap
