#include "diagnosis/pinned_rate.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "cuoverlap/trace_index.h"

namespace cuoverlap::diagnosis {
namespace {

constexpr std::uint64_t kMinMeasuredBytes = 1 << 20;

bool pinnedHostSide(const GpuOp& op) {
  return op.kind == OpKind::kMemcpy &&
         (op.src_kind == MemKind::kPinned || op.dst_kind == MemKind::kPinned) &&
         op.src_kind != MemKind::kPageable && op.dst_kind != MemKind::kPageable;
}

}  // namespace

double pcieRawBytesPerNs(int generation, int width) {
  // GB/s per lane after encoding: 8b/10b for Gen1-2, 128b/130b for Gen3-5, FLIT (242/256) Gen6.
  constexpr double kPerLane[] = {0.0, 0.25, 0.5, 0.9846, 1.9692, 3.9385, 7.5625};
  if (generation < 1 || generation > 6 || width <= 0) return 0.0;
  return kPerLane[generation] * width;
}

Ns pinnedDuration(const PinnedRate& rate, std::uint64_t bytes) {
  if (rate.bytes_per_ns <= 0.0) return 0;
  return rate.latency_ns + std::llround(static_cast<double>(bytes) / rate.bytes_per_ns);
}

// The median of (duration - bytes / rate) over the device's pinned copies of `direction` smaller
// than those the rate is measured on (whose time is their bytes, by that rate's definition).
Ns measuredLatency(const DeviceView& view, Engine direction, double bytes_per_ns) {
  const Trace& trace = view.trace();
  std::vector<Ns> beyond;
  for (std::uint32_t i : opsOnDevice(trace, view.deviceId())) {
    const GpuOp& op = trace.ops[i];
    if (!pinnedHostSide(op) || engineOf(op) != direction || op.bytes >= kMinMeasuredBytes) continue;
    beyond.push_back(op.end - op.start - std::llround(static_cast<double>(op.bytes) / bytes_per_ns));
  }
  if (beyond.empty()) return kPinnedCopyLatencyNs;
  std::nth_element(beyond.begin(), beyond.begin() + static_cast<std::ptrdiff_t>(beyond.size() / 2), beyond.end());
  return std::max<Ns>(0, beyond[beyond.size() / 2]);
}

PinnedRate withLatency(const DeviceView& view, Engine direction, PinnedRate rate) {
  rate.latency_ns = measuredLatency(view, direction, rate.bytes_per_ns);
  return rate;
}

PinnedRate pinnedRate(const DeviceView& view, Engine direction) {
  const Trace& trace = view.trace();
  std::uint64_t bytes = 0;
  Ns time = 0;
  for (std::uint32_t i : opsOnDevice(trace, view.deviceId())) {
    const GpuOp& op = trace.ops[i];
    if (!pinnedHostSide(op) || engineOf(op) != direction || op.bytes < kMinMeasuredBytes) continue;
    bytes += op.bytes;
    time += op.end - op.start;
  }
  const char* name = direction == Engine::kH2D ? "HtoD" : "DtoH";
  if (bytes > 0 && time > 0) {
    return withLatency(view, direction, {static_cast<double>(bytes) / static_cast<double>(time),
                                         fmt::format("this trace's pinned {} copies", name)});
  }
  const Device* device = view.device();
  if (device == nullptr) return {};
  const double raw = pcieRawBytesPerNs(device->pcie_generation, device->pcie_width);
  if (raw <= 0.0) return {};
  return withLatency(view, direction,
                     {raw * kPinnedLinkEfficiency,
                      fmt::format("{:.0f}% of the PCIe Gen{} x{} link", 100 * kPinnedLinkEfficiency,
                                  device->pcie_generation, device->pcie_width)});
}

}  // namespace cuoverlap::diagnosis
