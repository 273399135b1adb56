// The contract between `cuoverlap record` and the collector library: the environment variables
// that carry the options, and the output-name expansion both sides must agree on.
#pragma once

#include <string>
#include <string_view>

namespace cuoverlap::schema {

inline constexpr const char* kEnvOutput = "CUOVERLAP_OUTPUT";  // output path pattern
inline constexpr const char* kEnvQuiet = "CUOVERLAP_QUIET";    // "1": no notice on stderr
inline constexpr const char* kEnvCommand = "CUOVERLAP_COMMAND";  // command line, for the session
inline constexpr std::string_view kDefaultOutputPattern = "cuoverlap-%p.sqlite";

// Expands %p (process id), %h (host name) and %% in an output pattern.
inline std::string expandOutputPattern(std::string_view pattern, long pid, std::string_view host) {
  std::string out;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] != '%' || i + 1 == pattern.size()) {
      out += pattern[i];
      continue;
    }
    char code = pattern[++i];
    if (code == 'p') out += std::to_string(pid);
    else if (code == 'h') out += host;
    else if (code == '%') out += '%';
    else (out += '%') += code;
  }
  return out;
}

}  // namespace cuoverlap::schema
