// device-saturating-kernel: a kernel K whose blocks filled every SM (grid blocks >= SM count x
// resident blocks per SM, the latter limited by the device's blocks, threads, registers and
// shared memory per SM and K's launch resources) while a kernel J of another stream waited for it:
// J was ready (launch returned, previous op of its stream done) before K ended, started at least
// 10 µs after it was ready, and started in the second half of K or within 5 µs after K ended.
// J must itself be smaller than one full wave (it would not fill the device alone): when J also
// fills every SM, as the tile kernels of a compute-bound pipeline do, running it beside K would
// only time-slice the SMs, so its wait cost nothing.
// Ops on the legacy default stream are left to legacy-default-stream.
// Cost: for each such J (charged once, against the K that ended last), its start minus the later
// of its ready time and K's start; the union of those stretches.
// Needs: SM count, max threads and blocks per SM of the device, kernels' grid and block sizes,
// launch calls.
#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "diagnosis/finding_builder.h"
#include "diagnosis/rules/rules.h"
#include "diagnosis/schedule_estimate.h"

namespace cuoverlap::diagnosis {
namespace {

constexpr Ns kReleaseSlackNs = 5'000;

bool fillsDevice(const Device& device, const GpuOp& kernel) {
  const std::int64_t per_sm = residentBlocksPerSm(device, kernel);
  return per_sm > 0 && device.sm_count > 0 && kernel.grid_blocks >= per_sm * device.sm_count;
}

// A device-filling kernel K that a later kernel may have waited for.
struct Filler {
  Ns half = 0;
  Ns start = 0;
  Ns end = 0;
  std::size_t position = 0;
};

}  // namespace

// One sweep over the kernels in start order (issue 13: overlapping device-filling kernels made the
// per-K scan quadratic): the filling kernels enter an "active" set, ordered by end, once a kernel
// J starts in their second half, and leave it when J starts more than 5 µs after their end. J is
// charged once, against the active K of another stream that ended last. O(n log n).
std::optional<Finding> findDeviceSaturatingKernel(const DeviceView& view) {
  const Device* device = view.device();
  if (device == nullptr || device->sm_count <= 0) return std::nullopt;
  FindingBuilder builder(view, "device-saturating-kernel", Severity::kInfo);
  const auto& ops = view.ops();
  std::vector<Filler> fillers;
  for (std::size_t k = 0; k < ops.size(); ++k) {
    const GpuOp& kernel = view.op(ops[k]);
    if (kernel.kind != OpKind::kKernel || view.onLegacyDefaultStream(kernel) ||
        !fillsDevice(*device, kernel)) {
      continue;
    }
    fillers.push_back({ops[k].start + (ops[k].end - ops[k].start) / 2, ops[k].start, ops[k].end, k});
  }
  if (fillers.empty()) return std::nullopt;
  std::sort(fillers.begin(), fillers.end(),
            [](const Filler& a, const Filler& b) { return a.half < b.half; });
  std::multimap<Ns, const Filler*> active;  // by end
  std::size_t next_filler = 0;
  for (std::size_t j = 0; j < ops.size(); ++j) {
    const GpuOp& waiting = view.op(ops[j]);
    for (; next_filler < fillers.size() && fillers[next_filler].half <= ops[j].start; ++next_filler) {
      active.emplace(fillers[next_filler].end, &fillers[next_filler]);
    }
    while (!active.empty() && active.begin()->first + kReleaseSlackNs < ops[j].start) {
      active.erase(active.begin());
    }
    if (active.empty() || waiting.kind != OpKind::kKernel ||
        view.onLegacyDefaultStream(waiting) || fillsDevice(*device, waiting)) {
      continue;
    }
    const auto ready = view.readyTime(j);
    if (!ready || ops[j].start - *ready < kMinimumCostNs) continue;
    const Filler* waited_for = nullptr;
    for (auto it = active.rbegin(); it != active.rend(); ++it) {
      const GpuOp& kernel = view.op(ops[it->second->position]);
      if (*ready >= it->second->end) break;
      if (DeviceView::streamKey(kernel) == DeviceView::streamKey(waiting)) continue;
      waited_for = it->second;
      break;
    }
    if (waited_for == nullptr) continue;
    const GpuOp& kernel = view.op(ops[waited_for->position]);
    const Ns from = std::max(*ready, waited_for->start);
    builder.add(Interval{from, ops[j].start},
                evidenceForOp(view, waiting,
                              fmt::format("{} waited for {} ({} blocks) on stream {}",
                                          describeOp(view, waiting), describeOp(view, kernel),
                                          kernel.grid_blocks, kernel.stream_id)));
  }
  return builder.build(
      fmt::format("{} kernels waited for a kernel of another stream that filled every SM",
                  builder.count()),
      "Launch the large kernel with fewer blocks (a grid-stride loop over sm_count x resident "
      "blocks), or give the latency-sensitive stream a higher priority "
      "(cudaStreamCreateWithPriority)");
}

}  // namespace cuoverlap::diagnosis
