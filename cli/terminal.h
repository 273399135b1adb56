// What the command line knows about the terminal: whether to colour (--color, NO_COLOR), how wide
// the lines may be, and a progress line on stderr for analyses that take a while.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

namespace CLI { class App; }

namespace cuoverlap::cli {

// Text a trace or a user controls (a path, a name, a command, a message quoting them) as a line of
// stderr prints it: inert (controls, bidi, invalid UTF-8 escaped, newlines included) and cut to
// kMaxErrorLineBytes (cuoverlap/inert_text.h). Every stderr line passes such text through it.
std::string stderrText(std::string_view text);

// --color=auto|always|never on `cmd`, stored in `mode`.
void addColorOption(CLI::App& cmd, std::string& mode);

// auto: colour when `fd` is a terminal, NO_COLOR is unset or empty and TERM is not "dumb".
bool useColor(std::string_view mode, int fd);

// The terminal's width in columns when `fd` is one (COLUMNS overrides), else 0 (no limit).
std::size_t terminalWidth(int fd);

// Shows how far long work is (cuoverlap/progress.h) on one line of stderr, overwritten in place:
// "cuoverlap: reading run.sqlite: GPU ops 45%", then "analyzing run.sqlite 50%", ... (cut to the
// terminal's width), erased when the object goes away. By default only when stderr is a terminal
// and the work takes more than a second; never with `--quiet` (`quiet`); CUOVERLAP_PROGRESS=always
// shows it at once whatever stderr is (for tests), =never hides it. Costs a thread that wakes
// ten times a second while the line is shown.
class ProgressLine {
 public:
  explicit ProgressLine(bool quiet = false);
  ~ProgressLine();
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

  // A phase of the caller's own (progress::phase): what the line says until the work reports one.
  void stage(std::string text);

 private:
  void run(bool forced);
  std::string line() const;  // the current snapshot as shown; "" when none

  std::mutex mutex_;
  std::condition_variable wake_;
  bool done_ = false;
  std::size_t width_ = 0;  // columns; 0: no limit
  std::thread thread_;
};

// --quiet on `cmd`: no progress line.
void addQuietOption(CLI::App& cmd, bool& quiet);

}  // namespace cuoverlap::cli
