// single-stream: the device's copies and kernels (and memsets) all ran on one stream (null or
// not), so nothing could overlap, and some host<->device transfer could have been hidden under
// compute by splitting the work over streams. A stream's work includes the synchronous copies and
// memsets (cudaMemcpy, cudaMemset: run on the legacy stream) of a thread that launches its kernels
// on it (workStreams, single_stream_advice.h): the advice issues them asynchronously on the
// stream. A copy is hideable when it moves data between host and device (HtoD or DtoH; not
// device-to-device), from pinned, unknown or pageable host memory (the advice pins the buffers),
// and is not a link of a dependency chain: a copy whose neighbours on the stream are all kernels
// (kernel -> copy -> kernel, or the run's first copy before a kernel, or its last after one) feeds
// the one after it or drains the one before it, and splitting the work over streams cannot run it
// beside either. A stream whose every copy is such a link still counts when its work is a loop of
// steps that each copy a result back (two chunks or more, each with a device-to-host copy): the
// split runs one step's kernels beside another's (a step's kernels issued after its result was
// read, beside the next steps). A loop of chunks some of which copy no result back (copy-in and
// kernels: every copy a chain link) counts too, with two fixes: a chunk with no copy-out may fold
// its input into device state the next one reads (an accumulator, sync-copy-fixed), which a split
// would break, or be independent (then the split holds). Copying each chunk's input ahead on a
// stream of its own (copyAheadSaving) holds for both and is the fix recommended and costed; the
// split is listed beside it (`fixes`: copy-ahead, then multi-stream). Streams with hideable copies
// are costed first. Fires with at least one kernel and three ops. Each candidate stream is costed
// (at most the four busiest, below); the finding names the one whose recommended fix saves the
// most and lists each stream's fixes (FixSaving::stream).
// Memsets may run on other streams (a cudaMemset before the loop). Where several host threads
// issue to the legacy stream, each thread's work there is its own stream of work (threadsOwnWork):
// the fix splits one thread's loop, the others' work staying on the legacy stream.
// With several streams, a stream counts where it ran mostly alone or held its extent (a loop of its
// own, not a pipeline's stream: ranMostlyAlone, heldItsExtent, kAloneLoopShare); a pipeline's
// stream whose work leaves the legacy stream to no other work's copies or kernels counts too, for
// the other threads' calls its legacy calls held (othersLeftOffLegacy), and is priced at its whole
// split with its kernels in order, the freed calls and its own legacy calls made asynchronous alike.
// Cost: the what-if schedule with the host modelled (schedule_estimate.h, host_timeline.h) minus
// the same schedule with the stream's chunks issued round-robin to three streams (chunkLanes; the
// lab's multi-stream; where the stream ran a loop of other steps before its last loop, the last
// loop's chunks only, after the earlier ones: lastLoopFirstChunk) and their copies and memsets
// asynchronous to the host (the advice's pinned
// buffers; a blocking copy call of that stream no longer waits for the device; other streams'
// blocking copies stay, sync-memcpy's and pageable-memcpy's fixes), its pageable copies at the
// pinned rate and without the host's staging (pinnedCopies); a copy to the host that its thread
// read before going on with the step still holds the call, on its lane (resultsReadMidChunk):
// copies of one chunk run beside kernels of another, kernels that leave room on the SMs run side
// by side, and the next chunk's kernel takes the SMs a multi-wave kernel's last wave drains, from
// that wave's middle (as in every schedule: ScheduleRun::drainTails); each lane's first run of a
// step of the loop touches buffers of its own, not yet in the caches, and its kernels take the
// durations the step's first run had on the one stream where those were longer (coldLaneKernels,
// where no other stream's device-filling kernel ran beside that first run: beside other work, its
// extra time is the memory system's, which the lanes meet too); both keep the legacy stream's barriers
// (the split's lanes of a legacy or blocking stream's work are created blocking streams, which
// keep them: splitBarriers); both schedules carry the device's
// hand-off between a stream's queued ops (DeviceView::streamHandoff), which on one stream lies
// between every two ops and in the split overlaps the other lanes' work. In the split, a host call
// that waited for the stream's work as a whole (a device synchronize, an allocation call, the
// stream's synchronize after its last op) waits for every lane (waitingForEveryLane). The ledger
// charges pageable-memcpy and sync-memcpy first, so the part of this saving that making the copies
// asynchronous alone brings is not charged twice; with pageable copies it is given the split's
// saving with the copies as they ran (pinning's share is pageable-memcpy's), the fix's saving
// (Finding::fix_alone_ns) staying the whole advice's. For a loop of copy-in and kernels, the cost
// is the copy-ahead's: the same schedule minus the one with the stream's HtoD copies on a stream
// of their own, each kernel after the copies before it, each copy after the last kernel of two
// chunks before (two input buffers), its pageable ones pinned (pinnedCopies); the ledger gets it
// with them as they ran, as the split's. Without two chunks, min(|union of hideable copies|,
// |union of kernels|), the most that overlapping them with compute could save. Not reported under
// 10 µs.
// Where: the hideable copies and the stream's kernels (a copy-in loop's: all its copies).
#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <limits>
#include <queue>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <optional>

