// What a host-blocking call costs: shared by blocking-sync-call, implicit-sync-call, sync-memcpy
// and sync-memset so that one pass decides, for all of them at once, which call the device idle
// time after a drain is charged to (definition: host_blocking_cost.cpp, docs/findings.md).
#pragma once

#include <optional>
#include <vector>

#include "cuoverlap/intervals.h"
#include "diagnosis/device_view.h"

namespace cuoverlap::diagnosis {

// Work in flight shorter than this during a call is timer noise, not a drain the call waited for.
inline constexpr Ns kMinimumInFlightNs = 1'000;

struct HostBlockingCharge {
  std::size_t call = 0;  // index into Trace::runtime_calls
  Ns lead = 0;           // time in the call while the device had work
  Ns drain = 0;          // time in the call after the device went idle
  Interval idle;         // the device idle time charged (empty when nothing was)
};

// Every explicit synchronize, allocation and synchronous memcpy/memset call of the view made
// while work was in flight and followed by more GPU work, with its charge, sorted by call index.
std::vector<HostBlockingCharge> chargeHostBlockingCalls(const DeviceView& view);

// The charge of `call` in `charges`, if it has one.
const HostBlockingCharge* chargeOf(const std::vector<HostBlockingCharge>& charges,
                                   std::size_t call);

}  // namespace cuoverlap::diagnosis
