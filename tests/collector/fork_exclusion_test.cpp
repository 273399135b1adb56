// A fork() while another thread unloads a library (the collector's NVML query): every child must
// be able to exit. Without the exclusion glibc's child inherits the exit-function list locked
// (fork_exclusion.h); with it the fork waits until the unload is done.
#include <catch2/catch.hpp>

#include <dlfcn.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "fork_exclusion.h"

namespace cuoverlap::collector {
namespace {

void noExitWork() {}

// Forks `forks` times while a second thread loads and unloads FORK_UNLOAD_LIB in sections; each
// child registers a quick_exit function (which takes the exit-function list's lock) and leaves.
// Returns how many children did not exit within five seconds (they are killed).
int childrenStuck(int forks) {
  installForkExclusion();
  std::fflush(nullptr);  // no buffered output copied into the children
  // A bigger address space makes each fork slower, and so the unloads' chance to meet one larger.
  std::vector<std::vector<char>> ballast(64, std::vector<char>(1 << 20, 1));
  std::atomic<bool> stop{false};
  std::thread unloader([&] {
    while (!stop.load()) {
      const ForkExclusion no_fork;
      if (void* library = dlopen(FORK_UNLOAD_LIB, RTLD_NOW | RTLD_LOCAL)) dlclose(library);
    }
  });
  int stuck = 0;
  for (int i = 0; i < forks; ++i) {
    const pid_t child = fork();
    if (child == 0) {
      std::at_quick_exit(noExitWork);
      _exit(0);
    }
    REQUIRE(child > 0);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    int status = 0;
    while (waitpid(child, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        ++stuck;
        kill(child, SIGKILL);
        waitpid(child, &status, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }
  stop.store(true);
  unloader.join();
  return stuck;
}

TEST_CASE("fork during another thread's library unload: every child can still exit") {
  REQUIRE(dlopen(FORK_UNLOAD_LIB, RTLD_NOW | RTLD_NOLOAD) == nullptr);  // really loaded and unloaded
  CHECK(childrenStuck(400) == 0);
}

TEST_CASE("a section waits for nothing when no fork runs, and sections follow each other") {
  std::atomic<int> inside{0}, most{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 200; ++i) {
        const ForkExclusion section;
        const int now = ++inside;
        if (now > most) most = now;
        --inside;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  CHECK(most.load() == 1);
}

}  // namespace
}  // namespace cuoverlap::collector
