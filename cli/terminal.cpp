#include "terminal.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "cuoverlap/inert_text.h"
#include "cuoverlap/progress.h"

namespace cuoverlap::cli {

std::string stderrText(std::string_view text) { return inertLine(text, kMaxErrorLineBytes); }

void addColorOption(CLI::App& cmd, std::string& mode) {
  cmd.add_option("--color", mode, "Colour the output: auto (on a terminal, unless NO_COLOR is set), always, never")
      ->check(CLI::IsMember({"auto", "always", "never"}))
      ->capture_default_str();
}

bool useColor(std::string_view mode, int fd) {
  if (mode == "always") return true;
  if (mode == "never") return false;
  const char* no_color = std::getenv("NO_COLOR");
  if (no_color != nullptr && no_color[0] != '\0') return false;
  const char* term = std::getenv("TERM");
  if (term != nullptr && std::string_view(term) == "dumb") return false;
  return isatty(fd) == 1;
}

std::size_t terminalWidth(int fd) {
  if (isatty(fd) != 1) return 0;
  if (const char* columns = std::getenv("COLUMNS")) {
    const long value = std::strtol(columns, nullptr, 10);
    if (value > 0) return static_cast<std::size_t>(value);
  }
  winsize size{};
  if (ioctl(fd, TIOCGWINSZ, &size) == 0 && size.ws_col > 0) return size.ws_col;
  return 80;
}

void addQuietOption(CLI::App& cmd, bool& quiet) {
  cmd.add_flag("-q,--quiet", quiet, "No progress line on stderr (it shows only on a terminal, for work over a second)");
}

namespace {

enum class ProgressMode { kAuto, kAlways, kNever };

ProgressMode progressMode(bool quiet) {
  if (quiet) return ProgressMode::kNever;
  const char* mode = std::getenv("CUOVERLAP_PROGRESS");
  if (mode != nullptr && std::string_view(mode) == "always") return ProgressMode::kAlways;
  if (mode != nullptr && std::string_view(mode) == "never") return ProgressMode::kNever;
  return ProgressMode::kAuto;
}

}  // namespace

ProgressLine::ProgressLine(bool quiet) {
  const ProgressMode mode = progressMode(quiet);
  if (mode == ProgressMode::kNever || (mode == ProgressMode::kAuto && isatty(STDERR_FILENO) != 1)) return;
  width_ = terminalWidth(STDERR_FILENO);
  const bool forced = mode == ProgressMode::kAlways;
  thread_ = std::thread([this, forced] { run(forced); });
}

ProgressLine::~ProgressLine() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    done_ = true;
  }
  wake_.notify_one();
  thread_.join();
}

void ProgressLine::stage(std::string text) { progress::phase(std::move(text)); }

std::string ProgressLine::line() const {
  const progress::Snapshot now = progress::snapshot();
  if (now.phase.empty()) return "";
  std::string text = "cuoverlap: " + now.phase;
  if (now.total > 0) {
    text += fmt::format(" {:.0f}%", 100.0 * static_cast<double>(std::min(now.done, now.total)) /
                                        static_cast<double>(now.total));
  } else {
    text += "...";
  }
  text = stderrText(text);  // a file name must not drive the terminal
  // One line, or overwriting it in place fails: cut to the width (in bytes: at most shorter).
  if (width_ > 1 && text.size() >= width_) {
    std::size_t cut = width_ - 1;
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
    text.resize(cut);
  }
  return text;
}

// Forced: shows from the start and, before erasing, the last phase (short runs show something).
void ProgressLine::run(bool forced) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (!forced && wake_.wait_for(lock, std::chrono::seconds(1), [this] { return done_; })) return;
  std::string shown;
  const auto show = [&shown] (const std::string& text) {
    if (text.empty() || text == shown) return;
    fmt::print(stderr, "\r\x1b[K{}", text);
    std::fflush(stderr);
    shown = text;
  };
  while (!done_) {
    show(line());
    wake_.wait_for(lock, std::chrono::milliseconds(forced ? 5 : 100), [this] { return done_; });
  }
  if (forced) show(line());
  if (!shown.empty()) {
    fmt::print(stderr, "\r\x1b[K");
    std::fflush(stderr);
  }
}

}  // namespace cuoverlap::cli
