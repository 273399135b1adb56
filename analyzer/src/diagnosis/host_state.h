// What every host thread was doing over time, from its CUDA runtime/driver calls: the model that
// gap causes and host-time finding costs query (definition: host_state.cpp and docs/gaps.md).
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "cuoverlap/model.h"
#include "diagnosis/api_names.h"

namespace cuoverlap::diagnosis {

class DeviceView;

// The state of a host thread during a stretch of time.
enum class HostActivity : std::uint8_t {
  kCpu,         // in no CUDA call: running the program's own code
  kBlocking,    // in a host-blocking call: synchronize, synchronous memcpy/memset
  kAllocation,  // in an allocation, free, host allocation or registration
  kModuleLoad,  // loading, JIT-compiling or linking modules (incl. a lazy first launch)
  kPageableCopy,  // in the call of a copy from/to pageable memory (the driver stages it)
  kApi,         // in any other CUDA call (launches, async copies, event records, queries)
};

// One stretch of a thread's timeline: a CUDA call (the outermost one; see host_state.cpp) or a
// refined piece of one. `call` indexes Trace::runtime_calls.
struct HostSegment {
  Ns start = 0;
  Ns end = 0;
  std::uint32_t call = 0;
  HostActivity activity = HostActivity::kApi;
};

// A piece of a queried interval with what the thread was doing; kCpu pieces have no call.
struct HostPart {
  Ns start = 0;
  Ns end = 0;
  HostActivity activity = HostActivity::kCpu;
  std::optional<std::size_t> call;
};

class HostState {
 public:
  // Built once from the view's runtime calls (those of the processes that used its device).
  explicit HostState(const DeviceView& view);

  // The thread (an opaque index) that made `call`, if it made any call the view holds.
  std::optional<std::uint32_t> threadOf(const RuntimeCall& call) const;

  // [from, to) cut into consecutive parts by what `thread` was doing; the parts cover the
  // interval exactly. O(log n + parts).
  std::vector<HostPart> partsWithin(std::uint32_t thread, Ns from, Ns to) const;

  // The outermost call of `thread` that ended last at or before `time`.
  std::optional<std::size_t> lastCallBefore(std::uint32_t thread, Ns time) const;
  // The first call of `thread` that began at or after `time`.
  std::optional<std::size_t> firstCallAfter(std::uint32_t thread, Ns time) const;

  // Time of `call` (a launch) that was module loading: the excess of a lazy first launch.
  Ns moduleLoadWithin(std::size_t call) const;

  std::size_t threadCount() const { return thread_begin_.empty() ? 0 : thread_begin_.size() - 1; }
  std::pair<std::uint32_t, std::uint32_t> threadId(std::uint32_t thread) const {
    return thread_ids_[thread];
  }

 private:
  void findLazyFirstLaunches(const DeviceView& view);
  void findPageableCopyCalls(const DeviceView& view);
  HostActivity activityOf(const DeviceView& view, std::uint32_t call) const;
  void buildTimelines(const DeviceView& view);
  void appendThread(const DeviceView& view, const std::uint32_t* first, const std::uint32_t* last);
  void appendPiece(const DeviceView& view, std::uint32_t call, HostActivity activity, Ns from,
                   Ns to);

  // (pid, tid) per thread index, sorted.
  std::vector<std::pair<std::uint32_t, std::uint32_t>> thread_ids_;
  // Segments of thread t are segments_[thread_begin_[t] .. thread_begin_[t + 1]), sorted by
  // start and disjoint.
  std::vector<std::size_t> thread_begin_;
  std::vector<HostSegment> segments_;
  // Calls that launched a copy from or to pageable memory, sorted.
  std::vector<std::uint32_t> pageable_calls_;
  // (launch call, module-load ns at its start), sorted by call.
  std::vector<std::pair<std::uint32_t, Ns>> lazy_launches_;
};

}  // namespace cuoverlap::diagnosis
