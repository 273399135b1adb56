#include "kernel_names.h"

#include <cxxabi.h>

#include <cstdlib>

namespace cuoverlap::collector {
namespace {

// Position of the bracket that opens the group closed by text[close], or npos.
std::size_t matchingOpen(const std::string& text, std::size_t close, char open_ch, char close_ch) {
  int depth = 0;
  for (std::size_t i = close + 1; i-- > 0;) {
    if (text[i] == close_ch) ++depth;
    if (text[i] == open_ch && --depth == 0) return i;
  }
  return std::string::npos;
}

// Strips one trailing bracketed group "(...)" or "<...>" if the text ends with one.
void stripTrailingGroup(std::string& text, char open_ch, char close_ch) {
  while (!text.empty() && text.back() == ' ') text.pop_back();
  if (text.empty() || text.back() != close_ch) return;
  std::size_t open = matchingOpen(text, text.size() - 1, open_ch, close_ch);
  if (open != std::string::npos && open > 0) text.resize(open);
}

}  // namespace

std::string shortKernelName(const std::string& demangled) {
  std::string text = demangled;
  stripTrailingGroup(text, '(', ')');
  stripTrailingGroup(text, '<', '>');
  std::size_t scope = text.rfind("::");
  if (scope != std::string::npos) text.erase(0, scope + 2);
  std::size_t space = text.rfind(' ');
  if (space != std::string::npos) text.erase(0, space + 1);
  return text.empty() ? demangled : text;
}

KernelNames kernelNames(const char* name) {
  KernelNames names;
  names.mangled = name != nullptr ? name : "";
  int status = -1;
  char* demangled = names.mangled.rfind("_Z", 0) == 0
                        ? abi::__cxa_demangle(names.mangled.c_str(), nullptr, nullptr, &status)
                        : nullptr;
  names.demangled = (status == 0 && demangled != nullptr) ? demangled : names.mangled;
  std::free(demangled);
  names.short_name = shortKernelName(names.demangled);
  return names;
}

}  // namespace cuoverlap::collector
