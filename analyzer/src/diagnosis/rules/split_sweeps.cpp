// How the split's lanes' kernels share the device (split_sweeps.h).
#include "diagnosis/rules/split_sweeps.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <tuple>
#include <unordered_set>
#include <utility>

#include "diagnosis/data_order.h"
#include "diagnosis/host_state.h"

namespace cuoverlap::diagnosis {
namespace {

// A few-block kernel (fewer blocks than SMs: each block an SM of its own) that runs at least this
// long sweeps memory from a handful of SMs: beside another such kernel of another lane it runs
// longer, by how far the lanes' buffers together outgrow the L2 the one stream's buffer fitted
// (sweepingKernelsInOrder). From 0.5 to 2 ms the lab's corpora gain alike (1292-1294 within, the
// recording before 1380-1382); 200 µs takes in short kernels that did overlap and loses cases.
constexpr Ns kSweepingKernelNs = 1'000'000;
// Where the trace records the buffers its few-block kernels were handed and the device's L2 size,
// the lanes' sweeps run side by side at their one-stream pace when the lanes' buffers together fit
// this share of the L2 (lanesFitTheL2). The recordings with op buffers (H200, 60 MiB L2): splits
// whose lanes' sweep buffers came to 16-28 MiB ran them at their own pace side by side (f9
// g009106's three 2-block sweeps of 9.2 MiB buffers: 1260-1280 µs beside each other, 1284 on the
// one stream; 3355 µs claimed for 3345 saved, 2253 midway), at 39-40 MiB either way (the split
// recording's g000178 ran at its own pace, g000236@s0 did not), from 46 MiB slower (fr g008042:
// three lanes of 15.4 MiB, a split measured 1.9 ms slower). Half the L2 keeps the clear ones.
constexpr double kL2FitShare = 0.5;
// A few-block kernel shorter than that sweeps a buffer too large for the lanes to share the L2 when
// its blocks' time together (blocks x duration) is at least this: each block makes its own trips
// to memory, 3.3-5.3 GB/s a block in the lab's runs (g000172's 8 blocks over 26 MB in 705 µs,
// g000136's 8 over 25 MB in 722, g000340's 2 over 6.4 MB in 970), so 4 ms of block time is about
// 18 MB, and three lanes of such buffers outgrow the H100's 50 MB L2 (kSplitStreams). The lab's
// corpora score the same from 3 to 5 ms (2 ms takes in g000316@s1's 4-8-block kernels over 5-14
// MB, which did overlap; 6 ms leaves out g000172's 16-block 326 µs kernels).
constexpr Ns kSweepingBlockNs = 4'000'000;
// ... and runs at least this long: many-block kernels that short spin rather than sweep (g000081's
// and g000316@s1's 32-64-block 50-125 µs kernels, 6-8 ms of block time, did overlap). The corpora
// score the same from 150 to 400 µs.
constexpr Ns kSweepingShortestNs = 250'000;

// Whether a few-block kernel that ran `ran` sweeps a buffer too large for the lanes to share the L2
// by its blocks' time (kSweepingShortestNs, kSweepingBlockNs).
bool blocksShowLargeBuffer(std::uint64_t grid_blocks, Ns ran) {
  return ran >= kSweepingShortestNs &&
         static_cast<double>(grid_blocks) * static_cast<double>(ran) >= static_cast<double>(kSweepingBlockNs);
}
// The largest buffer the op at `pos` was handed, where the trace records the memory each op touched
// (CUOVERLAP_OP_BUFFERS, data_order.h) and the device's L2 size; nothing where it does not.
std::optional<std::uint64_t> recordedBufferBytes(const DeviceView& view, std::size_t pos) {
  const Device* device = view.device();
  if (device == nullptr || device->l2_bytes == 0) return std::nullopt;
  const std::uint64_t bytes = largestOpBuffer(view.trace(), view.op(view.ops()[pos]));
  if (bytes == 0) return std::nullopt;
  return bytes;
}

// Where the trace records the memory each op touched (CUOVERLAP_OP_BUFFERS, data_order.h) and the
// device's L2 size, whether the few-block kernel at `pos` was handed a buffer (from its pointer to
// its allocation's end) that kSplitStreams lanes' copies outgrow the L2 with: what the block-time
// test (blocksShowLargeBuffer) stands in for. Nothing where the trace does not tell. The waits
// corpus's g001041 (an H200, op buffers): its loop's 2-16-block kernels sweep a 23.5 MB buffer,
// but in that recording fewer of them passed the block-time test (30 kept in order, against 34 in
// the held-out H200 recording of the program), and the split, priced with the others side by side,
// claimed 4.51 ms for 0.27 ms saved (a false finding; the other recordings claimed 37-274 µs).
std::optional<bool> recordedLargeBuffer(const DeviceView& view, std::size_t pos) {
  const std::optional<std::uint64_t> bytes = recordedBufferBytes(view, pos);
  if (!bytes) return std::nullopt;
  return kSplitStreams * *bytes > view.device()->l2_bytes;
}

// Whether the few-block kernel at `pos`, which ran `ran`, sweeps a buffer too large for the lanes
// to share the L2: by its recorded buffer where the trace has one, else by its blocks' time; either
// way only from kSweepingShortestNs on (a short kernel handed a large buffer touches little of it).
bool showsLargeBuffer(const DeviceView& view, std::size_t pos, Ns ran) {
  if (const std::optional<bool> recorded = recordedLargeBuffer(view, pos)) {
    return ran >= kSweepingShortestNs && *recorded;
  }
  return blocksShowLargeBuffer(view.op(view.ops()[pos]).grid_blocks, ran);
}

// A kernel whose time its own work or a timer sets repeats, with nothing of another stream beside
// it, to within a few tenths of a percent; one whose time is its few blocks' trips to memory varies
// with what the caches held. Runs of one kernel that differ by more than this share of the shorter
// show the second (repeatsVary). The lab's baselines (vt34, few-block kernels of 100 µs or more
// with three or more runs alone): those whose time is their spin repeat within 0.04% (median; 0.23%
// at the ninth decile, 88 kernels), those whose time is their sweep within 0.52% (median, 111).
// The corpora score the same from 0.2% to 0.5% (0.7% to 2% move c4 g001008@s4 and c9 g007001
// alike, without c3 g000117@s2; 4% only g007001).
constexpr double kSweepRepeatSpread = 0.003;
// Runs of one kernel (name, grid and block) within this factor of each other's time are one
// repeated piece of work whose runs differ by jitter: a loop's repeats of one kernel in the lab's
// traces differ by under 1% (h200h g001041: 4-block sweeps of 997-1008 µs, 2-block ones of
// 1920-1924 µs), where one launch shape doing other work differs by far more (the lab's kernels
// share a name: g000136's 4-block kernel swept 25 MB in 1.0-1.2 ms and 97 KB in 0.2).
constexpr double kJitterSpread = 1.05;
// A sweep whose blocks' time together (blocks x duration) is at least this sweeps a buffer of
// about 27 MB (the lab's 4.5 GB/s a block, kSweepingBlockNs): three lanes of such buffers (80 MB)
// outgrow the H100's 50 MB L2 whatever else it keeps, and the lanes' sweeps thrash it
// (sweepsSideBySide). The corpora score the same from 6.0 to 6.8 ms; 5.6 ms takes in c1/c3 g000233@s7
// (its 8- and 16-block sweeps of 4.2-5.6 ms over a 22.6 MB buffer each lane, whose split saved as
// much as the midway price), 7.5 ms leaves out g001041 (6.86 ms), 9 ms g005068 and g005094 too.
constexpr Ns kThrashingBlockNs = 6'000'000;
// ... and only where the one stream's sweeps had the L2 to themselves: other streams' kernels ran
// beside them no more than this share of their time. Where other threads' buffers already shared
// it, the one stream's sweeps already ran from memory and the split costs them nothing more: c1
// g000098@s2's 1-block sweep over a 31.8 MB buffer, a third of its time beside three other
// threads' work (11.1-11.8 ms, 2.9 GB/s a block: memory's pace), ran 11.4-11.7 ms in each lane
// of the split, which saved 20.9 ms (0.34-0.38 of its sweeps' time beside others; kept in order
// it would claim 0.4 ms, midway 11.4). The thrashing splits' sweeps: 0 (c2 g001041, c7 g005094,
// c9 g007001), 0.12-0.13 (c7 g005068), 0.16 (c4 g001008@s4). The corpora score the same and move
// the same claims from 0.18 to 0.32. Where other streams' sweeps (few-block kernels whose time
// shows a large buffer, as the split stream's: isSweepAt) ran beside the one stream's for more than
// this share of their time, those sweeps already ran from memory, and side by side in the split
// they run at that pace, neither in order nor midway: the split is priced free (sweepsSideBySide).
constexpr double kThrashBesideShare = 0.25;
// A kernel of at least this many waves by the device's limits (resident blocks per SM x SMs) holds
// the whole device in the lab's runs: two of them fill it by the limits, one already does by what
// the lab's kernels measured (halfDeviceKernelsInOrder). The lab's grids are multiples of 132
// blocks, so anything in (0.25, 0.5] picks the same kernels: 0.4 and 0.5 score the same, 0.25
// (264-block kernels, which did overlap: g000062) and 0.6 (no 528-block kernel) lose the gain.
constexpr double kHalfDeviceWaves = 0.5;
// A sweeping kernel's own first-step run counts as its caches' (sweepsFromMemory) only by more than
// this share of its later run: one kernel's two runs carry the jitter of both (kBesideJitter
// twice). 5% takes in g000067@s1's 16-block kernel (5.5% longer in the recording before's one run,
// under 5% in the corpus's five: jitter), and loses it; 6-9% also clear the recording before's
// g000136@s1 (9.3% longer there), 10-12% keep the corpus's gains alone.
constexpr double kSweepColdShare = 2 * kBesideJitter;
// How much longer a sweep takes from memory than from the L2: its few blocks' time is their trips'
// latency, about twice the L2's from the H100's memory. g000136@s1's fixed program ran its lane's
// last 4-block sweep over its own 25 MB buffer in 2352 µs with nothing beside it (1173 in the
// one-stream program, whose one buffer stayed in the L2). The corpora score the same from 1.8 to
// 2.5 (1.5 leaves g000136@s1 false; 2.0-2.2 also bring g000281@s0 in).
constexpr double kSweepFromMemory = 2.0;

}  // namespace

// Edges that keep the split stream's kernels that `keep` picks in their order, each after the
// previous one ends, where they fall in more than one lane; else none.
template <typename Keep>
std::vector<OrderEdge> keptInOrder(const DeviceView& view, const std::vector<std::uint64_t>& keys,
                                   const std::vector<std::uint64_t>& lanes, std::uint64_t stream, Keep keep) {
  std::vector<OrderEdge> edges;
  std::optional<std::size_t> previous;
  bool lanes_differ = false;
  for (std::size_t pos = 0; pos < view.ops().size(); ++pos) {
    const ScopedOp& scoped = view.ops()[pos];
    const GpuOp& op = view.op(scoped);
    if (keys[pos] != stream || op.kind != OpKind::kKernel || !keep(pos, scoped, op)) continue;
    if (previous) {
      edges.push_back({*previous, pos, 0});
      lanes_differ = lanes_differ || lanes[*previous] != lanes[pos];
    }
    previous = pos;
  }
  return lanes_differ ? edges : std::vector<OrderEdge>{};
}

// Whether the split stream's few-block kernels include a sweep by its blocks' time
// (kSweepingShortestNs, kSweepingBlockNs) whose runs with nothing of another stream beside them
// vary (kSweepRepeatSpread, between runs of the same kernel: name, grid and block, within a quarter
// of each other's time, as one launch shape may do other work): its time is the caches', as where
// the loop's first step ran slower (coldLaneKernels). c9 g007001: its 16-block kernels over one
// 33 MB buffer ran 538.9, 576.1 and 583.5 µs in the three steps (the first no longer), the
// 32-block ones 365.1-373.0; split into lanes of a buffer each they ran 857-862 and 414-421 µs
// beside each other, where the what-if ran them at their own speed (772 µs claimed for 190).
// With `only`, the kernels at those positions alone (sweepsSideBySide).
bool repeatsVary(const DeviceView& view, const std::vector<std::uint64_t>& keys, std::uint64_t stream,
                 const std::unordered_set<std::size_t>* only) {
  const Device* device = view.device();
  if (device == nullptr || device->sm_count <= 0) return false;
  const auto& ops = view.ops();
  const std::size_t n = ops.size();
  // Per op, the latest end of another stream's op started before it and the next start of one
  // after it (ops come in start order): whether it ran alone.
  std::vector<Ns> end_before(n, std::numeric_limits<Ns>::min()), start_after(n, std::numeric_limits<Ns>::max());
  for (std::size_t p = 1; p < n; ++p) {
    end_before[p] = end_before[p - 1];
    if (keys[p - 1] != stream) end_before[p] = std::max(end_before[p], ops[p - 1].end);
  }
  for (std::size_t p = n; p-- > 1;) start_after[p - 1] = keys[p] != stream ? ops[p].start : start_after[p];
  std::map<std::tuple<StringId, std::uint32_t, std::uint16_t>, std::vector<Ns>> runs;  // sweeps' run times
  for (std::size_t p = 0; p < n; ++p) {
    const GpuOp& op = view.op(ops[p]);
    if (keys[p] != stream || op.kind != OpKind::kKernel) continue;
    if (only != nullptr && only->count(p) == 0) continue;
    if (end_before[p] > ops[p].start || start_after[p] < ops[p].end) continue;
    const Ns ran = ops[p].end - ops[p].start;
    if (op.grid_blocks == 0 || op.grid_blocks >= static_cast<std::uint64_t>(device->sm_count) ||
        !showsLargeBuffer(view, p, ran)) {
      continue;
    }
    runs[std::make_tuple(op.name, op.grid_blocks, op.block_threads)].push_back(ran);
  }
  for (auto& [key, times] : runs) {
    std::sort(times.begin(), times.end());
    for (std::size_t i = 0; i + 1 < times.size(); ++i) {
      const auto lo = static_cast<double>(times[i]);
      std::size_t j = i + 1;  // the longest run within a quarter of this one
      while (j + 1 < times.size() && static_cast<double>(times[j + 1]) <= 1.25 * lo) ++j;
      const auto hi = static_cast<double>(times[j]);
      if (hi <= 1.25 * lo && hi - lo > kSweepRepeatSpread * lo) return true;
    }
  }
  return false;
}

// Whether a kernel (position) is a sweep by its launch shape and run: fewer blocks than SMs, and
// either long (kSweepingKernelNs) or long enough with its blocks' time showing a large buffer
// (kSweepingShortestNs, kSweepingBlockNs): sweepingKernelsInOrder's test of a cache-bound stream's
// kernels, by the kernel's own run.
bool isSweepAt(const DeviceView& view, std::size_t pos) {
  const Device* device = view.device();
  const GpuOp& op = view.op(view.ops()[pos]);
  if (device == nullptr || device->sm_count <= 0 || op.kind != OpKind::kKernel || op.grid_blocks == 0 ||
      op.grid_blocks >= static_cast<std::uint64_t>(device->sm_count)) {
    return false;
  }
  const Ns ran = view.ops()[pos].end - view.ops()[pos].start;
  return ran >= kSweepingKernelNs || showsLargeBuffer(view, pos, ran);
}

// How much of the kernels' (positions `swept`) time other streams' kernels (those `counts` keeps)
// ran beside them: each kernel's overlap with the union of those kernels.
template <typename Counts>
Ns besideOtherStreams(const DeviceView& view, const std::vector<std::uint64_t>& keys, std::uint64_t stream,
                      const std::unordered_set<std::size_t>& swept, Counts counts) {
  const auto& ops = view.ops();
  std::vector<std::pair<Ns, Ns>> others;  // the union of the other streams' kernels, in time order
  for (std::size_t q = 0; q < ops.size(); ++q) {  // ops come in start order
    if (keys[q] == stream || view.op(ops[q]).kind != OpKind::kKernel || ops[q].end <= ops[q].start) continue;
    if (!counts(q)) continue;
    if (!others.empty() && ops[q].start <= others.back().second) {
      others.back().second = std::max(others.back().second, ops[q].end);
    } else {
      others.emplace_back(ops[q].start, ops[q].end);
    }
  }
  Ns beside = 0;
  for (const std::size_t pos : swept) {
    const ScopedOp& sweep = ops[pos];
    auto it = std::upper_bound(others.begin(), others.end(), sweep.start,
                               [](Ns t, const std::pair<Ns, Ns>& span) { return t < span.second; });
    for (; it != others.end() && it->first < sweep.end; ++it) {
      beside += std::min(sweep.end, it->second) - std::max(sweep.start, it->first);
    }
  }
  return beside;
}

// They thrash the L2 (kThrash) where the split uses all kSplitStreams lanes, the sweeps' own runs
// alone vary as memory's do (repeatsVary over them only: spins of sweep size repeat to the
// nanosecond, c2 g001049@null's 32-block 592.9 µs kernels) and the largest sweeps a buffer that
// three lanes' copies outgrow the L2 with (kThrashingBlockNs), on an L2 the one stream's sweeps had
// to themselves (kThrashBesideShare). Then two lanes' sweeps side by side each run from memory,
// about as long as one after the other: c2 g001041's 23.5 MB buffer, split into three lanes, ran its
// 4-block sweep 1143 -> 2236 µs, its 2-block ones 1886 -> 3615 and 2153 -> 3450 µs where the lanes
// met (its 8- and 16-block sweeps between, alone, x1.0): the split priced midway claimed 5.31 ms for
// -0.10 (c4: 5.13 for -2.63); kept in order, 0.27. Where the split used two lanes, their buffers fit
// the L2 together often enough that the midway price holds (c1/c3 g000061@s4, g000117@s2, c2
// g001006, c9 g007058 lose with it).
// They already ran from memory (kFromMemory) where, with the same lanes and sweep size, other
// streams' sweeps (isSweepAt: large buffers of their own) ran beside them for more than
// kThrashBesideShare of their time: the one stream's buffer did not keep the L2, so its sweeps'
// recorded pace is memory's, and the lanes' sweeps side by side run at it. c1 g000098@s2: worker2's
// 1-block sweep over a 31.8 MB buffer, 28% of its time beside other threads' 1-4-block sweeps (over
// 5.8-17 MB buffers), ran 11.4-11.7 ms in each lane of the split (10.3-11.8 ms on the one stream);
// priced midway the split claimed 11.4 ms where it saved 20.9 (c3 11.7 for 20.4, the H200 recording
// 11.1 for 18.0, two more H200 recordings 10.6 for 17.2 and 10.5 for 17.8); priced free, 22.3 ms
// (23.2, 21.7, 20.5, 20.7). Kernels that are no sweeps do not take the L2 from them: g000172@ptds'
// 4-16-block sweeps over a 26 MB buffer met other threads' kernels for 26% of their time, but other
// threads' sweeps for 9% (a 4-block kernel of 360 µs over 4.9 MB is none), and its split, which
// runs one lane's tail beside the next lane's head, saved 27 µs and -415 (midway: 0 claimed).
SweepsSideBySide sweepsSideBySide(const DeviceView& view, const std::vector<std::uint64_t>& keys,
                                  const std::vector<std::uint64_t>& lanes, std::uint64_t stream,
                                  const std::vector<OrderEdge>& sweeps) {
  if (sweeps.empty()) return SweepsSideBySide::kUnknown;
  std::unordered_set<std::uint64_t> used;
  for (std::size_t pos = 0; pos < keys.size(); ++pos) {
    if (keys[pos] == stream) used.insert(lanes[pos]);
  }
  if (used.size() < kSplitStreams) return SweepsSideBySide::kUnknown;
  std::unordered_set<std::size_t> swept;
  double largest = 0;
  for (const OrderEdge& edge : sweeps) {
    for (const std::size_t pos : {edge.from, edge.to}) {
      swept.insert(pos);
      const ScopedOp& op = view.ops()[pos];
      const double block_time = static_cast<double>(view.op(op).grid_blocks) * static_cast<double>(op.end - op.start);
      largest = std::max(largest, block_time);
    }
  }
  if (largest < static_cast<double>(kThrashingBlockNs)) return SweepsSideBySide::kUnknown;
  Ns total = 0;
  for (const std::size_t pos : swept) total += view.ops()[pos].end - view.ops()[pos].start;
  const double most_beside = kThrashBesideShare * static_cast<double>(total);
  // Other buffers already shared the L2 with the one stream's where other streams' kernels ran
  // beside its sweeps.
  const Ns beside = besideOtherStreams(view, keys, stream, swept, [](std::size_t) { return true; });
  if (static_cast<double>(beside) <= most_beside) {
    return repeatsVary(view, keys, stream, &swept) ? SweepsSideBySide::kThrash : SweepsSideBySide::kUnknown;
  }
  const Ns beside_sweeps =
      besideOtherStreams(view, keys, stream, swept, [&](std::size_t q) { return isSweepAt(view, q); });
  return static_cast<double>(beside_sweeps) > most_beside ? SweepsSideBySide::kFromMemory : SweepsSideBySide::kUnknown;
}

// Per op (position), for the few-block kernels of `stream` (fewer blocks than `sm_count`; 0 for
// the other ops), its typical run: the median of the runs of the same kernel (name, grid, block)
// on the stream within kJitterSpread of its own. One kernel repeated in a loop is one piece of
// work, a sweep or not as a whole: h200h g001041's 4-block sweep ran 997-1008 µs in its later
// steps, and judged run by run (one run under kSweepingKernelNs in one baseline window, none in
// the next) its split was claimed 1048 µs in one run of the program and 34 in the next (369 saved).
std::vector<Ns> typicalRuns(const DeviceView& view, const std::vector<std::uint64_t>& keys, std::uint64_t stream,
                            std::int64_t sm_count) {
  std::map<std::tuple<StringId, std::uint32_t, std::uint16_t>, std::vector<std::size_t>> kinds;
  for (std::size_t pos = 0; pos < view.ops().size(); ++pos) {
    const GpuOp& op = view.op(view.ops()[pos]);
    if (keys[pos] != stream || op.kind != OpKind::kKernel || op.grid_blocks == 0 ||
        op.grid_blocks >= static_cast<std::uint64_t>(sm_count)) {
      continue;
    }
    kinds[{op.name, op.grid_blocks, op.block_threads}].push_back(pos);
  }
  std::vector<Ns> typical;
  if (kinds.empty()) return typical;
  typical.assign(view.ops().size(), 0);
  for (const auto& [kind, positions] : kinds) {
    std::vector<Ns> runs;
    for (const std::size_t pos : positions) runs.push_back(view.ops()[pos].end - view.ops()[pos].start);
    std::sort(runs.begin(), runs.end());
    for (const std::size_t pos : positions) {
      const Ns own = view.ops()[pos].end - view.ops()[pos].start;
      const auto low = std::lower_bound(runs.begin(), runs.end(),
                                        static_cast<Ns>(std::ceil(static_cast<double>(own) / kJitterSpread)));
      const auto high = std::upper_bound(runs.begin(), runs.end(),
                                         static_cast<Ns>(static_cast<double>(own) * kJitterSpread));
      typical[pos] = *(low + (high - low) / 2);
    }
  }
  return typical;
}

// Whether the few-block kernel at a position sweeps a buffer that the split's lanes' copies of it
// fit the L2 with (kL2FitShare: recordedBufferBytes times the lanes the stream's work takes), on an
// L2 the stream's few-block kernels had to themselves: one host thread made the view's CUDA calls
// (HostState: no other thread's buffers the trace cannot place in time) and other streams' kernels
// ran beside them for no more than kThrashBesideShare of their time. Always false where the trace
// records no buffers.
std::function<bool(std::size_t)> lanesFitTheL2(const DeviceView& view, const std::vector<std::uint64_t>& keys,
                                                const std::vector<std::uint64_t>& lanes, std::uint64_t stream) {
  const auto never = [](std::size_t) { return false; };
  const Device* device = view.device();
  if (device == nullptr || device->l2_bytes == 0 || !recordsOpBuffers(view)) return never;
  if (view.hostState().threadCount() != 1) return never;
  std::unordered_set<std::uint64_t> used;
  std::unordered_set<std::size_t> few_block;
  Ns few_block_time = 0;
  for (std::size_t pos = 0; pos < keys.size(); ++pos) {
    const GpuOp& op = view.op(view.ops()[pos]);
    if (keys[pos] != stream) continue;
    used.insert(lanes[pos]);
    if (op.kind == OpKind::kKernel && op.grid_blocks > 0 &&
        op.grid_blocks < static_cast<std::uint64_t>(device->sm_count)) {
      few_block.insert(pos);
      few_block_time += view.ops()[pos].end - view.ops()[pos].start;
    }
  }
  const Ns beside = besideOtherStreams(view, keys, stream, few_block, [](std::size_t) { return true; });
  if (static_cast<double>(beside) > kThrashBesideShare * static_cast<double>(few_block_time)) return never;
  const double room = kL2FitShare * static_cast<double>(device->l2_bytes);
  return [&view, room, lanes_used = used.size()](std::size_t pos) {
    const std::optional<std::uint64_t> bytes = recordedBufferBytes(view, pos);
    return bytes && static_cast<double>(lanes_used * *bytes) <= room;
  };
}

// Edges that keep the split stream's long few-block kernels (kSweepingKernelNs) in their order
// (keptInOrder). Such a kernel's time is its few SMs' trips to memory, and beside another lane's
// it runs ×1.3-×2.2 in the lab's fixed programs (g000242's 1-block 3.56 ms kernels, a 19 MB buffer
// each; g000061@s4's 1-2-block 2-8 ms ones): the lanes' buffers together no longer fit the L2 that
// held one, which a trace without op buffers does not record. Where they still fit, the kernels
// overlap freely (g000111's 1-block 1 ms kernels, 5 MB buffers; and g000098@s2's 11 ms kernels,
// 30 MB buffers, which missed the L2 alone already); where the trace records the buffers and they
// fit half the L2 (lanesFitTheL2), the kernels are not kept in order. Where the loop's
// first step ran slower (`cache_bound`: a kernel of coldLaneKernels longer by more than
// kBesideJitter, its time the caches'), so do its shorter few-block kernels whose blocks' time
// shows a large buffer (kSweepingBlockNs, kSweepingShortestNs): g000172's main thread, whose 4-,
// 8- and 16-block kernels each sweep one 26 MB buffer (1.37, 0.70 and 0.33 ms; the first step's
// 4-block ones 1.59 and 1.63), split into lanes of a buffer each: the what-if ran one lane's 8-
// and 16-block tail beside the next lane's 4-block head at their own speed, 0.87 ms claimed, 27 µs
// measured (the recording before: −415 µs).
std::vector<OrderEdge> sweepingKernelsInOrder(const DeviceView& view, const std::vector<std::uint64_t>& keys,
                                              const std::vector<std::uint64_t>& lanes, std::uint64_t stream,
                                              bool cache_bound) {
  const Device* device = view.device();
  if (device == nullptr || device->sm_count <= 0) return {};
  const std::vector<Ns> typical = typicalRuns(view, keys, stream, device->sm_count);
  const std::function<bool(std::size_t)> fits = lanesFitTheL2(view, keys, lanes, stream);
  return keptInOrder(view, keys, lanes, stream, [&](std::size_t pos, const ScopedOp&, const GpuOp& op) {
    if (op.grid_blocks == 0 || op.grid_blocks >= static_cast<std::uint64_t>(device->sm_count)) return false;
    const Ns ran = typical[pos];
    if (fits(pos)) return false;
    if (ran >= kSweepingKernelNs) return true;
    return cache_bound && showsLargeBuffer(view, pos, ran);
  });
}

// Whether a kernel's first-step run (`first`, coldLaneKernels) was longer than its recorded run by
// more than `share` of it.
bool firstRunLonger(const DeviceView& view, const FasterOp& first, double share) {
  const ScopedOp& op = view.ops()[first.position];
  return static_cast<double>(first.duration) > (1.0 + share) * static_cast<double>(op.end - op.start);
}

// The split stream's sweeping kernels (the ends of `sweeps`, sweepingKernelsInOrder's edges) whose
// own first-step run (`cold`, coldLaneKernels) was longer by more than kSweepColdShare: their time
// is their trips to the L2 the one stream's buffer stayed in. The split gives each lane its own
// buffer, and where those outgrow the L2 together, a sweep runs from memory even where no other
// lane's sweep meets it (kSweepFromMemory times its first-step run): g000136@s1's lanes, a 25 MB
// buffer each, ran their 4-block sweeps ×1.7-×2.0 (2242 µs beside the next lane's head, 2352
// alone), where the what-if, whose sweeps never met, credited 0.97 ms for a split measured 0.38 ms
// slower. Where the sweeps do meet, the split's midway price already stands for their slower pace
// (splitSaving; g000178's 1-block kernels ran ×1.2-×1.75 beside each other), so these apply only
// where keeping them in order changes nothing. The same kernel's later runs (after a lane's first,
// in the steps a lane runs again) sweep their lane's buffer from memory too, at kSweepFromMemory
// times their own run, which the L2 served on the one stream: g004008's 2-block sweep over a 15 MB
// buffer (1255 µs in each later step, 1585 in the first) ran 2310-2517 µs in every step of its
// three-lane split, not only in each lane's first; with only those slowed the what-if credited 11.0
// ms for a split measured 0.63 ms slower.
std::vector<FasterOp> sweepsFromMemory(const DeviceView& view, const std::vector<OrderEdge>& sweeps,
                                       const std::vector<FasterOp>& cold) {
  std::unordered_set<std::size_t> swept;
  for (const OrderEdge& edge : sweeps) {
    swept.insert(edge.from);
    swept.insert(edge.to);
  }
  std::vector<FasterOp> slower;
  for (const FasterOp& first : cold) {
    if (swept.count(first.position) == 0 || !firstRunLonger(view, first, kSweepColdShare)) continue;
    slower.push_back({first.position, static_cast<Ns>(kSweepFromMemory * static_cast<double>(first.duration))});
  }
  if (slower.empty()) return slower;
  const auto& ops = view.ops();
  const auto sameKernel = [&](std::size_t a, std::size_t b) {
    const GpuOp& x = view.op(ops[a]);
    const GpuOp& y = view.op(ops[b]);
    return x.grid_blocks == y.grid_blocks && x.block_threads == y.block_threads && x.name == y.name;
  };
  std::unordered_set<std::size_t> priced;  // the lanes' first runs, as cold or slowed above
  for (const FasterOp& first : cold) priced.insert(first.position);
  const std::size_t lanes_first = slower.size();
  std::vector<std::size_t> later(swept.begin(), swept.end());
  std::sort(later.begin(), later.end());
  for (std::size_t pos : later) {
    if (priced.count(pos) > 0) continue;
    const bool again = std::any_of(slower.begin(), slower.begin() + static_cast<std::ptrdiff_t>(lanes_first),
                                   [&](const FasterOp& first) { return first.position < pos && sameKernel(first.position, pos); });
    if (!again) continue;
    slower.push_back({pos, static_cast<Ns>(kSweepFromMemory * static_cast<double>(ops[pos].end - ops[pos].start))});
  }
  return slower;
}

// Edges that keep the split stream's kernels of half the device or more by its limits, and under
// one wave (kHalfDeviceWaves), in their order (keptInOrder). By the limits two such kernels of
// different lanes run side by side at full speed; the lab's kernels do not: a grid of half a
// nominal wave runs one round of its blocks' time and a whole nominal wave two (ninth session:
// 528 blocks of 256 threads in 101 µs, 1056 in 198, for 100 µs blocks), and a kernel of another
// stream waiting for a 528-block kernel's SMs started at its end (sixteenth session, 11 pairs:
// median −0.02 of its duration before it), so beside each other they take about as long as one
// after the other. How much room such a kernel leaves depends on how its blocks run (a probe whose
// threads keep their own start ran one nominal wave in one round), which the trace does not tell:
// the split is priced midway, as for the sweeping kernels (splitSaving). A quarter of the device
// (264 blocks) leaves room in the lab's runs too (g000062's 264-block kernels overlapped fully).
std::vector<OrderEdge> halfDeviceKernelsInOrder(const DeviceView& view, const std::vector<std::uint64_t>& keys,
                                                const std::vector<std::uint64_t>& lanes, std::uint64_t stream) {
  const Device* device = view.device();
  if (device == nullptr || device->sm_count <= 0) return {};
  return keptInOrder(view, keys, lanes, stream, [&](std::size_t, const ScopedOp&, const GpuOp& op) {
    const double waves = wavesOf(device, op);
    return waves >= kHalfDeviceWaves && waves < 1.0;
  });
}

// A one-wave kernel that fills the device by its limits (the lab's 1056x256) runs its blocks in
// rounds, and once its last blocks are placed the slots its first ones leave go to the kernels
// queued behind it (ScheduleModel's slots_free_at_, taken from where the trace started another
// device-filling kernel inside such a kernel's run). A kernel that ran with nothing beside it
// shows no such point, so the split's what-if kept its whole run for it, and the next lane's
// kernels waited for its end: g000153's steps end in a 1056-block kernel (155 µs) that the split
// runs beside the next step's copy-in and 2112-block kernel, 0.52 ms measured, 0.32 claimed.
// Such a kernel's slots free at its middle (kAloneFillerSlotsFreeAt), and the lanes' kernels
// placed in them share them as a drained last wave's (ScheduleRun::shareTheDrain: a kernel of
// blocks as long as the filler's ends in step with its last slots, as g000292's 962 µs blocks
// did). Only the split stream's kernels that fill the device take them: the other streams' kernels
// keep the order they ran in beside it, and a 528x256 kernel in a filler's freed slots made
// 0.14-0.17 of its pace in g000155's fixed program (the twenty-second session's lab27-slip4),
// which its recorded rate does not give.
AloneFillers aloneFillers(const DeviceView& view, const std::vector<std::uint64_t>& keys, std::uint64_t stream) {
  const Device* device = view.device();
  if (device == nullptr || device->sm_count <= 0) return {};
  const auto& ops = view.ops();
  // Per position, the start of the next kernel of another stream (ops come in start order).
  std::vector<Ns> next_other(ops.size() + 1, std::numeric_limits<Ns>::max());
  for (std::size_t pos = ops.size(); pos-- > 0;) {
    const bool other = keys[pos] != stream && view.op(ops[pos]).kind == OpKind::kKernel;
    next_other[pos] = other ? ops[pos].start : next_other[pos + 1];
  }
  AloneFillers alone;
  Ns other_end = std::numeric_limits<Ns>::min();  // the latest end of another stream's kernel so far
  for (std::size_t pos = 0; pos < ops.size(); ++pos) {
    const GpuOp& op = view.op(ops[pos]);
    if (op.kind != OpKind::kKernel) continue;
    if (keys[pos] != stream) {
      other_end = std::max(other_end, ops[pos].end);
      continue;
    }
    // Its limits known (no default share of 1: observeSlotsFreeing's guard).
    if (op.grid_blocks == 0 || residentBlocksPerSm(*device, op) <= 0) continue;
    if (smShare(device, op) >= 1.0 - kFillsSlack) alone.takers.push_back(pos);
    if (other_end <= ops[pos].start && next_other[pos + 1] >= ops[pos].end) alone.fillers.push_back(pos);
  }
  if (alone.takers.empty()) return {};
  return alone;
}

}  // namespace cuoverlap::diagnosis
