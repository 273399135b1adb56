// The communication kernels of a DeviceView and the compute time they could hide under, shared by
// the communication findings (rules/exposed_communication.cpp, rules/communication_serialized.cpp).
// A collective's exposed stretches are the parts of its interval outside the union of the
// device's other kernels (docs/metrics.md, "Communication").
//
// Memory: one index per communication kernel and the union of the other kernels (16 bytes per
// disjoint busy interval), built only when the device ran communication.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "cuoverlap/communication.h"
#include "cuoverlap/intervals.h"
#include "diagnosis/device_view.h"

namespace cuoverlap::diagnosis {

class CommunicationOps {
 public:
  explicit CommunicationOps(const DeviceView& view);

  bool empty() const { return positions_.empty(); }
  // Positions in view.ops() of the communication kernels, in start order.
  const std::vector<std::size_t>& positions() const { return positions_; }
  bool isCommunication(const GpuOp& op) const { return kernels_.isCommunication(op); }
  // Parts of [start, end) during which no other kernel of the device ran.
  std::vector<Interval> exposedPieces(Ns start, Ns end) const;
  // |U(comm)| - |U(comm) ∩ U(compute)| over the view: the device's exposed communication time.
  Ns exposedTotal() const;

  // What overlapping communication with compute gained in this trace, per unit of overlap:
  // communication kernels beside compute take SMs and memory bandwidth, so compute beside them
  // runs slower. Measured on compute kernels of one (name, grid, block) that ran both beside
  // communication (at least half their duration under it) and with none beside them: each beside
  // run's duration beyond the median alone duration of its group is compute time the overlap
  // cost. Efficiency = 1 − Σ extra / Σ (their time under communication), clamped to [0, 1];
  // together with the number of beside runs measured. Empty when no group has runs of both kinds.
  struct OverlapEfficiency {
    double efficiency = 1.0;
    std::uint64_t kernels = 0;
    Ns extra_ns = 0;
    Ns under_ns = 0;
  };
  std::optional<OverlapEfficiency> measuredOverlapEfficiency() const;

 private:
  const DeviceView& view_;
  CommunicationKernels kernels_;
  std::vector<std::size_t> positions_;
  std::vector<Interval> compute_union_;
  std::vector<Interval> comm_union_;
};

// "AllReduce f32 in NVTX 'step 3' / 'ncclAllReduce'": the collective of `op` and the NVTX ranges
// of its process open when it was launched (without a launch call: when it started), the latest
// started last, at most three.
std::string describeCollectiveInContext(const DeviceView& view, const GpuOp& op);

// "kernel at::native::vectorized_elementwise_kernel<…>": a kernel's name without its return type,
// template arguments and parameters, which run to hundreds of characters in C++ kernels.
std::string shortKernelName(std::string_view name);

}  // namespace cuoverlap::diagnosis
