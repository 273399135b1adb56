// device-saturating-kernel: a kernel K whose blocks filled every SM (grid blocks >= SM count x
// resident blocks per SM, the latter limited by the device's blocks, threads, registers and
// shared memory per SM and K's launch resources) while a kernel J of another stream waited for it:
// J was ready (launch returned, previous op of its stream done) before K ended, started at least
// 10 µs after it was ready, and started in the second half of K or within 5 µs after K ended.
// J must itself be smaller than one full wave (it would not fill the device alone): when J also
// fills every SM, as the tile kernels of a compute-bound pipeline do, running it beside K would
// only time-slice the SMs, so its wait cost nothing.
// Ops on the legacy default stream are left to legacy-default-stream.
// Cost: for each such J, its start minus the later of its ready time and K's start.
// Needs: SM count, max threads and blocks per SM of the device, kernels' grid and block sizes,
// launch calls.
#include <algorithm>

#include <fmt/format.h>

#include "diagnosis/finding_builder.h"
#include "diagnosis/rules/rules.h"

namespace cuoverlap::diagnosis {
namespace {

constexpr Ns kReleaseSlackNs = 5'000;

// Blocks of `kernel` that fit on one SM at once; 0 when the device data is missing.
std::int64_t residentBlocksPerSm(const Device& device, const GpuOp& kernel) {
  if (device.max_threads_per_sm <= 0 || device.max_blocks_per_sm <= 0 ||
      kernel.block_threads == 0) {
    return 0;
  }
  std::int64_t blocks = std::min<std::int64_t>(device.max_blocks_per_sm,
                                               device.max_threads_per_sm / kernel.block_threads);
  const std::int64_t registers_per_block =
      static_cast<std::int64_t>(kernel.registers_per_thread) * kernel.block_threads;
  if (device.max_registers_per_sm > 0 && registers_per_block > 0) {
    blocks = std::min(blocks, device.max_registers_per_sm / registers_per_block);
  }
  if (device.max_shared_mem_per_sm > 0 && kernel.shared_mem_bytes > 0) {
    blocks = std::min<std::int64_t>(blocks, device.max_shared_mem_per_sm / kernel.shared_mem_bytes);
  }
  return blocks;
}

bool fillsDevice(const Device& device, const GpuOp& kernel) {
  const std::int64_t per_sm = residentBlocksPerSm(device, kernel);
  return per_sm > 0 && device.sm_count > 0 && kernel.grid_blocks >= per_sm * device.sm_count;
}

}  // namespace

std::optional<Finding> findDeviceSaturatingKernel(const DeviceView& view) {
  const Device* device = view.device();
  if (device == nullptr || device->sm_count <= 0) return std::nullopt;
  FindingBuilder builder(view, "device-saturating-kernel", Severity::kInfo);
  const auto& ops = view.ops();
  for (std::size_t k = 0; k < ops.size(); ++k) {
    const GpuOp& kernel = view.op(ops[k]);
    if (kernel.kind != OpKind::kKernel || view.onLegacyDefaultStream(kernel) ||
        !fillsDevice(*device, kernel)) {
      continue;
    }
    const Ns half = ops[k].start + (ops[k].end - ops[k].start) / 2;
    for (std::size_t j = k + 1; j < ops.size() && ops[j].start <= ops[k].end + kReleaseSlackNs; ++j) {
      const GpuOp& waiting = view.op(ops[j]);
      if (waiting.kind != OpKind::kKernel || ops[j].start < half ||
          DeviceView::streamKey(waiting) == DeviceView::streamKey(kernel) ||
          view.onLegacyDefaultStream(waiting) || fillsDevice(*device, waiting)) {
        continue;
      }
      const auto ready = view.readyTime(j);
      if (!ready || *ready >= ops[k].end || ops[j].start - *ready < kMinimumCostNs) continue;
      builder.add(ops[j].start - std::max(*ready, ops[k].start),
                  evidenceForOp(view, waiting,
                                fmt::format("{} waited for {} ({} blocks) on stream {}",
                                            describeOp(view, waiting), describeOp(view, kernel),
                                            kernel.grid_blocks, kernel.stream_id)));
    }
  }
  return builder.build(
      fmt::format("{} kernels waited for a kernel of another stream that filled every SM",
                  builder.count()),
      "Launch the large kernel with fewer blocks (a grid-stride loop over sm_count x resident "
      "blocks), or give the latency-sensitive stream a higher priority "
      "(cudaStreamCreateWithPriority)");
}

}  // namespace cuoverlap::diagnosis
