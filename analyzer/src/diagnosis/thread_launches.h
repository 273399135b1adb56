// The view's ops per host thread in launch order (by launch call start): which op a thread launched
// just before or after another. In the usual flow (upload, compute, download) that is a copy's
// consumer or producer, which a fix that moves or unblocks the copy must keep ordered with it.
#pragma once

#include <cstddef>
#include <optional>
#include <vector>

#include "diagnosis/device_view.h"

namespace cuoverlap::diagnosis {

class ThreadLaunches {
 public:
  explicit ThreadLaunches(const DeviceView& view);

  // Per thread, the positions (in view.ops()) of the ops it launched, in launch order.
  const std::vector<std::vector<std::size_t>>& threads() const { return threads_; }
  // The op the same thread launched just before / after the op at `position`; none for an op
  // without a launch call, or at its thread's first / last launch.
  std::optional<std::size_t> before(std::size_t position) const;
  std::optional<std::size_t> after(std::size_t position) const;

 private:
  std::vector<std::vector<std::size_t>> threads_;
  // Per position (both empty where the view has no launch calls): its index into threads_, -1 for
  // none, and its index in its thread's list.
  std::vector<std::int64_t> thread_of_;
  std::vector<std::size_t> rank_;
};

}  // namespace cuoverlap::diagnosis
