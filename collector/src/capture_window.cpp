#include "capture_window.h"

#include <cstring>

namespace cuoverlap::collector {
namespace {

constexpr double kNsPerSecond = 1e9;

std::uint64_t seconds(double value) { return static_cast<std::uint64_t>(value * kNsPerSecond); }

}  // namespace

CaptureWindow::CaptureWindow(schema::CaptureSpec spec, std::uint64_t started_ns)
    : spec_(std::move(spec)), started_ns_(started_ns) {}

bool CaptureWindow::delayPassed(std::uint64_t now_ns) const {
  return now_ns >= started_ns_ + seconds(spec_.delay_s);
}

WindowChange CaptureWindow::open(std::uint64_t now_ns) {
  if (open_ || !delayPassed(now_ns)) return WindowChange::kNone;
  open_ = true;
  opened_at_ns_ = now_ns;
  if (!summary_.opened) summary_.first_open_ns = now_ns;
  summary_.opened = true;
  ++summary_.windows;
  intervals_.emplace_back(now_ns, 0);
  return WindowChange::kOpen;
}

WindowChange CaptureWindow::close(std::uint64_t now_ns) {
  if (!open_) return WindowChange::kNone;
  open_ = false;
  summary_.last_close_ns = now_ns;
  intervals_.back().second = now_ns;
  return WindowChange::kClose;
}

WindowChange CaptureWindow::instanceBegins(std::uint64_t instance, std::uint64_t now_ns) {
  return instance == spec_.first ? open(now_ns) : WindowChange::kNone;
}

WindowChange CaptureWindow::instanceEnds(std::uint64_t instance, std::uint64_t now_ns) {
  return instance == spec_.last ? close(now_ns) : WindowChange::kNone;
}

WindowChange CaptureWindow::onProfilerStart(std::uint64_t now_ns) {
  std::lock_guard<std::mutex> lock(mutex_);
  return spec_.kind == schema::CaptureKind::kCudaProfilerApi ? open(now_ns) : WindowChange::kNone;
}

WindowChange CaptureWindow::onProfilerStop(std::uint64_t now_ns) {
  std::lock_guard<std::mutex> lock(mutex_);
  return spec_.kind == schema::CaptureKind::kCudaProfilerApi ? close(now_ns) : WindowChange::kNone;
}

WindowChange CaptureWindow::onRangePush(std::uint64_t thread, const char* name, std::uint64_t now_ns) {
  if (spec_.kind != schema::CaptureKind::kNvtx) return WindowChange::kNone;
  const bool ours = name != nullptr && spec_.range == name;
  std::lock_guard<std::mutex> lock(mutex_);
  const std::uint64_t instance = ours ? ++summary_.instances : 0;
  pushes_[thread].push_back(instance);
  return ours ? instanceBegins(instance, now_ns) : WindowChange::kNone;
}

WindowChange CaptureWindow::onRangePop(std::uint64_t thread, std::uint64_t now_ns) {
  if (spec_.kind != schema::CaptureKind::kNvtx) return WindowChange::kNone;
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = pushes_.find(thread);
  if (it == pushes_.end() || it->second.empty()) return WindowChange::kNone;  // pop without push
  const std::uint64_t instance = it->second.back();
  it->second.pop_back();
  return instance != 0 ? instanceEnds(instance, now_ns) : WindowChange::kNone;
}

WindowChange CaptureWindow::onRangeStart(std::uint64_t range_id, const char* name, std::uint64_t now_ns) {
  if (spec_.kind != schema::CaptureKind::kNvtx || name == nullptr || spec_.range != name) {
    return WindowChange::kNone;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  const std::uint64_t instance = ++summary_.instances;
  started_ranges_[range_id] = instance;
  return instanceBegins(instance, now_ns);
}

WindowChange CaptureWindow::onRangeEnd(std::uint64_t range_id, std::uint64_t now_ns) {
  if (spec_.kind != schema::CaptureKind::kNvtx) return WindowChange::kNone;
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = started_ranges_.find(range_id);
  if (it == started_ranges_.end()) return WindowChange::kNone;
  const std::uint64_t instance = it->second;
  started_ranges_.erase(it);
  return instanceEnds(instance, now_ns);
}

WindowChange CaptureWindow::onSwitch(bool want_open, std::uint64_t now_ns) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (spec_.kind != schema::CaptureKind::kSignal) return WindowChange::kNone;
  return want_open ? open(now_ns) : close(now_ns);
}

WindowChange CaptureWindow::onTick(std::uint64_t now_ns) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (open_ && spec_.duration_s > 0.0 && now_ns >= opened_at_ns_ + seconds(spec_.duration_s)) {
    return close(now_ns);
  }
  // Only --delay/--duration: one window, from the delay on.
  if (spec_.kind == schema::CaptureKind::kNone && !tick_opened_ && delayPassed(now_ns)) {
    tick_opened_ = true;
    return open(now_ns);
  }
  return WindowChange::kNone;
}

std::uint64_t CaptureWindow::nextDeadlineNs() const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (spec_.kind == schema::CaptureKind::kNone && !tick_opened_) return started_ns_ + seconds(spec_.delay_s);
  if (open_ && spec_.duration_s > 0.0) return opened_at_ns_ + seconds(spec_.duration_s);
  return 0;
}

bool CaptureWindow::isOpen() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return open_;
}

bool CaptureWindow::overlapsWindow(std::uint64_t start_ns, std::uint64_t end_ns) const {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& [open, close] : intervals_) {
    if (start_ns <= (close == 0 ? UINT64_MAX : close) && end_ns >= open) return true;
  }
  return false;
}

WindowSummary CaptureWindow::summary(std::uint64_t end_ns) const {
  std::lock_guard<std::mutex> lock(mutex_);
  WindowSummary summary = summary_;
  if (open_) summary.last_close_ns = end_ns;
  return summary;
}

}  // namespace cuoverlap::collector
