// device-saturating-kernel: a kernel K whose blocks filled every SM (grid blocks >= SM count x
// resident blocks per SM, the latter limited by the device's blocks, threads, registers and
// shared memory per SM and K's launch resources) while a kernel J of another stream waited for it:
// J was ready (launch returned, previous op of its stream done) before K ended, started at least
// 10 µs after it was ready, and started in the second half of K or within 5 µs after K ended.
// J must itself be smaller than one full wave (it would not fill the device alone): when J also
// fills every SM, as the tile kernels of a compute-bound pipeline do, running it beside K would
// only time-slice the SMs, so its wait cost nothing. Nor may J's stream launch a device-filling
// kernel itself: that is not the latency-sensitive stream the fix raises (g004120: the stream
// whose 264-block kernels waited also ran a 2112-block one; the fix raised only the third stream,
// of small kernels, and saved nothing; 41 µs claimed).
// Ops on the legacy default stream are left to legacy-default-stream.
// Fix (the lab's transform stream-priority): J's stream at the device's greatest priority. The
// block scheduler then gives an SM that K's block frees to J's blocks before K's next ones, so J
// starts when K's wave in progress ends instead of after K's last block: K's waves = grid blocks
// over the resident ones (rounded up), each lasting K's duration over their count. A J that became
// ready in K's last wave waits for K's end whatever its priority: no instance. Nor is a J whose
// stream waited (cudaStreamWaitEvent) for an event recorded after K: it was not ready before K
// ended.
// Cost: for each such J (charged once, against the K that ended last), its start minus the later
// of its ready time and the end of K's wave in progress then, less what J's thread gives back
// later: a blocking call of that thread that waited for J's stream and was still held, after the
// rest of what it waited for had ended, by K's stream's work launched before J (which no priority
// for J's stream hastens) returns no sooner, so J keeps at most what the rest ended before that
// work (g000088: a cudaFree after each wait returned as K's stream's copy ended; 0.45 ms claimed,
// 0.08 measured). The union of those stretches, at
// most what the what-if schedule (schedule_estimate.h, with the host's blocking calls) saves with
// J's streams at a higher priority (ScheduleModel::withPriority): their kernels take the SMs of
// K's wave in progress, and K's blocks they displaced run after them, so K ends later unless its
// last wave has room for them (the device is the same size at any priority). A J that starts
// sooner shortens the span only where its stream's work is what the host or the end waits for, and
// not where K's later end is (the lab, stream-priority: J started at K's wave boundary, the span
// did not change). Where J got an SM in K's last wave well before K ended, K's blocks end spread
// out (they touch memory unequally): the what-if's J then takes K's SMs from the middle of the
// wave in progress, as its share of them frees (the lab's fixed programs: J started mid-wave).
// Needs: SM count, max threads and blocks per SM of the device, kernels' grid and block sizes,
// launch calls.
#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <utility>

#include <fmt/format.h>

#include "cuoverlap/units.h"

#include "diagnosis/finding_builder.h"
#include "diagnosis/rules/rules.h"
#include "diagnosis/host_timeline.h"
#include "diagnosis/schedule_estimate.h"
#include "diagnosis/stream_waits.h"

