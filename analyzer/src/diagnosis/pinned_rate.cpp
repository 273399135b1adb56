#include "diagnosis/pinned_rate.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>
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

// Both directions' rates from one pass over the device's ops: the pinned copies of at least
// kMinMeasuredBytes give the rate; the smaller ones, the fixed cost beside their bytes (the median
// of duration - bytes / rate).
struct PinnedRates {
  PinnedRate direction[2];  // HtoD, DtoH
};

namespace {

struct SmallCopy {
  Ns duration;
  std::uint64_t bytes;
};

Ns medianLatency(std::vector<SmallCopy>& small, double bytes_per_ns) {
  if (small.empty()) return kPinnedCopyLatencyNs;
  std::vector<Ns> beyond;
  beyond.reserve(small.size());
  for (const SmallCopy& c : small) {
    beyond.push_back(c.duration - std::llround(static_cast<double>(c.bytes) / bytes_per_ns));
  }
  std::nth_element(beyond.begin(), beyond.begin() + static_cast<std::ptrdiff_t>(beyond.size() / 2), beyond.end());
  return std::max<Ns>(0, beyond[beyond.size() / 2]);
}

PinnedRates measurePinnedRates(const DeviceView& view) {
  const Trace& trace = view.trace();
  std::uint64_t bytes[2] = {0, 0};
  Ns time[2] = {0, 0};
  std::vector<SmallCopy> small[2];
  for (std::uint32_t i : opsOnDevice(trace, view.deviceId())) {
    const GpuOp& op = trace.ops[i];
    if (!pinnedHostSide(op)) continue;
    const Engine engine = engineOf(op);
    if (engine != Engine::kH2D && engine != Engine::kD2H) continue;
    const int d = engine == Engine::kH2D ? 0 : 1;
    if (op.bytes >= kMinMeasuredBytes) {
      bytes[d] += op.bytes;
      time[d] += op.end - op.start;
    } else {
      small[d].push_back({op.end - op.start, op.bytes});
    }
  }
  PinnedRates rates;
  const Device* device = view.device();
  const double raw = device == nullptr ? 0.0 : pcieRawBytesPerNs(device->pcie_generation, device->pcie_width);
  for (int d = 0; d < 2; ++d) {
    PinnedRate& rate = rates.direction[d];
    if (bytes[d] > 0 && time[d] > 0) {
      rate.bytes_per_ns = static_cast<double>(bytes[d]) / static_cast<double>(time[d]);
      rate.source = fmt::format("this trace's pinned {} copies", d == 0 ? "HtoD" : "DtoH");
    } else if (raw > 0.0) {
      rate.bytes_per_ns = raw * kPinnedLinkEfficiency;
      rate.source = fmt::format("{:.0f}% of the PCIe Gen{} x{} link", 100 * kPinnedLinkEfficiency,
                                device->pcie_generation, device->pcie_width);
    } else {
      continue;  // unknown: PinnedRate{}
    }
    rate.latency_ns = medianLatency(small[d], rate.bytes_per_ns);
  }
  return rates;
}

}  // namespace

PinnedRate pinnedRate(const DeviceView& view, Engine direction) {
  if (direction != Engine::kH2D && direction != Engine::kD2H) return {};
  if (!view.pinned_rates_) view.pinned_rates_ = std::make_shared<const PinnedRates>(measurePinnedRates(view));
  return view.pinned_rates_->direction[direction == Engine::kH2D ? 0 : 1];
}

}  // namespace cuoverlap::diagnosis
