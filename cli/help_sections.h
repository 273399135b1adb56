// The sections a command's --help ends with: examples, exit status and environment. The man pages
// are made from --help (packaging/make_man.sh), which turns each heading ("Examples:",
// "Exit status:", "Environment:") into its section, so the pages and --help never disagree.
#pragma once

#include <string>
#include <vector>

namespace CLI { class App; }

namespace cuoverlap::cli {

// One "WHAT  WHY" row of a section: a command line and what it does, an exit code and what it
// means, a variable and what it changes.
struct HelpRow {
  std::string what;
  std::string why;
};

struct HelpSections {
  std::string note;  // a paragraph before the sections (may be empty)
  std::vector<HelpRow> examples;
  std::vector<HelpRow> exit_status;
  std::vector<HelpRow> environment;
};

// The paragraph before the sections of every command that reads traces.
inline constexpr const char* kTracesNote =
    "Traces may be cuoverlap traces (record), Nsight Systems SQLite exports (nsys export --type "
    "sqlite) or PyTorch profiler (Kineto) JSON, .json or .json.gz.";

// Exit codes of the commands that read traces and write a report: 0, 2 (bad input or usage), 3.
std::vector<HelpRow> reportExitStatus(const std::string& success);

// What the terminal variables change: colour (--color auto), the progress line (and the width).
enum class TerminalUse { kNone, kColour, kProgress, kColourAndProgress };

// The variables that change how traces are read (TMPDIR, CUOVERLAP_READ_TIMEOUT,
// CUOVERLAP_MAX_LOG_MIB), after those of the terminal the command uses (NO_COLOR and TERM for
// colour; COLUMNS and CUOVERLAP_PROGRESS for the progress line).
std::vector<HelpRow> traceEnvironment(TerminalUse terminal);

// Replaces `cmd`'s footer with `sections`.
void setHelpSections(CLI::App& cmd, const HelpSections& sections);

}  // namespace cuoverlap::cli
