#include "terminal.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace cuoverlap::cli {

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

ProgressLine::ProgressLine() {
  if (isatty(STDERR_FILENO) == 1) thread_ = std::thread([this] { run(); });
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

void ProgressLine::stage(std::string text) {
  for (char& c : text) {  // a file name must not drive the terminal
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stage_ = std::move(text);
    changed_ = true;
  }
  wake_.notify_one();
}

void ProgressLine::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  if (wake_.wait_for(lock, std::chrono::seconds(1), [this] { return done_; })) return;
  while (!done_) {
    fmt::print(stderr, "\r\x1b[Kcuoverlap: {}...", stage_);
    std::fflush(stderr);
    shown_ = true;
    changed_ = false;
    wake_.wait(lock, [this] { return done_ || changed_; });
  }
  if (shown_) {
    fmt::print(stderr, "\r\x1b[K");
    std::fflush(stderr);
  }
}

}  // namespace cuoverlap::cli
