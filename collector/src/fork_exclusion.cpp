#include "fork_exclusion.h"

#include <pthread.h>

#include <atomic>

namespace cuoverlap::collector {
namespace {

std::timed_mutex g_section;
// Whether the fork now running holds g_section: the prepare handler gives up after
// kForkWaitLimit, and only a taken lock is released after the fork.
std::atomic<bool> g_held_for_fork{false};

void beforeFork() { g_held_for_fork.store(g_section.try_lock_for(kForkWaitLimit)); }

// In the parent and in the child alike: the forking thread took the lock, and in the child it is
// the only thread, the same pthread as in the parent.
void afterFork() {
  if (g_held_for_fork.exchange(false)) g_section.unlock();
}

}  // namespace

ForkExclusion::ForkExclusion() { g_section.lock(); }

ForkExclusion::~ForkExclusion() { g_section.unlock(); }

void installForkExclusion() {
  static std::once_flag once;
  std::call_once(once, [] { pthread_atfork(beforeFork, afterFork, afterFork); });
}

}  // namespace cuoverlap::collector
