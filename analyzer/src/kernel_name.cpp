#include "cuoverlap/kernel_name.h"

namespace cuoverlap {

std::string shortKernelName(std::string_view name) {
  std::string out;
  int depth = 0;
  for (char c : name) {
    const bool opens = c == '<' || c == '(';
    const bool closes = c == '>' || c == ')';
    if (opens && depth++ == 0) out += c == '<' ? "<…" : "(…";
    if (depth == 0) out += c;
    if (closes && depth > 0 && --depth == 0) out += c;
  }
  return depth == 0 ? out : std::string(name);
}

}  // namespace cuoverlap
