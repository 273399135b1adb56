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

// --color=auto|always|never on `cmd`, stored in `mode`.
void addColorOption(CLI::App& cmd, std::string& mode);

// auto: colour when `fd` is a terminal, NO_COLOR is unset or empty and TERM is not "dumb".
bool useColor(std::string_view mode, int fd);

// The terminal's width in columns when `fd` is one (COLUMNS overrides), else 0 (no limit).
std::size_t terminalWidth(int fd);

// After one second, and only when stderr is a terminal, shows "cuoverlap: <stage>..." on one
// line of stderr, updated as the stage changes and erased when the object goes away. Costs a
// sleeping thread; prints nothing for quick runs or when stderr is redirected.
class ProgressLine {
 public:
  ProgressLine();
  ~ProgressLine();
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

  void stage(std::string text);

 private:
  void run();

  std::mutex mutex_;
  std::condition_variable wake_;
  std::string stage_;
  bool done_ = false;
  bool shown_ = false;
  bool changed_ = false;
  std::thread thread_;
};

}  // namespace cuoverlap::cli
