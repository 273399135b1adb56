#include "cuoverlap/progress.h"

#include <atomic>
#include <mutex>

namespace cuoverlap::progress {
namespace {

std::mutex phase_mutex;
std::string current_phase;
std::atomic<std::uint64_t> units_done{0};
std::atomic<std::uint64_t> units_total{0};
thread_local bool muted = false;

}  // namespace

void phase(std::string name, std::uint64_t total) {
  if (muted) return;
  std::lock_guard<std::mutex> lock(phase_mutex);
  current_phase = std::move(name);
  units_done.store(0, std::memory_order_relaxed);
  units_total.store(total, std::memory_order_relaxed);
}

void done(std::uint64_t units) {
  if (!muted) units_done.store(units, std::memory_order_relaxed);
}

Snapshot snapshot() {
  std::lock_guard<std::mutex> lock(phase_mutex);
  return {current_phase, units_done.load(std::memory_order_relaxed), units_total.load(std::memory_order_relaxed)};
}

MuteThisThread::MuteThisThread() : was_muted_(muted) { muted = true; }
MuteThisThread::~MuteThisThread() { muted = was_muted_; }

}  // namespace cuoverlap::progress