#include "cuoverlap/intervals.h"
#include "diagnosis/api_names.h"
#include "diagnosis/finding_builder.h"
#include "diagnosis/legacy_barriers.h"
#include "diagnosis/rules/rules.h"
#include "diagnosis/rules/single_stream_advice.h"
#include "diagnosis/rules/single_stream_fixes.h"
#include "diagnosis/rules/single_stream_threads.h"
#include "diagnosis/rules/staging_holds.h"
#include "diagnosis/schedule_estimate.h"
#include "diagnosis/stream_waits.h"

namespace cuoverlap::diagnosis {
namespace {

// One stream's work: its ops, copies and kernels, and the copies the split could hide. Summaries
// only (O(1) memory a stream): the intervals themselves are collected for the named stream alone.
struct StreamWork {
  std::uint64_t stream = 0;
  std::uint32_t stream_id = 0;  // as the trace numbers it
  bool stream_named = false;    // stream_id taken from an op of the stream itself
  std::size_t ops = 0, copies = 0, kernels = 0, hideable = 0, pageable = 0;
  std::size_t legacy_copies = 0;  // of its copies, those on the legacy default stream
  Ns busy = 0;  // summed op time: which stream holds the device's work
  UnionLength hideable_union, kernel_union;
  // The stream's previous op: its kind, and whether it is a copy waiting for its next neighbour
  // to say whether it is a chain link (every neighbour it has on the stream a kernel).
  bool previous_is_kernel = true;  // no previous op counts as a kernel neighbour
  bool pending_copy = false;
  bool pending_before_is_kernel = false;
  Interval pending{};
  // Its chunks as chunkLanes cuts them: how many start after the first, and how many copied no
  // result back to the host (no device-to-host copy).
  std::size_t later_chunks = 0, chunks_without_result = 0;
  bool seen_kernel = false, chunk_returns = false;
  std::optional<Engine> previous_engine;
  // It ran beside other streams' work (not mostly alone): its split is priced with its kernels
  // in order (splitSaving's kernels_in_order).
  bool beside_others = false;
  // The share of its busy time it ran alone (aloneTimes; with several streams only).
  double alone_share = 0;
  // It neither ran mostly alone nor held its extent (a pipeline's stream, whose own overlap the
  // pipeline has), but its work leaves the legacy stream to no other work's copies or kernels
  // (othersLeftOffLegacy): the split frees other threads' calls its legacy calls held. Costed
  // after the loops of their own, at its split with kernels in order.
  bool frees_others = false;
  // It neither ran mostly alone nor held its extent, but it is its threads' only work, with no
  // legacy-stream or pageable copy (threadsLoopAmongOthers): a loop of its own among other
  // threads' work, priced as one beside others and costed after the loops above.
  bool among_other_threads = false;

