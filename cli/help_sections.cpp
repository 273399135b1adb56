#include "help_sections.h"

#include <CLI/CLI.hpp>
#include <fmt/core.h>

namespace cuoverlap::cli {
namespace {

constexpr std::size_t kWhatColumns = 24;

// "  WHAT    WHY" when WHAT fits its column, else WHY on the next line, indented.
void appendSection(std::string& text, const char* heading, const std::vector<HelpRow>& rows) {
  if (rows.empty()) return;
  text += fmt::format("\n{}:\n", heading);
  for (const HelpRow& row : rows) {
    if (row.what.size() < kWhatColumns) {
      text += fmt::format("  {:<{}}{}\n", row.what, kWhatColumns, row.why);
    } else {
      text += fmt::format("  {}\n  {:<{}}{}\n", row.what, "", kWhatColumns, row.why);
    }
  }
}

}  // namespace

std::vector<HelpRow> reportExitStatus(const std::string& success) {
  return {{"0", success},
          {"2", "bad input or usage: one line on stderr (a missing or damaged trace, a bad option, "
                "an output that exists without --force, a failed write)"},
          {"3", "internal error (a bug: please report it with the line printed)"}};
}

std::vector<HelpRow> traceEnvironment(TerminalUse terminal) {
  std::vector<HelpRow> rows;
  if (terminal == TerminalUse::kColour || terminal == TerminalUse::kColourAndProgress) {
    rows.push_back({"NO_COLOR", "set and not empty: no colour with --color auto"});
    rows.push_back({"TERM", "dumb: no colour with --color auto"});
  }
  if (terminal == TerminalUse::kProgress || terminal == TerminalUse::kColourAndProgress) {
    rows.push_back({"COLUMNS", "the terminal's width (the text report's wrapping, the progress line)"});
    rows.push_back({"CUOVERLAP_PROGRESS", "always: the progress line on stderr even when it is not a "
                                          "terminal; never: no progress line (as --quiet)"});
  }
  rows.push_back({"TMPDIR", "where the private copy of an unfinished trace (its -wal) or of a "
                            "gzip-compressed one (inflated) is made (default /tmp)"});
  rows.push_back({"CUOVERLAP_READ_TIMEOUT", "seconds a trace's read may take in all (default 600)"});
  rows.push_back({"CUOVERLAP_MAX_LOG_MIB", "largest -wal or -journal copied to read an unfinished "
                                           "trace, in MiB (default 256)"});
  rows.push_back({"CUOVERLAP_MAX_INFLATE_MIB", "largest size a gzip-compressed SQLite trace is "
                                               "inflated to, in MiB (default 16384)"});
  return rows;
}

void setHelpSections(CLI::App& cmd, const HelpSections& sections) {
  std::string text = sections.note.empty() ? "" : sections.note + "\n";
  appendSection(text, "Examples", sections.examples);
  appendSection(text, "Exit status", sections.exit_status);
  appendSection(text, "Environment", sections.environment);
  if (!text.empty() && text.front() == '\n') text.erase(0, 1);
  cmd.footer(text);
}

}  // namespace cuoverlap::cli
