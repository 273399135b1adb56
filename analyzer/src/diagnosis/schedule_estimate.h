// What-if schedules: how long a device's span would be if some ordering constraints were removed
// or the host issued some work earlier. Serialization findings (legacy-default-stream,
// event-wait-serialization, sync-memcpy, cross-stream-kernel-wait) cost the difference between
// two such schedules of the same ops — the span with the constraint and the span without it —
// so that the model's own error cancels out instead of landing in the finding's cost.
//
// The model (docs/findings.md, "How serialization costs are estimated"): list scheduling of the
// view's ops in the order the host issued them (launch call start; recorded start without a launch
// call), engines taking work first come, first served. An op starts at the earliest time at which
//   - it was released: its launch call returned (minus any host time the what-if gives back);
//   - the previous op of its stream ended (stream order), and every op of an extra edge into it;
//   - its engine has room: each copy direction (HtoD, DtoH, other copies) and memsets are one
//     engine running one op at a time; kernels share the SMs, each taking the fraction
//     min(1, grid blocks / (SM count x resident blocks per SM)) for its whole measured duration
//     (1 when the grid or the device limits are unknown: such kernels never run side by side).
// Ops keep their measured durations. Cost: O(n log n) plus, per kernel, the kernels it may share
// the SMs with (at most 1 / smallest share of them at once).
#pragma once

#include <cstdint>
#include <vector>

#include "diagnosis/device_view.h"

namespace cuoverlap::diagnosis {

// "`to` could not start before `from` ended": positions in view.ops().
struct OrderEdge {
  std::size_t from = 0;
  std::size_t to = 0;
};

// Blocks of `kernel` that fit on one SM at once; 0 when the device data is missing.
std::int64_t residentBlocksPerSm(const Device& device, const GpuOp& kernel);
// The fraction of the device's SMs a kernel occupies while it runs, in (0, 1]; 1 when unknown.
double smShare(const Device* device, const GpuOp& kernel);

class ScheduleModel {
 public:
  explicit ScheduleModel(const DeviceView& view);

  // The simulated span with stream order, `edges` (any order) and, per position, host time given
  // back (`earlier[p]` is subtracted from op p's release; empty = none).
  Ns span(std::vector<OrderEdge> edges, const std::vector<Ns>& earlier = {}) const;

  // Saving of removing `removed` from the constraints `kept` + `removed`: never negative.
  Ns savingWithout(const std::vector<OrderEdge>& kept, const std::vector<OrderEdge>& removed) const;

  std::size_t size() const { return duration_.size(); }
  double share(std::size_t position) const { return share_[position]; }

 private:
  std::vector<Ns> release_;
  std::vector<Ns> duration_;
  std::vector<std::uint8_t> engine_;       // 0 = SMs, 1.. = one copy/memset engine each
  std::vector<double> share_;
  std::vector<std::int64_t> stream_prev_;  // previous position on the stream, -1 for none
  std::vector<std::size_t> issue_order_;   // positions by launch call start
};

}  // namespace cuoverlap::diagnosis
