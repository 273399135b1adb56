#include "cuoverlap/temporary_files.h"

#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstring>
#include <utility>

namespace cuoverlap::temporary {
namespace {

constexpr int kSlots = 64;
enum SlotState : int { kFree = 0, kFilling = 1, kFile = 2, kDirectory = 3 };

struct Slot {
  std::atomic<int> state{kFree};
  char path[PATH_MAX] = {};
};
std::array<Slot, kSlots> g_slots;

constexpr std::array<int, 5> kCleanedSignals = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE};

void removeAll(int kind) {
  for (Slot& slot : g_slots) {
    if (slot.state.load() != kind) continue;
    if (kind == kFile) ::unlink(slot.path);
    else ::rmdir(slot.path);
  }
}

extern "C" void cleanUpAndDie(int signal_number) {
  removeAll(kFile);
  removeAll(kDirectory);
  struct sigaction action {};
  action.sa_handler = SIG_DFL;
  sigemptyset(&action.sa_mask);
  ::sigaction(signal_number, &action, nullptr);
  ::raise(signal_number);  // delivered on return: the signal is blocked inside its handler
}

}  // namespace

void installSignalCleanup() {
  struct sigaction action {};
  action.sa_handler = cleanUpAndDie;
  sigemptyset(&action.sa_mask);
  for (int s : kCleanedSignals) sigaddset(&action.sa_mask, s);
  for (int s : kCleanedSignals) {
    struct sigaction previous {};
    // A signal ignored by whoever started us (nohup, a pipeline) stays ignored.
    if (::sigaction(s, nullptr, &previous) == 0 && previous.sa_handler == SIG_IGN) continue;
    ::sigaction(s, &action, nullptr);
  }
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  ::sigaction(SIGXFSZ, &ignore, nullptr);
}

SignalsBlocked::SignalsBlocked() {
  sigset_t all;
  sigfillset(&all);
  ::pthread_sigmask(SIG_BLOCK, &all, &previous_);
}

SignalsBlocked::~SignalsBlocked() { ::pthread_sigmask(SIG_SETMASK, &previous_, nullptr); }

Registration::Registration(const std::string& path, bool directory) {
  if (path.size() >= PATH_MAX) return;
  for (int i = 0; i < kSlots; ++i) {
    int expected = kFree;
    if (!g_slots[i].state.compare_exchange_strong(expected, kFilling)) continue;
    std::memcpy(g_slots[i].path, path.c_str(), path.size() + 1);
    g_slots[i].state.store(directory ? kDirectory : kFile);
    slot_ = i;
    return;
  }
}

Registration::~Registration() {
  if (slot_ >= 0) g_slots[slot_].state.store(kFree);
}

Registration::Registration(Registration&& other) noexcept : slot_(std::exchange(other.slot_, -1)) {}

Registration& Registration::operator=(Registration&& other) noexcept {
  if (this != &other) {
    if (slot_ >= 0) g_slots[slot_].state.store(kFree);
    slot_ = std::exchange(other.slot_, -1);
  }
  return *this;
}

}  // namespace cuoverlap::temporary
