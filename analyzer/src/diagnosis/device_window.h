// Windows over one device view: the index that cuts windowed sub-views (an NVTX range instance,
// a phase, the steady state) out of a whole-scope DeviceView without rescanning the trace.
//
// Built once per device and scope in O(n) (plus a sort of the sync records by start); each window
// [a, b) is then answered in O(log n + k) for k items in it. An item is in the window when it
// starts in [a, b) (a contiguous run of the start-sorted positions, found by binary search) or
// starts before a and still runs at a (found by BlockMaxTree over the items' ends). Invariant: the
// sub-view equals DeviceView(trace, scope with that window, device) item for item and in order.
#pragma once

#include <cstdint>
#include <vector>

#include "diagnosis/block_max.h"
#include "diagnosis/device_view.h"

namespace cuoverlap::diagnosis {

class WindowIndex {
 public:
  explicit WindowIndex(const DeviceView& whole);

  const DeviceView& whole() const { return whole_; }
  // The sub-view of [start, end), clipped to the whole view's window.
  DeviceView window(Ns start, Ns end) const { return DeviceView(whole_, *this, start, end); }

  // Indices into Trace::ops of the whole view's ops that are in scope for [a, b) (opInScope's
  // rule), in the order a view of that window holds them: by clipped start, then by index.
  std::vector<std::uint32_t> opsIn(Ns a, Ns b) const;
  // Indices into Trace::runtime_calls of the whole view's calls overlapping [a, b), by start.
  std::vector<std::size_t> callsIn(Ns a, Ns b) const;
  // The whole view's sync records with start < b and end >= a, in Trace::syncs order.
  std::vector<const SyncEvent*> syncsIn(Ns a, Ns b) const;

 private:
  const DeviceView& whole_;
  BlockMaxTree op_ends_;
  BlockMaxTree call_ends_;
  std::vector<const SyncEvent*> syncs_by_start_;
  BlockMaxTree sync_ends_;
};

}  // namespace cuoverlap::diagnosis