namespace cuoverlap::diagnosis {
namespace {

constexpr Ns kReleaseSlackNs = 5'000;

// Blocks of `kernel` resident on the whole device at once; 0 when the device data is missing.
std::int64_t waveBlocks(const Device& device, const GpuOp& kernel) {
  return device.sm_count > 0 ? residentBlocksPerSm(device, kernel) * device.sm_count : 0;
}

bool fillsDevice(const Device& device, const GpuOp& kernel) {
  const std::int64_t wave = waveBlocks(device, kernel);
  return wave > 0 && kernel.grid_blocks >= wave;
}

// A device-filling kernel K that a later kernel may have waited for.
struct Filler {
  Ns half = 0;
  Ns start = 0;
  Ns end = 0;
  Ns wave = 0;  // how long one wave of its blocks lasted
  std::int64_t waves = 0;
  std::size_t position = 0;
};

// When a kernel ready at `ready` would start at the greatest priority beside K: the end of K's
// wave in progress (the first when `ready` is before K), or K's end when that is its last wave.
Ns startWithPriority(const Filler& k, Ns ready) {
  if (ready < k.start) return k.start + k.wave;
  const Ns boundary = k.start + ((ready - k.start) / k.wave + 1) * k.wave;
  return std::max(ready, std::min(boundary, k.end));
}

// Per op position, the latest end of the ops its stream's waits (cudaStreamWaitEvent) held it for
// (the minimum Ns where none): a kernel that waits for K's event starts after K at any priority.
std::vector<Ns> producersEnd(const DeviceView& view, const std::vector<StreamWait>& waits) {
  std::vector<Ns> end(view.ops().size(), std::numeric_limits<Ns>::min());
  for (const StreamWait& wait : waits) {
    for (std::size_t y : wait.waited_for) {
      end[wait.released] = std::max(end[wait.released], view.ops()[y].end);
    }
  }
  return end;
}

// How much of an earlier start of the kernel at `j` its thread keeps (at most `gain`). K's
// stream's work launched before j (from K, at `k`, on: `k_stream` lists that stream's positions)
// comes no sooner at any priority for j's stream (K ends no sooner). A later blocking call of j's
// thread that waited for j's stream's work and, in the trace, was still held by that work when the
// rest of what it waited for had ended returns no sooner either: the thread keeps only what the
// rest ended before it (g000088: a cudaFree after each wait returned as K's stream's copy ended).
// `barriers`: the host timeline's barriers of j's thread (indices, in start order).
Ns gainKept(const DeviceView& view, const HostTimeline& host, const std::vector<std::size_t>& barriers,
            const std::vector<std::size_t>& k_stream, std::size_t k, std::size_t j, Ns gain) {
  const auto& ops = view.ops();
  const GpuOp& waiting = view.op(ops[j]);
  const auto launch = view.launchCall(waiting);
  if (!launch) return gain;
  const Ns launched = view.call(*launch).end;
  // K's stream's work launched before j: its positions and when the last of it ended.
  std::set<std::size_t> before_j;
  Ns before_j_end = std::numeric_limits<Ns>::min();
  for (auto it = std::lower_bound(k_stream.begin(), k_stream.end(), k); it != k_stream.end(); ++it) {
    const auto issued = view.launchCall(view.op(ops[*it]));
    if (!issued || view.call(*issued).start >= launched) break;
    before_j.insert(*it);
    before_j_end = std::max(before_j_end, ops[*it].end);
  }
  const std::uint64_t j_stream = DeviceView::streamKey(waiting);
  auto first = std::partition_point(barriers.begin(), barriers.end(), [&](std::size_t b) {
    return host.barriers[b].start < launched;
  });
  for (auto b = first; b != barriers.end() && gain > 0; ++b) {
    const HostBarrier& barrier = host.barriers[*b];
    if (barrier.start >= before_j_end) break;  // that work had ended: it holds no later call
    if (barrier.staged) continue;
    bool waits_for_j = false;
    Ns held_end = std::numeric_limits<Ns>::min();   // of K's stream's work launched before j
    Ns other_end = std::numeric_limits<Ns>::min();  // of the rest
    for (const std::size_t p : barrier.waited_for) {
      if (DeviceView::streamKey(view.op(ops[p])) == j_stream && p >= j) waits_for_j = true;
      Ns& end = before_j.count(p) ? held_end : other_end;
      end = std::max(end, ops[p].end);
    }
    if (!waits_for_j || held_end <= barrier.start) continue;
    gain = std::min(gain, std::max<Ns>(0, other_end - held_end));
  }
  return gain;
}

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
  // The streams that launch a device-filling kernel themselves: not the latency-sensitive stream
  // the fix raises (at the greatest priority their own filling kernels would pass the others'
  // work), so their kernels are not J's.
  std::set<std::uint64_t> filling_streams;
  for (std::size_t k = 0; k < ops.size(); ++k) {
    if (view.kindAt(k) != OpKind::kKernel) continue;
    const GpuOp& kernel = view.op(ops[k]);
    if (view.onLegacyDefaultStreamAt(k) || !fillsDevice(*device, kernel)) {
      continue;
    }
    filling_streams.insert(DeviceView::streamKey(kernel));
    const Ns length = ops[k].end - ops[k].start;
    const std::int64_t wave_blocks = waveBlocks(*device, kernel);
    const std::int64_t waves = (kernel.grid_blocks + wave_blocks - 1) / wave_blocks;
    fillers.push_back({ops[k].start + length / 2, ops[k].start, ops[k].end,
                       std::max<Ns>(1, length / waves), waves, k});
  }
  if (fillers.empty()) return std::nullopt;
  std::sort(fillers.begin(), fillers.end(),
            [](const Filler& a, const Filler& b) { return a.half < b.half; });
  const std::vector<StreamWait> waits = streamWaits(view);
  const std::vector<Ns> released_at = producersEnd(view, waits);
  std::multimap<Ns, const Filler*> active;  // by end
  std::set<std::uint64_t> high_streams;  // the waiting kernels' streams, at the greatest priority
  std::vector<std::size_t> ragged_kernels;  // the K whose blocks freed SMs all through a wave
  const HostTimeline& host = buildHostTimeline(view);
  // Indexed once a waiting kernel is found (most traces have none): the host timeline's barriers
  // per thread, in start order, and the ops' positions per stream.
  std::map<std::uint64_t, std::vector<std::size_t>> barriers_by_thread, by_stream;
  bool indexed = false;
  const auto index = [&] {
    if (std::exchange(indexed, true)) return;
    for (std::size_t b = 0; b < host.barriers.size(); ++b) {
      barriers_by_thread[threadKey(view.call(host.barriers[b].call))].push_back(b);
    }
    for (std::size_t p = 0; p < ops.size(); ++p) by_stream[DeviceView::streamKey(view.op(ops[p]))].push_back(p);
  };
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
        view.onLegacyDefaultStreamAt(j) || fillsDevice(*device, waiting) ||
        filling_streams.count(DeviceView::streamKey(waiting)) > 0) {
      continue;
    }
    std::optional<Ns> ready = view.readyTime(j);
    if (ready) ready = std::max(*ready, released_at[j]);
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
    // J got an SM in K's last wave well before K's last block ended: K's blocks end spread out
    // (what each touches takes unequal time), so K frees SMs through the second half of each
    // wave, where a higher-priority kernel takes them (ScheduleModel::withPriority's `ragged`).
    // The union, which caps the saving, still counts from the wave's end (counted from the wave's
    // middle it over-claimed: lab corpus 1370 -> 1366 within).
    const Ns last_wave = waited_for->start + (waited_for->waves - 1) * waited_for->wave;
    const bool ragged = *ready < last_wave && ops[j].start + kMinimumCostNs <= waited_for->end;
    const Ns from = startWithPriority(*waited_for, *ready);
    if (ops[j].start - from < kMinimumCostNs) continue;  // ready in K's last wave
    Ns kept = ops[j].start - from;
    if (const auto launch = view.launchCall(waiting)) {
      index();
      const auto thread = barriers_by_thread.find(threadKey(view.call(*launch)));
      if (thread != barriers_by_thread.end()) {
        kept = gainKept(view, host, thread->second, by_stream[DeviceView::streamKey(kernel)],
                        waited_for->position, j, kept);
      }
    }
    if (kept < kMinimumCostNs) continue;  // its thread waits for K's stream's work after it anyway
    high_streams.insert(DeviceView::streamKey(waiting));
    if (ragged) ragged_kernels.push_back(waited_for->position);
    builder.add(Interval{ops[j].start - kept, ops[j].start},
                evidenceForOp(view, waiting,
                              fmt::format("{} waited {} for {} ({} blocks, {} waves of {}) on stream "
                                          "{}; at a higher priority it would have started when the "
                                          "wave in progress ended, {} sooner",
                                          describeOp(view, waiting),
                                          units::formatDuration(ops[j].start - *ready),
                                          describeOp(view, kernel), kernel.grid_blocks,
                                          waited_for->waves, units::formatDuration(waited_for->wave),
                                          kernel.stream_id, units::formatDuration(ops[j].start - from))));
  }
  if (builder.count() == 0) return std::nullopt;
  // The waiting kernels started in K's last wave, and their recorded durations hold what sharing
  // its SMs cost them: the schedules charge only the difference where they start in a drain.
  const ScheduleModel model = ScheduleModel(view, host).withDrainCostRecorded(view);
  const std::vector<OrderEdge> edges = waitEdges(waits);
  std::vector<std::size_t> high;  // every kernel of the waiting kernels' streams
  for (std::size_t p = 0; p < ops.size(); ++p) {
    if (high_streams.count(DeviceView::streamKey(view.op(ops[p])))) high.push_back(p);
  }
  const Ns with_priority = model.withPriority(high, ragged_kernels).span(edges);
  const Ns saving = std::min(builder.time(), model.span(edges) - with_priority);  // time(): the union so far
  if (saving < kMinimumClaimNs) return std::nullopt;  // the waits were not what the span waited for
  builder.estimateSaving(saving);
  return builder.build(
      fmt::format("{} kernels waited for a kernel of another stream that filled every SM, past "
                  "the end of its wave in progress",
                  builder.count()),
      "Give the latency-sensitive stream a higher priority (cudaStreamCreateWithPriority with the "
      "greatest priority from cudaDeviceGetStreamPriorityRange): its kernels then take the SMs "
      "that the large kernel's wave frees, instead of waiting for its last block; or launch the "
      "large kernel with fewer blocks (a grid-stride loop) so that SMs stay free for them");
}

}  // namespace cuoverlap::diagnosis
