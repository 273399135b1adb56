// Library loads and unloads that a fork() must not interrupt (docs/collector.md, "fork() after the
// parent initialized CUDA").
//
// glibc holds its fork-handler lock from the end of the prepare handlers until the fork is done,
// and dlclose's __cxa_finalize waits for that lock while it holds the list of exit functions. A
// fork while another thread unloads a library therefore leaves the child's copy of that list
// locked, and the child's exit() waits for it forever. The collector's own threads unload
// libraries (NVML, for the host link): they do it inside a ForkExclusion, and fork() waits (up to
// kForkWaitLimit) until no such section runs.
#pragma once

#include <chrono>
#include <mutex>

namespace cuoverlap::collector {

// How long a fork() waits for a section to end before it goes ahead anyway.
inline constexpr std::chrono::seconds kForkWaitLimit{10};

// A section no fork() of this process interrupts: held while alive. Sections of different
// threads run one at a time.
class ForkExclusion {
 public:
  ForkExclusion();
  ~ForkExclusion();
  ForkExclusion(const ForkExclusion&) = delete;
  ForkExclusion& operator=(const ForkExclusion&) = delete;
};

// Registers the fork handlers that wait for sections (once; later calls do nothing).
void installForkExclusion();

}  // namespace cuoverlap::collector
