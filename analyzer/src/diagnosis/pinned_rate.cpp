#include "diagnosis/pinned_rate.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "cuoverlap/trace_index.h"

namespace cuoverlap::diagnosis {

double pcieRawBytesPerNs(int generation, int width) {
  // GB/s per lane after encoding: 8b/10b for Gen1-2, 128b/130b for Gen3-5, FLIT (242/256) Gen6.
  constexpr double kPerLane[] = {0.0, 0.25, 0.5, 0.9846, 1.9692, 3.9385, 7.5625};
  if (generation < 1 || generation > 6 || width <= 0) return 0.0;
  return kPerLane[generation] * width;
}

Ns pinnedSmallUploadCall(Ns recorded, std::uint64_t bytes) {
  const Ns staging = static_cast<Ns>(static_cast<double>(bytes) / kHostStagingBytesPerNs);
  return std::clamp<Ns>(recorded - staging, kPinnedSmallCallNs, kAsyncCopyCallNs);
}

Ns pinnedCopyCall(bool async, bool upload, Ns recorded, std::uint64_t bytes) {
  return async && upload && bytes < kWholeStagedBytes ? pinnedSmallUploadCall(recorded, bytes) : kAsyncCopyCallNs;
}

Ns pinnedDuration(const PinnedRate& rate, std::uint64_t bytes) {
  if (rate.bytes_per_ns <= 0.0) return 0;
  return rate.latency_ns + std::llround(static_cast<double>(bytes) / rate.bytes_per_ns);
}

// The pinned copies of at least kMinMeasuredBytes give the rate; the smaller ones, the fixed cost
// beside their bytes (the median of duration - bytes / rate).
Ns PinnedRateSample::medianLatency(std::vector<SmallCopy>& small, double bytes_per_ns) {
  if (small.empty()) return kPinnedCopyLatencyNs;
  std::vector<Ns> beyond;
  beyond.reserve(small.size());
  for (const SmallCopy& c : small) {
    beyond.push_back(c.duration - std::llround(static_cast<double>(c.bytes) / bytes_per_ns));
  }
  std::nth_element(beyond.begin(), beyond.begin() + static_cast<std::ptrdiff_t>(beyond.size() / 2), beyond.end());
  return std::max<Ns>(0, beyond[beyond.size() / 2]);
}

PinnedRates PinnedRateSample::rates(const Device* device) {
  PinnedRates rates;
  const double raw = device == nullptr ? 0.0 : pcieRawBytesPerNs(device->pcie_generation, device->pcie_width);
  for (int d = 0; d < 2; ++d) {
    PinnedRate& rate = rates.direction[d];
    if (bytes_[d] > 0 && time_[d] > 0) {
      rate.bytes_per_ns = static_cast<double>(bytes_[d]) / static_cast<double>(time_[d]);
      rate.source = fmt::format("this trace's pinned {} copies", d == 0 ? "HtoD" : "DtoH");
    } else if (raw > 0.0) {
      rate.bytes_per_ns = raw * kPinnedLinkEfficiency;
      rate.source = fmt::format("{:.0f}% of the PCIe Gen{} x{} link", 100 * kPinnedLinkEfficiency,
                                device->pcie_generation, device->pcie_width);
    } else {
      continue;  // unknown: PinnedRate{}
    }
    rate.latency_ns = medianLatency(small_[d], rate.bytes_per_ns);
    if (bytes_[d] == 0 || time_[d] <= 0) continue;
    // The large copies' durations include the fixed cost every copy pays beside its bytes
    // (pinnedDuration adds it back): their bytes over their whole time made the rate too low and
    // counted that cost twice, so that a copy of the measured sizes took longer in the what-if
    // than it did (a_batch001: its four 1.1 MiB pinned uploads took 23.8 µs, pinnedDuration gave
    // 26.8). The rate is their bytes over their time less that cost, and the cost, measured at
    // that rate, moves with it: a few rounds settle both (the corpus's traces within 0.1%).
    for (int round = 0; round < 4; ++round) {
      const Ns net = time_[d] - static_cast<Ns>(large_[d]) * rate.latency_ns;
      if (net <= 0) break;
      rate.bytes_per_ns = static_cast<double>(bytes_[d]) / static_cast<double>(net);
      rate.latency_ns = medianLatency(small_[d], rate.bytes_per_ns);
    }
  }
  return rates;
}

PinnedRate pinnedRate(const DeviceView& view, Engine direction) {
  if (direction != Engine::kH2D && direction != Engine::kD2H) return {};
  if (!view.pinned_rates_) {  // a view that made no pass over its device's ops (DeviceView's)
    PinnedRateSample sample;
    for (std::uint32_t i : opsOnDevice(view.trace(), view.deviceId())) sample.add(view.trace().ops[i]);
    view.pinned_rates_ = std::make_shared<const PinnedRates>(sample.rates(view.device()));
  }
  return view.pinned_rates_->direction[direction == Engine::kH2D ? 0 : 1];
}

}  // namespace cuoverlap::diagnosis
