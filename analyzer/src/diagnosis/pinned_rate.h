// What a host<->device copy of one direction would achieve from pinned memory on a device: the
// rate pageable-memcpy's "faster copies" part is estimated with (docs/findings.md).
//   - measured: the device's own pinned copies of that direction of at least 1 MiB each, anywhere
//     in the trace: their bytes over their summed durations less each one's fixed cost (below),
//     which those durations include too;
//   - else from the PCIe link the collector recorded: its raw rate (transfer rate per lane after
//     line encoding x lanes) x kPinnedLinkEfficiency, the share of it that large pinned copies
//     reached on the recorded GPUs;
//   - else unknown (0).
// and its fixed cost beside its bytes (latency_ns): the median time the device's pinned copies of
// that direction under 1 MiB took beyond their bytes at that rate; else kPinnedCopyLatencyNs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "diagnosis/device_view.h"

namespace cuoverlap::diagnosis {

// Large pinned copies on an H100 (PCIe Gen5 x16, raw 63.0 GB/s): 52.3 GB/s HtoD and 52.2 GB/s
// DtoH in streams_pipeline3.sqlite (16 MiB copies).
inline constexpr double kPinnedLinkEfficiency = 0.83;

// A pinned copy's fixed cost beside its bytes when the trace has no small pinned copy to measure
// it on: on the H100, 1 MiB pinned HtoD copies took 21.5 µs (streams_sync-copy-fixed.sqlite)
// where the 16 MiB copies' rate gives 20.1 µs.
inline constexpr Ns kPinnedCopyLatencyNs = 1500;

// An asynchronous copy call from pinned memory returns after about 5 µs (pipeline3 on the H100:
// 5.3 µs on average); a pageable one's time beyond that is staging the host waited for.
inline constexpr Ns kAsyncCopyCallNs = 5'000;

// A small pageable upload's call copies its bytes into the driver's staging buffer before it
// returns (one piece: no DMA runs beside the copy); pinned, that host copy is gone and the rest of
// the call stays. Small pinned calls took about as long as small staged ones of few bytes (lab H100
// pinned runs: 4 KiB 4.43 -> 4.28 us in g000082) while 11.6 KiB ones came down a µs (g000013: 4.95
// -> 3.96 us), so a fixed pinned call time (kAsyncCopyCallNs) over-prices the first and gives the
// second nothing. The host stages at about kHostStagingBytesPerNs: the lab's one-thread pageable
// uploads of 1 MiB or more (c1, 59 calls) moved 12.8 GB/s over their call (median; 8.2-18.3 the
// deciles), staging and DMA overlapped, so the staging alone is at least that fast (12 to 20 give
// the same cases). Pinned, such a call takes its recorded time less its bytes' staging, at least
// kPinnedSmallCallNs (pinned calls of 16-64 KiB took 3.1 µs on average) and at most an asynchronous
// pinned call's kAsyncCopyCallNs; uploads from kWholeStagedBytes up stage beside their DMA.
inline constexpr double kHostStagingBytesPerNs = 13.0;
inline constexpr std::uint64_t kWholeStagedBytes = 64 << 10;
inline constexpr Ns kPinnedSmallCallNs = 3'000;

Ns pinnedSmallUploadCall(Ns recorded, std::uint64_t bytes);

// What a pageable copy's call of `recorded` takes once its host memory is pinned: an asynchronous
// small upload's pinnedSmallUploadCall, any other an asynchronous pinned call's kAsyncCopyCallNs
// (pageable-memcpy's and single-stream's fixes pin alike).
Ns pinnedCopyCall(bool async, bool upload, Ns recorded, std::uint64_t bytes);

struct PinnedRate {
  double bytes_per_ns = 0.0;  // = GB/s; 0 when unknown
  std::string source;         // in words: "this trace's pinned HtoD copies", "PCIe Gen5 x16"
  // A pinned copy's fixed cost beside its bytes: the median of (duration - bytes / rate) over the
  // trace's pinned copies of the direction; kPinnedCopyLatencyNs without any.
  Ns latency_ns = kPinnedCopyLatencyNs;
};

// `direction`: Engine::kH2D or Engine::kD2H.
PinnedRate pinnedRate(const DeviceView& view, Engine direction);

// Both directions' rates, from every op of the device (whatever a view's scope).
struct PinnedRates {
  PinnedRate direction[2];  // HtoD, DtoH
};

// The device's pinned copies, added op by op in one pass over all of its ops: a DeviceView adds
// them in its own pass over them (which reads every op anyway) and keeps the rates, instead of a
// pass of pinnedRate's own (a cache miss per op at 10^7 ops) in each view that asks.
class PinnedRateSample {
 public:
  void add(const GpuOp& op) {  // inline: a call per op of the device
    const bool pinned_host_side = op.kind == OpKind::kMemcpy &&
                                  (op.src_kind == MemKind::kPinned || op.dst_kind == MemKind::kPinned) &&
                                  op.src_kind != MemKind::kPageable && op.dst_kind != MemKind::kPageable;
    if (!pinned_host_side) return;
    const Engine engine = engineOf(op);
    if (engine != Engine::kH2D && engine != Engine::kD2H) return;
    const int d = engine == Engine::kH2D ? 0 : 1;
    if (op.bytes >= kMinMeasuredBytes) {
      bytes_[d] += op.bytes;
      time_[d] += op.end - op.start;
      ++large_[d];
    } else {
      small_[d].push_back({op.end - op.start, op.bytes});
    }
  }
  // The rates once every op of the device was added; `device` (may be null) for its link's rate.
  PinnedRates rates(const Device* device);

 private:
  struct SmallCopy {
    Ns duration;
    std::uint64_t bytes;
  };
  static Ns medianLatency(std::vector<SmallCopy>& small, double bytes_per_ns);

  static constexpr std::uint64_t kMinMeasuredBytes = 1 << 20;
  std::uint64_t bytes_[2] = {0, 0};
  Ns time_[2] = {0, 0};
  std::uint64_t large_[2] = {0, 0};  // how many copies bytes_ and time_ sum
  std::vector<SmallCopy> small_[2];
};

// How long `bytes` would take at `rate` (its latency_ns + bytes / rate); 0 when unknown.
Ns pinnedDuration(const PinnedRate& rate, std::uint64_t bytes);

// The raw rate of a PCIe link in bytes per ns (after line encoding); 0 for an unknown generation.
double pcieRawBytesPerNs(int generation, int width);

}  // namespace cuoverlap::diagnosis
