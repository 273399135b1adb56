// The traces under tests/data are stored gzip-compressed (NAME.sqlite.gz) to keep the repository
// small; the analyzer reads them as they are (it inflates to a private copy). These helpers find
// them by name, and inflate one for the few tests that open or change its SQL directly.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>

namespace cuoverlap_test {

inline constexpr const char* kPlainSuffix = ".sqlite";
inline constexpr const char* kStoredSuffix = ".sqlite.gz";

inline bool endsWith(const std::string& text, const std::string& suffix) {
  return text.size() > suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// True for a trace file as the test data stores it (NAME.sqlite.gz) or as a test writes it
// (NAME.sqlite).
inline bool isTraceFile(const std::filesystem::path& path) {
  const std::string name = path.filename().string();
  return endsWith(name, kStoredSuffix) || endsWith(name, kPlainSuffix);
}

// NAME of NAME.sqlite.gz or NAME.sqlite: the name its golden report and its table rows go by.
inline std::string traceName(const std::filesystem::path& path) {
  const std::string name = path.filename().string();
  for (const std::string suffix : {kStoredSuffix, kPlainSuffix}) {
    if (endsWith(name, suffix)) return name.substr(0, name.size() - suffix.size());
  }
  return name;
}

// Inflates stored trace `gz` to the plain SQLite file `plain` (overwritten); false on failure.
inline bool inflateTrace(const std::string& gz, const std::string& plain) {
  const std::string command = "gzip -dc '" + gz + "' > '" + plain + "'";
  return std::system(command.c_str()) == 0;
}

}  // namespace cuoverlap_test