  // A loop of self-contained steps: at least two chunks, each copying its result back. A chunk
  // that only copies input in and runs kernels folds it into device state the next chunk reads
  // (an accumulator: sync-copy-fixed), the chain its copies between kernels are links of.
  bool stepsReturnResults() const { return later_chunks > 0 && chunks_without_result == 0; }
  // A loop of chunks some of which copy no result back: their chunks may be independent (the
  // split runs them side by side) or feed device state the next reads (only the copy-ahead
  // holds). Its copies are chain links (none hideable): the loop's copy-in feeds its kernels.
  // Its input copies may be pageable: the advice pins them (the copy-ahead's what-if runs them
  // pinned, pinnedCopies).
  bool feedsChunks() const { return later_chunks > 0 && chunks_without_result > 0 && hideable == 0; }
};

// Follows the stream's chunks (chunkLanes' cut) with its next op.
void followChunks(StreamWork& work, const GpuOp& op) {
  const Engine engine = engineOf(op);
  if (op.kind == OpKind::kMemcpy && engine == Engine::kH2D && work.seen_kernel &&
      work.previous_engine && *work.previous_engine != Engine::kH2D) {
    ++work.later_chunks;
    if (!work.chunk_returns) ++work.chunks_without_result;
    work.chunk_returns = false;
  }
  if (op.kind == OpKind::kKernel) work.seen_kernel = true;
  if (engine == Engine::kD2H && hostDeviceTransfer(op)) work.chunk_returns = true;
  work.previous_engine = engine;
}

// Decides the stream's pending copy now that its next neighbour (a kernel or not, or none) is known.
void settlePending(StreamWork& work, bool next_is_kernel, std::vector<Interval>* hideable) {
  if (!work.pending_copy) return;
  work.pending_copy = false;
  if (work.pending_before_is_kernel && next_is_kernel) return;  // a chain link
  ++work.hideable;
  work.hideable_union.add(work.pending.start, work.pending.end);
  if (hideable) hideable->push_back(work.pending);
}

// Every stream's work in one pass (ops come in start order: on one stream also issue order).
// `keys` null: each op is its own stream's work (streamKey). With `only` set, the intervals of
// that stream's hideable copies and kernels are collected too.
std::vector<StreamWork> workPerStream(const DeviceView& view, const std::vector<std::uint64_t>* keys,
                                      std::optional<std::uint64_t> only = {},
                                      std::vector<Interval>* hideable = nullptr,
                                      std::vector<Interval>* kernels = nullptr) {
  const auto& ops = view.ops();
  std::unordered_map<std::uint64_t, std::size_t> index;
  std::vector<StreamWork> works;
  // Runs of one stream's ops are common: the last key's slot is asked first.
  std::optional<std::uint64_t> last_key;
  std::size_t last_slot = 0;
  for (std::size_t pos = 0; pos < ops.size(); ++pos) {
    const GpuOp& op = view.op(ops[pos]);
    const std::uint64_t key = keys ? (*keys)[pos] : DeviceView::streamKey(op);
    if (only && key != *only) continue;
    if (last_key != key) {
      auto [it, inserted] = index.try_emplace(key, works.size());
      if (inserted) {
        works.emplace_back();
        works.back().stream = key;
        works.back().stream_id = op.stream_id;
      }
      last_key = key;
      last_slot = it->second;
    }
    StreamWork& work = works[last_slot];
    if (!work.stream_named && DeviceView::streamKey(op) == key) {
      work.stream_id = op.stream_id;
      work.stream_named = true;
    }
    const bool is_kernel = op.kind == OpKind::kKernel;
    settlePending(work, is_kernel, hideable);
    followChunks(work, op);
    ++work.ops;
    work.busy += ops[pos].end - ops[pos].start;
    if (is_kernel) {
      ++work.kernels;
      work.kernel_union.add(ops[pos].start, ops[pos].end);
      if (kernels) kernels->push_back({ops[pos].start, ops[pos].end});
    } else if (op.kind == OpKind::kMemcpy) {
      ++work.copies;
      if (op.src_kind == MemKind::kPageable || op.dst_kind == MemKind::kPageable) ++work.pageable;
      if (view.onLegacyDefaultStreamAt(pos)) ++work.legacy_copies;
      if (hostDeviceTransfer(op)) {
        work.pending_copy = true;
        work.pending_before_is_kernel = work.previous_is_kernel;
        work.pending = {ops[pos].start, ops[pos].end};
      }
    }
    work.previous_is_kernel = is_kernel;
  }
  for (StreamWork& work : works) {
    settlePending(work, true, hideable);  // the last op: no next
    if (!work.chunk_returns) ++work.chunks_without_result;  // the last chunk
  }
  return works;
}

// Per stream: how long its kernels and copies ran (union) and how long they ran with no other
// stream's kernel or copy running, in one sweep over the op boundaries (memsets ignored).
struct AloneTime {
  Ns busy = 0;
  Ns alone = 0;
  std::optional<Interval> extent;  // its first op's start to its last op's end
};

// `keys` null: each op's own stream (streamKey).
std::unordered_map<std::uint64_t, AloneTime> aloneTimes(const DeviceView& view,
                                                      const std::vector<std::uint64_t>* keys) {
  // Streams are few and ops many: each key gets a dense slot once (one hash lookup per op), and
  // the sweep's per-stream state lives in vectors by slot.
  std::unordered_map<std::uint64_t, std::uint32_t> slot_of;
  std::vector<std::uint64_t> key_of;
  // One sweep over the ops in start order; the ends of the ops still running wait in a min-heap,
  // so memory is O(ops running at once), not O(ops).
  using End = std::pair<Ns, std::uint32_t>;  // (end, slot)
  std::priority_queue<End, std::vector<End>, std::greater<>> ends;
  std::vector<int> running;        // per slot: ops running
  std::vector<AloneTime> times;    // per slot
  std::size_t active = 0;          // streams with an op running
  std::uint64_t slot_sum = 0;      // the sum of their slots: the stream itself when active == 1
  std::optional<Ns> previous;
  // The stretch alone in progress: from its owner's first op alone to now, across the owner's
  // own op boundaries and idle time, until another stream runs. It counts from the gap threshold
  // on: streams that take turns op by op are each alone only between the others' ops, which is
  // the program's order, not a loop of one; a run of short copies alone is one stretch.
  std::optional<std::uint64_t> owner;
  Ns stretch_start = 0, stretch_end = 0, stretch_alone = 0;
  const auto closeStretch = [&] {
    if (owner && stretch_end - stretch_start >= kMinimumCostNs) times[*owner].alone += stretch_alone;
    owner.reset();
  };
  const auto advance = [&](Ns time) {
    if (previous && active == 1) {
      if (owner != slot_sum) {
        closeStretch();
        owner = slot_sum;
        stretch_start = *previous;
        stretch_alone = 0;
      }
      stretch_alone += time - *previous;
      stretch_end = time;
    } else if (previous && active > 1 && time > *previous) {
      closeStretch();
    }
    previous = time;
  };
  const auto retireUntil = [&](Ns time) {
    while (!ends.empty() && ends.top().first <= time) {
      const auto [end, slot] = ends.top();
      ends.pop();
      advance(end);
      if (--running[slot] == 0) {
        --active;
        slot_sum -= slot;
        times[slot].busy += end;
      }
    }
  };
  std::optional<std::uint64_t> last_key;
  std::uint32_t slot = 0;
  for (std::size_t pos = 0; pos < view.ops().size(); ++pos) {
    const ScopedOp& scoped = view.ops()[pos];
    const GpuOp& op = view.op(scoped);
    if (op.kind == OpKind::kMemset || scoped.end <= scoped.start) continue;
    retireUntil(scoped.start);
    advance(scoped.start);
    const std::uint64_t key = keys ? (*keys)[pos] : DeviceView::streamKey(op);
    if (last_key != key) {
      const auto [it, inserted] = slot_of.try_emplace(key, static_cast<std::uint32_t>(key_of.size()));
      if (inserted) {
        key_of.push_back(key);
        running.push_back(0);
        times.emplace_back();
      }
      last_key = key;
      slot = it->second;
    }
    auto& extent = times[slot].extent;
    extent = extent ? Interval{extent->start, std::max(extent->end, scoped.end)}
                    : Interval{scoped.start, scoped.end};
    if (running[slot]++ == 0) {
      ++active;
      slot_sum += slot;
      times[slot].busy -= scoped.start;  // busy = sum of (end - start) of its active stretches
    }
    ends.push({scoped.end, slot});
  }
  retireUntil(std::numeric_limits<Ns>::max());
  closeStretch();
  std::unordered_map<std::uint64_t, AloneTime> by_key;
  for (std::size_t k = 0; k < key_of.size(); ++k) by_key.emplace(key_of[k], times[k]);
  return by_key;
}

// A stream that already runs beside others (one of a pipeline's streams) is no single stream to
// split: its work must have run mostly alone (at least half of its busy time with no other
// stream's kernel or copy running).
bool ranMostlyAlone(const std::unordered_map<std::uint64_t, AloneTime>& times, std::uint64_t stream) {
  const auto it = times.find(stream);
  return it != times.end() && 2 * it->second.alone > it->second.busy;
}

// The share of the stream's busy time it ran alone (0 for a stream aloneTimes does not know).
double aloneShare(const std::unordered_map<std::uint64_t, AloneTime>& times, std::uint64_t stream) {
  const auto it = times.find(stream);
  if (it == times.end() || it->second.busy <= 0) return 0;
  return static_cast<double>(it->second.alone) / static_cast<double>(it->second.busy);
}

// A loop beside other streams' work whose split saves mostly by its lanes' kernels side by side
// (splitSaving with them in order under half of it free) gets that part priced at the middle of
// the two only where it still ran alone for at least this share of its busy time: alone at least
// half as long as beside the others' work (the ran-alone test, alone longer than beside, halved).
// Side by side, the lanes' few-block kernels pay for each other in part (the fixed programs' own
// traces: g000233@s7's 8- and 16-block kernels ran ×1.6-×2.0 beside the next lane's, and the split
// saved 0.44-1.0 ms, between its in-order price, 0-35 µs, and its free one, 1.1-1.6 ms); a loop
// whose kernels ran mostly beside the others' slows the others' kernels too, which no price of the
// split's own kernels holds (g000238: the legacy threads' 1-block kernels beside the lanes ran
// 2.54-2.64 ms, 1.71 before, the program 1.8 ms slower; its loop ran alone 0.23 of its busy time).
constexpr double kSideBySideAloneShare = 1.0 / 3.0;

// Nor is a stream that took turns with others chunk by chunk (a pipeline's streams serialized by
// pageable copies or allocation calls: each chunk alone, the streams already the split): it must
// hold most of the device's busy time between its first op's start and its last op's end, as a
// loop of its own does, one phase of the program. A stream that ran alone in (nearly) all of its
// busy time (kAloneLoopShare) counts without holding its extent where the work between its steps
// was other threads' (under kOwnThreadsShare of it its own threads' other streams): its steps
// never met another stream's work, and the other threads' work filled the gaps its own host's
// waits left, a loop of its own that no pipeline of its thread already splits. The lab's g001046
// (main's loop of ten steps that each synchronize, two other threads' legacy work between them;
// alone 99.5-99.7% of its busy time, 14-16% of its extent) saved 0.67-0.68 ms, missed before,
// 0.23-0.25 claimed now; g000314 (alone 100%) 106 µs claimed for 90 measured. The streams
// scenario `pageable` and cupy_blocking (one thread's pipeline serialized by pageable copies:
// each stream alone all its time, 100% of the work between its chunks its own thread's) stay
// out. Same lab verdicts for kAloneLoopShare 0.96-0.98 (0.95 names g001048@s1's loop, 0.89-0.95
// alone, 73-107 µs claimed where its split saves -115-7; 0.99 leaves the held-out g001046 missed)
// and kOwnThreadsShare 0.1-0.9.
constexpr double kAloneLoopShare = 0.97;
constexpr double kOwnThreadsShare = 0.5;

// The share of the device's busy time within `extent` (kernels and copies, by op) that other
// streams' ops of the stream's own threads took: a pipeline's other streams, where one thread
// issued them (0 where only other threads' work filled the stream's gaps).
// The host threads that launched `stream`'s work (its ops' launch calls; none where the trace has
// no runtime calls).
std::unordered_set<std::uint32_t> workThreads(const DeviceView& view, const std::vector<std::uint64_t>* keys,
                                              std::uint64_t stream) {
  std::unordered_set<std::uint32_t> tids;
  for (std::size_t pos = 0; pos < view.ops().size(); ++pos) {
    const GpuOp& op = view.op(view.ops()[pos]);
    if ((keys ? (*keys)[pos] : DeviceView::streamKey(op)) != stream) continue;
    if (const auto call = view.launchCall(op)) tids.insert(view.call(*call).tid);
  }
  return tids;
}

double ownThreadsOtherStreamsShare(const DeviceView& view, const std::vector<std::uint64_t>* keys,
                                   std::uint64_t stream, Interval extent,
                                   const std::unordered_set<std::uint32_t>& tids) {
  Ns own = 0, all = 0;
  for (std::size_t pos = 0; pos < view.ops().size(); ++pos) {
    const ScopedOp& scoped = view.ops()[pos];
    const GpuOp& op = view.op(scoped);
    if (op.kind == OpKind::kMemset || scoped.start < extent.start || scoped.start >= extent.end) continue;
    if ((keys ? (*keys)[pos] : DeviceView::streamKey(op)) == stream) continue;
    const Ns length = std::min(scoped.end, extent.end) - scoped.start;
    all += length;
    const auto call = view.launchCall(op);
    if (call && tids.count(view.call(*call).tid) > 0) own += length;
  }
  return all > 0 ? static_cast<double>(own) / static_cast<double>(all) : 0.0;
}

double ownThreadsOtherStreamsShare(const DeviceView& view, const std::vector<std::uint64_t>* keys,
                                   std::uint64_t stream, Interval extent) {
  return ownThreadsOtherStreamsShare(view, keys, stream, extent, workThreads(view, keys, stream));
}

// Nor, short of those, is a stream whose work met other threads' work for much of its busy time
// and held little of its extent, unless that work is all its threads issued (none of their other
// streams' work in its extent: ownThreadsOtherStreamsShare 0) and none of it is a legacy-stream or
// pageable copy. Then it is no pipeline's stream but a loop of its thread's own among the others'
// work, which took the device between its steps: its split runs a step's tail beside the next
// step's head, and its lanes' kernels meet the others' as its loop did, so it is priced as a loop
// beside others (kernels in order, midway where it ran alone for kSideBySideAloneShare). Its own
// legacy or pageable copies would take turns with the other threads' calls in the driver, which a
// split moves for all of them (the forty-eighth session's `threads` misses); those loops stay out.
// The lab's g000237 (worker1's loop on its own blocking stream, whose kernels after each step's
// synchronize waited 6.9 ms on the device behind main's legacy copies): 0 claimed where its split
// saved 434-551 µs on three recordings, now 342-491 (within on two); g000198's loops, whose
// synchronous legacy copies the split would make asynchronous, stay out (3.2-5.2 ms claimed where
// their splits cost 1.6-2.8 ms, on all three, counting them).
// Only where the trace tells which threads issued the stream's work (its launch calls: a trace
// without runtime calls, as the analyzer's synthetic benchmark, tells none).
bool threadsLoopAmongOthers(const DeviceView& view, const std::vector<std::uint64_t>* keys, std::uint64_t stream,
                            Interval extent, std::size_t legacy_copies, std::size_t pageable) {
  if (legacy_copies != 0 || pageable != 0 || !view.hasRuntimeData()) return false;
  const std::unordered_set<std::uint32_t> tids = workThreads(view, keys, stream);
  return !tids.empty() && ownThreadsOtherStreamsShare(view, keys, stream, extent, tids) == 0.0;
}

// The works (by `keys`) with ops on the legacy default stream: any op, and copies or kernels.
// One pass over the ops for every candidate (othersLeftOffLegacy).
struct LegacyStreamWork {
  std::unordered_set<std::uint64_t> any;
  std::unordered_set<std::uint64_t> copies_or_kernels;
};

LegacyStreamWork legacyStreamWork(const DeviceView& view, const std::vector<std::uint64_t>& keys) {
  LegacyStreamWork work;
  for (std::size_t pos = 0; pos < view.ops().size(); ++pos) {
    if (!view.onLegacyDefaultStreamAt(pos)) continue;
    work.any.insert(keys[pos]);
    if (view.op(view.ops()[pos]).kind != OpKind::kMemset) work.copies_or_kernels.insert(keys[pos]);
  }
  return work;
}

// Whether `stream`'s work has ops on the legacy default stream and no other work's copies or
// kernels stay there (memsets may: a thread's one synchronous cudaMemset a step, whose holds
// heldBySplitLegacyCalls keeps). Its synchronous legacy calls held the other threads' calls, and
// once the split moves them off, no other thread's loop is left on the legacy stream to take turns
// with the freed calls (each of its legacy launches and copies holds the context while the driver
// orders it: legacy_threads.h), which the what-if does not follow call by call (lab g000009@s0:
// worker1's loop of 25 synchronous 4 KiB legacy copies a step beside main's and worker0's legacy
// loops, its split 253 us faster on one recording, 382 slower on the other). The fixed program's
// own trace of the lab's c5 g003051 (worker1's loop of 95 synchronous 4 KiB pinned legacy
// cudaMemcpy calls a step, a median 23.9 us each; the other threads' 273 copy calls that
// overlapped one took a median 26.8-29.0 us, their 401 others 2.3): split, those calls took
// 4.5-5.0 us (866 calls) and the program ran 4.1 ms faster (4.9 on c5, 4.2 on its replica).
bool othersLeftOffLegacy(const LegacyStreamWork& legacy, std::uint64_t stream) {
  if (legacy.any.count(stream) == 0) return false;
  return std::all_of(legacy.copies_or_kernels.begin(), legacy.copies_or_kernels.end(),
                     [&](std::uint64_t key) { return key == stream; });
}

bool heldItsExtent(const DeviceView& view, const std::unordered_map<std::uint64_t, AloneTime>& times,
                   std::uint64_t stream) {
  const auto it = times.find(stream);
  if (it == times.end() || !it->second.extent) return false;
  const Interval extent = *it->second.extent;
  const Ns busy = extent.end - extent.start - view.idleWithin(extent.start, extent.end);
  return 2 * it->second.busy > busy;
}

}  // namespace

std::optional<Finding> findSingleStream(const DeviceView& view) {
  if (view.empty()) return std::nullopt;
  // With no op on a legacy default stream, workStreams moves no op and no threads share a stream:
  // each op is its own stream's work, which the passes below read from the op itself. The keys
  // (8 bytes and a read per op) are then made only for the candidates that get costed.
  const bool own_streams = !view.anyOnLegacyDefaultStream();
  std::vector<std::uint64_t> stream_keys = own_streams ? std::vector<std::uint64_t>{} : workStreams(view);
  const std::optional<std::vector<std::uint64_t>> own_work =
      own_streams ? std::nullopt : threadsOwnWork(view, stream_keys);
  const std::vector<std::uint64_t>* given_keys =
      own_streams ? nullptr : own_work ? &*own_work : &stream_keys;
  // The stream each work ran on: threads' work on a shared stream ran in its one queue, so
  // whether it ran alone is the stream's question, not each thread's. Without such work, its own.
  const std::unordered_map<std::uint64_t, std::uint64_t> ran_on =
      own_work ? streamOfWork(*own_work, stream_keys) : std::unordered_map<std::uint64_t, std::uint64_t>{};
  const auto ranOn = [&](std::uint64_t work) { return own_work ? ran_on.at(work) : work; };
  std::vector<StreamWork> works = workPerStream(view, given_keys);
  // Memsets may run anywhere (a cudaMemset before the loop): streams of memsets alone don't count.
  const auto memsets_only = [&](const StreamWork& w) { return w.kernels == 0 && w.copies == 0; };
  works.erase(std::remove_if(works.begin(), works.end(), memsets_only), works.end());
  if (works.empty()) return std::nullopt;
  const bool one_stream = std::all_of(works.begin(), works.end(), [&](const StreamWork& w) {
    return ranOn(w.stream) == ranOn(works.front().stream);
  });
  std::vector<StreamWork> candidates;
  for (StreamWork& work : works) {
    // A stream whose every copy is a chain link still splits when its steps return results: the
    // split runs one step's kernels beside another's (the kernels issued after a step's result
    // was read, beside the next steps).
    // So does a loop of copy-in and kernels: its input can be copied ahead, and where its chunks
    // are independent, split.
    const bool splits = work.hideable > 0 || work.stepsReturnResults() || work.feedsChunks();
    if (splits && work.kernels > 0 && work.ops >= 3) candidates.push_back(std::move(work));
  }
  if (candidates.empty()) return std::nullopt;
  // Each candidate costs a what-if schedule of the device: at most kMaxCandidates of them (the
  // busiest), so that the rule costs at most five schedules however many streams there are.
  constexpr std::size_t kMaxCandidates = 4;
  // Streams with copies the split hides come first: streams of chain links only are costed
  // after them.
  std::sort(candidates.begin(), candidates.end(), [](const StreamWork& a, const StreamWork& b) {
    return std::pair(a.hideable > 0, a.busy) > std::pair(b.hideable > 0, b.busy);
  });
  // With several streams, only a stream that ran mostly alone counts (a loop of its own among the
  // others' work, however much work they hold: a phase of the program).
  if (!one_stream) {
    const auto times = aloneTimes(view, own_streams ? nullptr : &stream_keys);
    std::optional<LegacyStreamWork> legacy;  // made for the first candidate that asks
    candidates.erase(std::remove_if(candidates.begin(), candidates.end(),
                                    [&](StreamWork& w) {
                                      const std::uint64_t stream = ranOn(w.stream);
                                      w.beside_others = !ranMostlyAlone(times, stream);
                                      w.alone_share = aloneShare(times, stream);
                                      // Took turns with blocking streams' work by the legacy
                                      // stream's barrier: in the split it runs beside that work,
                                      // whose SMs its lanes' kernels would share. (Most of its
                                      // copies on the legacy stream first: one pass over the ops.)
                                      const auto time = times.find(stream);
                                      // A loop on a per-thread default stream beside mostly
                                      // legacy-stream work took the same turns from the other
                                      // side (where the trace tells the stream's origin); its
                                      // split's lanes are non-blocking (blockingWork).
                                      // (Never with own_streams: no op on the legacy stream.)
                                      const bool legacy_loop = 2 * w.legacy_copies > w.copies;
                                      if (given_keys != nullptr && time != times.end() && time->second.extent &&
                                          (legacy_loop ? tookTurnsByLegacyBarrier(view, *given_keys, w.stream,
                                                                                  *time->second.extent)
                                                       : perThreadTookTurnsByLegacyBarrier(view, *given_keys, w.stream,
                                                                                           *time->second.extent))) {
                                        w.beside_others = true;
                                        return false;
                                      }
                                      // A loop that never met another stream's work, between
                                      // other threads' work, is a loop of its own whether or not
                                      // it held its extent (kAloneLoopShare).
                                      if (heldItsExtent(view, times, stream)) return false;
                                      if (w.alone_share >= kAloneLoopShare && time != times.end() &&
                                          time->second.extent &&
                                          ownThreadsOtherStreamsShare(view, given_keys, w.stream,
                                                                      *time->second.extent) < kOwnThreadsShare) {
                                        return false;
                                      }
                                      // A pipeline's stream still frees the other threads' calls
                                      // its legacy calls held, where no other work's legacy calls
                                      // stay to take turns with them.
                                      if (given_keys != nullptr && !legacy) legacy = legacyStreamWork(view, *given_keys);
                                      if (given_keys != nullptr && othersLeftOffLegacy(*legacy, w.stream)) {
                                        w.beside_others = true;
                                        w.frees_others = true;
                                        return false;
                                      }
                                      // A loop of its threads' own among other threads' work.
                                      if (time != times.end() && time->second.extent &&
                                          threadsLoopAmongOthers(view, given_keys, w.stream, *time->second.extent,
                                                                 w.legacy_copies, w.pageable)) {
                                        w.beside_others = true;
                                        w.among_other_threads = true;
                                        return false;
                                      }
                                      return true;
                                    }),
                     candidates.end());
    if (candidates.empty()) return std::nullopt;
  }
  // The loops that run mostly alone or hold their extent are costed first, then the loops among
  // other threads' work and the pipelines' streams that free other threads' calls.
  std::stable_partition(candidates.begin(), candidates.end(),
                        [](const StreamWork& w) { return !w.frees_others && !w.among_other_threads; });
  if (candidates.size() > kMaxCandidates) candidates.resize(kMaxCandidates);
  if (own_streams) stream_keys = workStreams(view);
  const std::vector<std::uint64_t>& keys = own_work ? *own_work : stream_keys;
  const HostTimeline& host = buildHostTimeline(view);
  const std::vector<OrderEdge> waits = waitEdges(streamWaits(view));
  // Blocking calls' ops are released by the constraints they ran under, the legacy stream's
  // barriers included (the split keeps them: splitSaving).
  const std::vector<OrderEdge> order = programOrderEdges(view);
  const ScheduleModel model(view, host, order);
  const std::vector<StagingHold> holds = stagingHolds(view, order);
  // Each stream's fix is its own: what splitting it alone saves, and for a loop of copy-in and
  // kernels what copying its input ahead saves (the fix it recommends: it holds whether or not a
  // chunk reads state the previous one left). The finding names the stream whose recommended fix
  // saves the most, and lists every stream's fixes.
  struct Priced {
    std::size_t candidate = 0;
    Ns split = 0;
    std::optional<Ns> ahead;  // loops of copy-in and kernels only
    Ns recommended() const { return ahead.value_or(split); }
  };
  std::vector<Priced> priced;
  for (std::size_t k = 0; k < candidates.size(); ++k) {
    const StreamWork& candidate = candidates[k];
    Priced fix{k, splitSaving(view, keys, host, model, waits, order, holds, candidate.stream, true,
                              candidate.beside_others),
               std::nullopt};
    // Beside other streams' work, a split that saves mostly by running its lanes' kernels side by
    // side (less than half of it left with them in order) is priced at the middle of the two where
    // the loop still ran alone for kSideBySideAloneShare of its busy time; else it is not named.
    const bool side_by_side_priced = candidate.alone_share >= kSideBySideAloneShare;
    // A pipeline's stream that frees other threads' calls keeps its split with kernels in order
    // whole: the fix makes its own legacy calls asynchronous as well as theirs free, and its own
    // thread no longer waits for the legacy stream's barrier either (fresh2 g010179: worker1's
    // cudaMemset waited for the main thread's blocking-stream work: 365 µs claimed for 353 saved,
    // where the others' freed time alone claimed 0).
    if (candidate.beside_others && !candidate.frees_others && (fix.split > 0 || side_by_side_priced)) {
      const Ns free_split = splitSaving(view, keys, host, model, waits, order, holds, candidate.stream);
      if (2 * fix.split < free_split) fix.split = side_by_side_priced ? (fix.split + free_split) / 2 : 0;
    }
    if (fix.split == 0 && one_stream && chunkLanes(view, keys, candidate.stream).empty()) {
      fix.split = std::min(candidate.hideable_union.length(), candidate.kernel_union.length());
    }
    if (candidate.feedsChunks()) {
      fix.ahead = copyAheadSaving(view, keys, host, model, waits, candidate.stream);
    }
    if (std::max(fix.split, fix.ahead.value_or(0)) >= kMinimumCostNs) priced.push_back(fix);
  }
  if (priced.empty()) return std::nullopt;
  std::stable_sort(priced.begin(), priced.end(),
                   [](const Priced& a, const Priced& b) { return a.recommended() > b.recommended(); });
  const Ns cost = priced.front().recommended();
  const StreamWork& work = candidates[priced.front().candidate];
  const bool feeds = priced.front().ahead.has_value();
  const std::uint64_t chosen = work.stream;
  FindingBuilder builder(view, "single-stream", Severity::kWarning);
  // The stream's first op of its own (not a synchronous copy of its thread's on the legacy
  // stream), else its first op.
  const GpuOp* first_on = nullptr;
  for (std::size_t pos = 0; pos < view.ops().size(); ++pos) {
    const GpuOp& op = view.op(view.ops()[pos]);
    if (keys[pos] != chosen) continue;
    if (!first_on) first_on = &op;
    if (DeviceView::streamKey(op) == chosen) {
      first_on = &op;
      break;
    }
  }
  const GpuOp& first = *first_on;
  const std::string overlap =
      work.hideable > 0 ? fmt::format("{} host<->device copies could run beside kernels", work.hideable)
      : feeds ? fmt::format("each of its {} chunks copied its input in after the previous chunk's kernels",
                            work.later_chunks + 1)
              : fmt::format("its {} steps each copy a result back and could run beside each other",
                            work.later_chunks + 1);
  builder.add(Ns{0}, evidenceForOp(view, first,
                                   fmt::format("{} {} copies and {} kernels on stream {}; {}",
                                               one_stream ? "all" : "a loop of", work.copies,
                                               work.kernels, first.stream_id, overlap)));
  std::vector<Interval> where, kernel_runs;
  workPerStream(view, &keys, chosen, &where, &kernel_runs);
  where.insert(where.end(), kernel_runs.begin(), kernel_runs.end());
  if (feeds) {  // its copies are chain links, none hideable: the copy-ahead hides them all
    for (std::size_t pos = 0; pos < view.ops().size(); ++pos) {
      const ScopedOp& scoped = view.ops()[pos];
      if (keys[pos] == chosen && view.op(scoped).kind == OpKind::kMemcpy) {
        where.push_back({scoped.start, scoped.end});
      }
    }
  }
  for (const Interval& run : unionOf(std::move(where))) builder.addRegion(run);
  // The ledger charges pageable-memcpy first and the split's region is not where pinning saves:
  // it gets the fix's saving with the copies as they ran, the rest is pinning's.
  if (work.pageable > 0) {
    const Ns unpinned = feeds ? copyAheadSaving(view, keys, host, model, waits, chosen, false)
                              : splitSaving(view, keys, host, model, waits, order, holds, chosen, false,
                                            work.beside_others);
    builder.estimateSaving(std::min(cost, unpinned));
    builder.fixAlone(cost);
  } else {
    builder.estimateSaving(cost);
  }
  const bool any_feeds = std::any_of(priced.begin(), priced.end(), [](const Priced& p) { return p.ahead.has_value(); });
  // Where threads shared the stream, each fix splits one thread's loop: the fixes name it.
  std::vector<std::optional<std::uint32_t>> thread_of(priced.size());
  for (std::size_t k = 0; k < priced.size() && own_work; ++k) {
    thread_of[k] = workThread(view, keys, ran_on, candidates[priced[k].candidate].stream);
  }
  const bool per_thread = std::any_of(thread_of.begin(), thread_of.end(), [](const auto& t) { return t.has_value(); });
  if (priced.size() > 1 || any_feeds || per_thread) {
    std::vector<FixSaving> fixes;
    for (std::size_t k = 0; k < priced.size(); ++k) {
      const Priced& fix = priced[k];
      const std::uint32_t stream_id = candidates[fix.candidate].stream_id;
      const std::optional<std::uint32_t> thread = thread_of[k];
      if (fix.ahead) fixes.push_back({"copy-ahead", *fix.ahead, stream_id, thread});
      fixes.push_back({"multi-stream", fix.split, stream_id, thread});
    }
    builder.fixSaves(std::move(fixes));
  }
  const std::string split =
      "split the work into chunks and issue each chunk's copy-in, kernel and copy-out to its own "
      "created stream (cudaStreamCreate), with pinned host buffers and one device buffer per "
      "stream, so that copies of one chunk overlap kernels of another";
  auto finding = builder.build(
      one_stream ? fmt::format("{} copies and {} kernels all ran on stream {}: nothing could overlap",
                               work.copies, work.kernels, first.stream_id)
                 : fmt::format("{} copies and {} kernels ran one after another on stream {}: "
                               "none of its chunks could overlap another",
                               work.copies, work.kernels, first.stream_id),
      feeds ? fmt::format(
                  "Copy each chunk's input one chunk ahead on a created stream of its own{}, into two "
                  "device buffers in turn: record an event after each copy and make the kernels' "
                  "stream wait for it (cudaStreamWaitEvent), and make each copy wait for an event "
                  "recorded after the kernels that read the buffer it overwrites; the kernels stay "
                  "in order on their stream, so state one chunk leaves for the next still holds.{}",
                  work.pageable > 0 ? " from pinned host buffers (cudaMallocHost, cudaHostRegister)" : "",
                  // The split is named where its what-if saves something; saving under the
                  // reporting floor, it would only be a second fix with nothing to show for it.
                  priced.front().split >= kMinimumCostNs
                      ? fmt::format(" Where the chunks share no device state, {} ({:.3f} ms saved instead)", split,
                                    static_cast<double>(priced.front().split) / 1e6)
                      : std::string())
            : "S" + split.substr(1));
  if (finding) {
    finding->count = work.ops;
    finding->fix_stream = first.stream_id;
  }
  return finding;
}

}  // namespace cuoverlap::diagnosis
