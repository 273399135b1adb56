// many-small-copies: runs of at least two copies of one direction (HtoD or DtoH) on one stream
// that one thread issued back to back, launching nothing else between them on any stream and not
// waiting for the device between them (no one copy carries pieces that two threads issued, that
// a loop read back one by one, or that the thread synchronized between). One transfer
// split into many copies pays a copy's fixed cost (PinnedRate::latency_ns), the engine's
// turnaround (DeviceView::engineTurnaround), a launch call and, for cudaMemcpy, a host round trip
// per piece, whatever the pieces' size. Pieces are small ones (even pinned, a piece's time would
// be mostly those fixed costs: at the pinned rate of its direction its bytes take at most latency
// plus turnaround; without a known rate, under 64 KiB) or pinned ones of one size (a buffer cut
// into chunks; large copies of different sizes are different buffers, which merging would first
// gather on the host). Large pageable copies are pieces when of one size (a pageable buffer cut
// into chunks), but their staging stays: one copy of them all still stages every byte on the host
// (pageable-memcpy's part); what merging saves there is each later piece's call and its wait for
// the previous piece's DMA to leave the staging buffer (stagedOwn below).
// Fix (the lab's transform merge-copies): one copy of each run's bytes.
// Cost: from the what-if schedule with the host modelled (schedule_estimate.h, host_timeline.h),
// the span as recorded minus the span with
//   - for large pageable pieces, the first call staging every piece's bytes (its own time and each
//     later call's, HostBarrier::own, less their waits for the previous piece's DMA) and an
//     upload's op keeping its length (the last chunk's DMA, after the call staged it);
//   - for small pageable uploads that returned once staged, the same with each later piece's
//     bytes at the rate the trace's large staged uploads staged theirs (uploadStagingRate; without
//     one, kStagingRateWithoutTrace): one upload of them all still stages every byte before its
//     call returns, its op waiting for the staging only where its stream did not hold it longer;
//   - each run's first copy taking the run's bytes at the rate its pieces moved them: their
//     summed durations less each later piece's fixed cost, no slower than the bytes at the
//     pinned rate plus one fixed cost (mergedDuration), and its later copies taking none (nor
//     the engine's turnaround);
//   - the later copies' calls gone: one that blocked its thread (cudaMemcpy, or a copy of
//     pageable memory, host_timeline.h) no longer does, and the host time of an asynchronous one,
//     with its loop's time since the previous piece's call (at most the run's typical gap,
//     loopOverhead), is given back to the thread's later launches until its next blocking call;
//   - other threads' calls that a later piece on the legacy stream held (the driver holds the
//     context while it orders a legacy-stream op after the blocking streams) taking their own
//     time (legacy_threads.h, contendedTime): they return sooner, and so release their ops;
//   - other threads' calls that any later piece's call held (heldByPieces): a launch waited a turn
//     behind each, an allocation or free lost the lock to them while they followed one another;
//   - the legacy stream's implicit barriers (legacy_barriers.h) in both schedules, except those of
//     the later copies, which the fixed program no longer issues.
// What makes copies faster also lowers the ideal: that part is Finding::ideal_reduction_ns.
// Where (ledger): the runs' copies. Not reported under 10 µs.
// The saving leaves out the replay's own error where the fix takes it off the critical path
// (replay_error.h).
// Needs: copy sizes; launch calls for the host part.
#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <optional>
#include <map>
#include <utility>
#include <vector>

#include "cuoverlap/units.h"
#include "diagnosis/api_names.h"
#include "diagnosis/cost_ledger.h"
#include "diagnosis/finding_builder.h"
#include "diagnosis/host_time_given.h"
#include "diagnosis/legacy_barriers.h"
#include "diagnosis/median.h"
#include "diagnosis/overlap_index.h"
#include "diagnosis/pinned_rate.h"
#include "diagnosis/replay_error.h"
#include "diagnosis/rules/legacy_threads.h"
#include "diagnosis/rules/rules.h"
#include "diagnosis/stream_waits.h"
#include "diagnosis/thread_launches.h"

namespace cuoverlap::diagnosis {
namespace {

// What the later pieces' calls (`pieces`: asynchronous copy calls the fixed program no longer
// makes, sorted; `removed`: every later piece's call, sorted) held of other threads' calls. The
// driver serializes a context's calls (its lock), and it is not fair: a thread that calls back to
// back takes it again ahead of one that waits.
//  - An asynchronous launch of another thread needs the lock once: it waits a turn behind each
//    piece's call in progress, that call's own time (its kind's median among the launch calls
//    that overlapped no other thread's launch call), however long the piece's call itself waited.
//    It gets back the pieces' own times that overlapped it, at most what it took beyond its
//    kind's median (returned in the call: it releases its op sooner).
//  - An allocation or free of another thread (cudaMalloc, cudaFree, cudaMallocHost, cudaFreeHost:
//    a free also synchronizes the device) takes the lock again and again over its work and loses
//    it to each call of a thread that issues pieces back to back: its own time (HostBarrier::own, after the
//    work it waited for ended) runs on as long as other threads' pieces' calls follow one another
//    (g000222: the main thread's cudaFree took 1.81 ms beside two threads' 128 and 64 uploads in
//    pieces, 0.18-0.20 ms in the fixed program's four iterations). It gets back the part of its
//    own time that other threads' pieces' calls covered and no other call of a third thread that
//    the fixed program keeps did (such a call, a cudaMallocHost pinning its pages, may be what
//    both waited for: g000104's launches and pieces' calls all ran beside one of 1.45 ms), at most
//    its own time beyond its kind's shortest; as a change of the barrier's own time (`changed`;
//    a barrier that the what-if changes already is left).
std::vector<HostTimeGiven> heldByPieces(const DeviceView& view, const std::vector<std::size_t>& pieces,
                                        const std::vector<std::size_t>& removed, const HostTimeline& host,
                                        std::vector<CallChange>& changed) {
  if (pieces.empty()) return {};
  const auto launchKind = [](ApiKind kind) {
    return kind == ApiKind::kLaunch || kind == ApiKind::kMemcpyAsync || kind == ApiKind::kMemsetAsync;
  };
  std::vector<OtherThreadCalls::Call> launches;
  std::vector<OtherThreadCalls::Call> keeping;  // calls kept that take the lock (not synchronizes, which sleep)
  for (const std::size_t i : view.calls()) {
    const ApiKind kind = view.callKind(i);
    const RuntimeCall& c = view.call(i);
    if (launchKind(kind)) launches.push_back({c.start, c.end, threadKey(c)});
    if (kind == ApiKind::kDeviceSync || kind == ApiKind::kStreamSync || kind == ApiKind::kEventSync) continue;
    if (std::binary_search(removed.begin(), removed.end(), i)) continue;
    keeping.push_back({c.start, c.end, threadKey(c)});
  }
  const OtherThreadCalls others(std::move(launches));
  const std::vector<std::size_t> pageable = pageableCopyCalls(view);
  std::map<ApiKind, std::vector<Ns>> alone;  // launch calls that overlapped no other thread's
  std::vector<std::size_t> candidates;
  for (const ScopedOp& scoped : view.ops()) {
    const auto call = view.launchCall(view.op(scoped));
    if (!call || !launchKind(view.callKind(*call))) continue;
    if (std::binary_search(pageable.begin(), pageable.end(), *call)) continue;
    const RuntimeCall& c = view.call(*call);
    if (others.overlap(c.start, c.end, threadKey(c))) {
      candidates.push_back(*call);
    } else {
      alone[view.callKind(*call)].push_back(c.end - c.start);
    }
  }
  std::map<ApiKind, Ns> typical;
  for (auto& [kind, durations] : alone) typical[kind] = medianOf(durations);
  struct Piece {
    Ns start = 0;
    Ns end = 0;
    Ns own = 0;
    std::uint64_t thread = 0;
  };
  std::vector<Piece> held_by;
  for (const std::size_t p : pieces) {
    const RuntimeCall& c = view.call(p);
    const auto it = typical.find(view.callKind(p));
    held_by.push_back({c.start, c.end, it != typical.end() ? it->second : 0, threadKey(c)});  // own unknown: no turn
  }
  const OverlapIndex<Piece> pieces_at(held_by);
  const OverlapIndex<OtherThreadCalls::Call> kept_at(keeping);
  // Of [start, end): the pieces' own times that overlapped it (`turns`), else the time other
  // threads' pieces' calls covered that no kept call of a third thread did.
  using Span = std::pair<Ns, Ns>;
  // Spans come by start: one that begins inside the last joins it.
  const auto addSpan = [](std::vector<Span>& spans, Ns from, Ns to) {
    if (!spans.empty() && from <= spans.back().second) {
      spans.back().second = std::max(spans.back().second, to);
    } else {
      spans.emplace_back(from, to);
    }
  };
  // The parts of [start, end) that other threads' intervals of `index` covered, as spans by start.
  const auto coveredBy = [&](const auto& index, Ns start, Ns end, std::uint64_t thread) {
    std::vector<Span> parts;
    index.forEachOverlapping(start, end, [&](const auto& x) {
      if (x.thread != thread) parts.emplace_back(std::max(x.start, start), std::min(x.end, end));
    });
    std::sort(parts.begin(), parts.end());
    std::vector<Span> spans;
    for (const auto& [from, to] : parts) addSpan(spans, from, to);
    return spans;
  };
  const auto heldOver = [&](Ns start, Ns end, std::uint64_t thread, bool turns) {
    Ns held = 0;
    if (turns) {
      pieces_at.forEachOverlapping(start, end, [&](const Piece& p) {
        if (p.thread != thread) held += std::min(p.own, std::min(p.end, end) - std::max(p.start, start));
      });
      return held;
    }
    const std::vector<Span> by_pieces = coveredBy(pieces_at, start, end, thread);
    if (by_pieces.empty()) return held;
    const std::vector<Span> by_kept = coveredBy(kept_at, start, end, thread);
    std::size_t j = 0;
    for (const auto& [from, to] : by_pieces) {
      held += to - from;
      while (j < by_kept.size() && by_kept[j].second <= from) ++j;
      for (std::size_t q = j; q < by_kept.size() && by_kept[q].first < to; ++q) {
        held -= std::min(to, by_kept[q].second) - std::max(from, by_kept[q].first);
      }
    }
    return held;
  };
  std::sort(candidates.begin(), candidates.end());
  candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());
  std::vector<HostTimeGiven> given;
  for (const std::size_t call : candidates) {
    if (std::binary_search(removed.begin(), removed.end(), call)) continue;
    const auto it = typical.find(view.callKind(call));
    if (it == typical.end()) continue;
    const RuntimeCall& c = view.call(call);
    const Ns excess = c.end - c.start - it->second;
    if (excess <= 0) continue;
    const Ns held = heldOver(c.start, c.end, threadKey(c), /*turns=*/true);
    if (held > 0) given.push_back({call, std::min(held, excess), /*in_call=*/true});
  }
  std::map<ApiKind, Ns> shortest_own;
  std::vector<std::pair<std::size_t, Ns>> held_barriers;  // (barrier, held)
  for (std::size_t b = 0; b < host.barriers.size(); ++b) {
    const HostBarrier& barrier = host.barriers[b];
    const ApiKind kind = view.callKind(barrier.call);
    if (kind != ApiKind::kAllocation || barrier.staged) continue;
    const auto [it, added] = shortest_own.emplace(kind, barrier.own);
    if (!added) it->second = std::min(it->second, barrier.own);
    const RuntimeCall& c = view.call(barrier.call);
    const Ns held = heldOver(c.end - barrier.own, c.end, threadKey(c), /*turns=*/false);
    if (held > 0) held_barriers.emplace_back(b, held);
  }
  std::vector<std::size_t> already;
  for (const CallChange& change : changed) already.push_back(change.call);
  std::sort(already.begin(), already.end());
  for (const auto& [b, held] : held_barriers) {
    const HostBarrier& barrier = host.barriers[b];
    if (std::binary_search(already.begin(), already.end(), barrier.call)) continue;
    const Ns excess = barrier.own - shortest_own[view.callKind(barrier.call)];
    if (excess > 0) changed.push_back({barrier.call, true, barrier.own - std::min(held, excess), 0});
  }
  return given;
}

constexpr std::uint64_t kSmallWithoutRate = 64 << 10;

struct CopyRun {
  std::vector<std::size_t> positions;
  std::uint64_t bytes = 0;
  Ns time = 0;
  int direction = 0;
  bool staged = false;  // large pageable pieces of one size: the driver stages each
};


int directionOf(const GpuOp& op) {
  const Engine engine = engineOf(op);
  return engine == Engine::kH2D ? 0 : engine == Engine::kD2H ? 1 : -1;
}

bool pageableCopy(const GpuOp& op) {
  return op.src_kind == MemKind::kPageable || op.dst_kind == MemKind::kPageable;
}

// Small: even pinned, its time would be mostly a copy's fixed costs.
bool small(const GpuOp& op, const PinnedRate& rate, Ns turnaround) {
  if (rate.bytes_per_ns <= 0) return op.bytes < kSmallWithoutRate;
  return static_cast<double>(op.bytes) <= rate.bytes_per_ns * static_cast<double>(rate.latency_ns + turnaround);
}

// The thread that issued an op (pid << 32 | tid of its launch call), 0 without one.
std::uint64_t issuingThread(const DeviceView& view, const GpuOp& op) {
  const auto call = view.launchCall(op);
  if (!call) return 0;
  return threadKey(view.call(*call));
}

// Per host thread, the starts of its calls that waited for the device other than its copies:
// explicit synchronizes, and allocation and free calls (which synchronize the device; not a
// pinned host allocation, which waits for none of it).
class ThreadWaits {
 public:
  explicit ThreadWaits(const DeviceView& view) {
    for (const std::size_t c : view.calls()) {  // by start: each thread's starts come sorted
      const ApiKind kind = view.callKind(c);
      const bool allocation = kind == ApiKind::kAllocation &&
                              !isPinnedHostAllocation(view.callName(c)) &&
                              !isDeviceAllocation(view.callName(c));
      if (!isExplicitSync(kind) && !allocation) continue;
      starts_[threadKey(view.call(c))].push_back(view.call(c).start);
    }
  }
  // Whether the thread that launched `earlier` and `later` waited between their launch calls.
  bool between(const DeviceView& view, const GpuOp& earlier, const GpuOp& later) const {
    const auto a = view.launchCall(earlier);
    const auto b = view.launchCall(later);
    if (!a || !b) return false;
    const auto it = starts_.find(threadKey(view.call(*b)));
    if (it == starts_.end()) return false;
    const auto first = std::upper_bound(it->second.begin(), it->second.end(), view.call(*a).start);
    return first != it->second.end() && *first < view.call(*b).start;
  }

 private:
  std::map<std::uint64_t, std::vector<Ns>> starts_;
};

// Maximal runs of at least two small copies of one direction on one stream that one thread issued
// back to back (other threads' ops between them stay where they are), in the order of their first
// copies. A run is stored once its second copy comes: most small copies of a
// large trace are alone, and a vector for each would be most of the diagnosis' memory.
std::vector<CopyRun> smallCopyRuns(const DeviceView& view, const PinnedRate rates[2]) {
  struct Open {
    int direction = -1;  // of the thread's last op on the stream when that was a candidate copy, else -1
    std::size_t first = 0;
    std::size_t last = 0;
    std::uint64_t bytes = 0;
    Ns time = 0;
    std::int64_t run = -1;  // index in runs once a second copy joined
    std::uint64_t last_bytes = 0;
    bool last_small = false;
    bool last_pageable = false;
  };
  std::vector<CopyRun> runs;
  std::map<std::pair<std::uint64_t, std::uint64_t>, Open> open;  // per (stream, issuing thread)
  const ThreadLaunches launches(view);
  const ThreadWaits waits(view);
  // Runs of one stream's ops from one thread are common: the last key's state is asked first
  // (the map's nodes stay where they are as others are added).
  std::optional<std::pair<std::uint64_t, std::uint64_t>> last_key;
  Open* last_state = nullptr;
  std::size_t position = 0;
  for (const ScopedOp& scoped : view.ops()) {
    const std::size_t at = position++;
    const GpuOp& op = view.op(scoped);
    const int d = op.isCopy() ? directionOf(op) : -1;
    const std::pair<std::uint64_t, std::uint64_t> key{DeviceView::streamKey(op), issuingThread(view, op)};
    if (last_key != key) {
      last_state = &open[key];
      last_key = key;
    }
    Open& state = *last_state;
    const bool is_small = d >= 0 && small(op, rates[d], view.engineTurnaround(engineOf(op)));
    if (d < 0) {
      state.direction = -1;
      continue;
    }
    const bool pageable = pageableCopy(op);
    const Ns time = scoped.end - scoped.start;
    // Issued back to back: the thread launched nothing else between them, on any stream, and
    // did not wait for the device between them (a synchronize between two pieces is the program
    // waiting before it issues the next: merging them first moves that wait, blocking-sync-call's
    // fix). Without launch calls: consecutive on the stream.
    const auto previous = launches.before(at);
    const bool next = !view.launchCall(op) ||
                      (previous && *previous == state.last &&
                       !waits.between(view, view.op(view.ops()[state.last]), op));
    const bool piece = (is_small && state.last_small) ||
                       (op.bytes == state.last_bytes && pageable == state.last_pageable);
    if (state.direction != d || !next || !piece) {
      state = Open{d, at, at, op.bytes, time, -1, op.bytes, is_small, pageable};
      continue;
    }
    state.last = at;
    state.last_bytes = op.bytes;
    state.last_small = is_small;
    state.last_pageable = pageable;
    if (state.run < 0) {
      runs.push_back({{state.first}, state.bytes, state.time, d, pageable && !is_small});
      state.run = static_cast<std::int64_t>(runs.size() - 1);
    }
    CopyRun& run = runs[static_cast<std::size_t>(state.run)];
    run.positions.push_back(at);
    run.bytes += op.bytes;
    run.time += time;
  }
  std::sort(runs.begin(), runs.end(),
            [](const CopyRun& a, const CopyRun& b) { return a.positions.front() < b.positions.front(); });
  return runs;
}

// Large pageable uploads: at least this many bytes, so that a call's time is mostly its staging
// (a pageable call's fixed part is a few µs; 512 KiB stages in about 50 µs on the lab's hosts,
// 8-11 GB/s).
constexpr std::uint64_t kStagingRateMinBytes = 512 << 10;

// The rate at which a host copies pageable bytes into the driver's staging buffer where the trace
// has no large staged upload to measure it (uploadStagingRate), in bytes per ns: 11 GB/s, the
// median of the traces' own rates on the lab's H100 hosts (8.8-11.8 GB/s by corpus; a merged
// 692 KiB upload of g005004 staged in 62.6 µs, 11.1 GB/s; g005007's 2.7 MiB in 258-278 µs,
// 10.1-10.8). Without it a run of small pageable uploads merged into one upload that staged
// nothing: g005007's 32 pieces of 85 KiB, three times, claimed 1221 µs for 684 saved.
constexpr double kStagingRateWithoutTrace = 11.0;

// The rate at which the host staged pageable uploads: the median, over the trace's large pageable
// uploads whose calls returned once staged (HostBarrier::staged: the DMA followed), of their
// bytes over their call's own time (HostBarrier::own, less what it waited for before it staged);
// 0 without one. The median, not the bytes over the summed time: a call held by another thread's
// staging or the driver's cold path takes several times its bytes' time (the old recording of
// g000359: 560 KiB uploads staged at 6-9 GB/s, one at 0.3).
double uploadStagingRate(const DeviceView& view, const std::map<std::size_t, const HostBarrier*>& barrier_of_call) {
  std::vector<double> rates;
  for (const ScopedOp& scoped : view.ops()) {
    const GpuOp& op = view.op(scoped);
    if (!op.isCopy() || directionOf(op) != 0 || !pageableCopy(op) || op.bytes < kStagingRateMinBytes) continue;
    const auto call = view.launchCall(op);
    const auto barrier = call ? barrier_of_call.find(*call) : barrier_of_call.end();
    if (barrier == barrier_of_call.end() || !barrier->second->staged || barrier->second->own <= 0) continue;
    rates.push_back(static_cast<double>(op.bytes) / static_cast<double>(barrier->second->own));
  }
  if (rates.empty()) return 0.0;
  std::sort(rates.begin(), rates.end());
  return rates[rates.size() / 2];
}

// What one copy of the run's bytes would take: the pieces' summed durations less the fixed cost
// each later piece paid (PinnedRate::latency_ns), i.e. the bytes at the rate the pieces moved them,
// but no slower than the bytes at the pinned rate plus one fixed cost (pinnedDuration): the
// pieces' durations carry each piece's spread above the median fixed cost, which one copy does not
// pay (g000300's 256 pieces of 8 KB give 67 µs, the rate 42; merged, they took 41.6).
// Not at that rate alone: the rate of the trace's copies of 1 MiB or more has their fixed cost in it
// (an H100's 1 MiB HtoD copies move 48 GB/s, its 16 MiB ones 55) and priced a merged 16 MiB
// upload 15% slow, 50 µs per run of pieces.
Ns mergedDuration(const CopyRun& run, const PinnedRate& rate) {
  const Ns pieces = std::max<Ns>(0, run.time - static_cast<Ns>(run.positions.size() - 1) * rate.latency_ns);
  if (rate.bytes_per_ns <= 0) return pieces;
  return std::min(pieces, pinnedDuration(rate, run.bytes));
}

// The host time a thread's loop spent between two pieces' calls besides the calls: the median,
// over the run's later pieces, of the time from the previous piece's call's return to the piece's
// call. A piece preceded by more (the thread's own work on that piece, a preemption) keeps the
// rest, which one copy of them all would not save. A loop that issues a transfer in pieces runs
// little code between two calls, less than a call takes (the lab's loops: 0.5-2 µs beside calls
// of 3-5 µs); a thread whose typical time between two pieces is longer does work of its own there
// (JAX's per-step argument uploads, a step apart): none of it is the loop's, 0. Large pageable
// pieces (CopyRun::staged): their calls are mostly staging; the reference is the thread's kernel
// launch calls instead (a thread that launches none: 0).
Ns loopOverhead(const DeviceView& view, const CopyRun& run) {
  std::vector<Ns> gaps;
  std::vector<Ns> calls;
  std::optional<std::size_t> before;
  for (const std::size_t position : run.positions) {
    const auto launch = view.launchCall(view.op(view.ops()[position]));
    if (before && launch) {
      gaps.push_back(std::max<Ns>(0, view.call(*launch).start - view.call(*before).end));
      calls.push_back(view.call(*launch).end - view.call(*launch).start);
    }
    before = launch;
  }
  if (gaps.empty()) return 0;
  if (run.staged) {
    // A staged piece's call is mostly its staging, bytes-long: the driver's own work per call is
    // what the thread's kernel launches take (none: no reference, and no loop time).
    calls.clear();
    const auto first = view.launchCall(view.op(view.ops()[run.positions.front()]));
    if (!first) return 0;
    const std::uint64_t thread = threadKey(view.call(*first));
    for (const std::size_t c : view.calls()) {
      if (view.callKind(c) == ApiKind::kLaunch && threadKey(view.call(c)) == thread) {
        calls.push_back(view.call(c).end - view.call(c).start);
      }
    }
    if (calls.empty()) return 0;
  }
  const Ns gap = medianOf(std::move(gaps));
  return gap <= medianOf(std::move(calls)) ? gap : 0;
}

}  // namespace

std::optional<Finding> findManySmallCopies(const DeviceView& view) {
  const PinnedRate rates[2] = {pinnedRate(view, Engine::kH2D), pinnedRate(view, Engine::kD2H)};
  const std::vector<CopyRun> runs = smallCopyRuns(view, rates);
  if (runs.empty()) return std::nullopt;
  FindingBuilder builder(view, "many-small-copies", Severity::kWarning);
  std::vector<FasterOp> faster;
  std::vector<CallChange> changed;
  std::vector<HostTimeGiven> piece_host;  // the later pieces' host time (their calls and the host work before each)
  const ScopedOps ops = view.ops();
  const HostTimeline& host = buildHostTimeline(view);
  std::map<std::size_t, const HostBarrier*> barrier_of_call;  // calls that block their thread (sync or pageable copies)
  for (const HostBarrier& barrier : host.barriers) barrier_of_call.emplace(barrier.call, &barrier);
  // Without a large staged upload in the trace, small pageable uploads merged still stage every
  // byte, at the rate the lab's hosts staged theirs (kStagingRateWithoutTrace).
  const double traced_rate = uploadStagingRate(view, barrier_of_call);
  const double staging_rate = traced_rate > 0 ? traced_rate : kStagingRateWithoutTrace;
  std::vector<std::size_t> removed_calls;  // the later pieces' launch calls
  std::vector<LegacyOp> legacy_pieces;     // those of them on the legacy stream (legacy_threads.h)
  std::vector<std::size_t> async_pieces;   // those of them that did not block their thread
  std::size_t copies = 0;
  for (const CopyRun& run : runs) {
    copies += run.positions.size();
    Ns merged = mergedDuration(run, rates[run.direction]);
    const Ns loop = loopOverhead(view, run);
    // stagedOwn: large pageable pieces. One copy of them all still stages every byte on the host,
    // at the rate the pieces' calls staged theirs (each call's own time, HostBarrier::own); what
    // goes is each later piece's call, its wait there for the previous piece's DMA to leave the
    // staging buffer, and the loop's code before it: the driver pipelines one copy's chunks, its
    // DMA running while the next chunk stages. An upload whose pieces' calls returned once staged
    // (each piece's DMA after its call): the merged op begins as the first piece's did, once its
    // first chunk is staged, and ends as the last chunk's DMA does, so it lasts the later pieces'
    // staging and one piece's DMA; the thread stages the later pieces' bytes in place of their
    // calls (in the second piece's, as the first piece's op begins), returning before that last
    // DMA as the pieces' calls did. Otherwise (a copy that waited for its own
    // op, a download, or a cudaMemcpy) the first call stages every piece's bytes and its op moves
    // them at the rate the pieces did.
    const auto first_call = view.launchCall(view.op(ops[run.positions.front()]));
    const auto first_barrier = first_call ? barrier_of_call.find(*first_call) : barrier_of_call.end();
    // Small pageable uploads that returned once staged (their DMA after their call) merge into
    // one large pageable upload, whose call still stages every byte before it returns: at the
    // rate the trace's large staged uploads staged theirs (uploadStagingRate), no longer than each
    // piece's call took; what goes is each later call's fixed part. Not downloads or pieces whose
    // call waited for their op: such a call's time is its op's DMA and the copy out of the staging
    // buffer together, which the trace does not split, and the merged op already moves the bytes.
    const bool small_staged = !run.staged && staging_rate > 0 && first_barrier != barrier_of_call.end() &&
                              first_barrier->second->staged;
    const bool stage_all = (run.staged && first_barrier != barrier_of_call.end()) || small_staged;
    const bool staged_upload = stage_all && first_barrier->second->staged;
    Ns later_staging = 0;
    for (std::size_t k = 1; stage_all && k < run.positions.size(); ++k) {
      const GpuOp& piece = view.op(ops[run.positions[k]]);
      const auto launch = view.launchCall(piece);
      const auto barrier = launch ? barrier_of_call.find(*launch) : barrier_of_call.end();
      if (barrier == barrier_of_call.end()) continue;
      later_staging += run.staged ? barrier->second->own
                                  : std::min<Ns>(barrier->second->own,
                                                 static_cast<Ns>(static_cast<double>(piece.bytes) / staging_rate));
    }
    if (staged_upload) {
      // Less the staging that its stream's earlier work hid: the first piece's op waited that
      // long after its call returned (a kernel before it on the stream), and one call of them all
      // stages on meanwhile, its op moving only the bytes once the stream frees (g005004: eight
      // 85 KiB pieces behind a 48 µs kernel; merged, the 692 KiB call staged beside it and its op
      // took 15.5 µs; as the staging and one piece's DMA, the claim fell from 1371 to 656 µs for
      // 1339 saved). No shorter than the bytes at the pinned rate (mergedDuration).
      const ScopedOp first_op = ops[run.positions.front()];
      const Ns hold = std::max<Ns>(0, first_op.start - view.call(*first_call).end);
      merged = std::max(mergedDuration(run, rates[run.direction]),
                        first_op.end - first_op.start + std::max<Ns>(0, later_staging - hold));
    } else if (stage_all) {
      merged = run.time;
      changed.push_back({*first_call, true, first_barrier->second->own + later_staging});
    }
    std::optional<std::size_t> previous_launch;
    for (std::size_t k = 0; k < run.positions.size(); ++k) {
      const ScopedOp scoped = ops[run.positions[k]];
      faster.push_back({run.positions[k], k == 0 ? merged : 0});
      builder.addRegion(Interval{scoped.start, scoped.end});
      const auto launch = view.launchCall(view.op(scoped));
      const auto before = previous_launch;
      previous_launch = launch;
      if (k == 0 || !launch) continue;
      // The host work that issued the piece since the previous piece's call returned (the loop
      // around the calls, at most its typical time) goes with it.
      const Ns issued_from =
          view.call(*launch).start -
          (before ? std::clamp<Ns>(view.call(*launch).start - view.call(*before).end, 0, loop) : 0);
      removed_calls.push_back(*launch);
      if (view.onLegacyDefaultStream(view.op(scoped))) {
        const RuntimeCall& c = view.call(*launch);
        legacy_pieces.push_back({run.positions[k], threadKey(c), c.start,
                                 view.callKind(*launch) == ApiKind::kMemcpySync});
      }
      if (const auto barrier = barrier_of_call.find(*launch); barrier != barrier_of_call.end()) {
        // A staged piece's call did not sleep (it copied into the staging buffer): the host code
        // between it and the previous piece's call is the loop's (at most its typical time), which
        // one copy of them all does not run either.
        const Ns loop_before = run.staged && stage_all ? view.call(*launch).start - issued_from : 0;
        if (staged_upload && k == 1) {
          changed.push_back({*launch, false, later_staging, loop_before});
        } else {
          changed.push_back({*launch, false, 0, loop_before});
        }
      } else {
        piece_host.push_back({*launch, view.call(*launch).end - issued_from});
        async_pieces.push_back(*launch);
      }
    }
    const GpuOp& first = view.op(ops[run.positions.front()]);
    builder.add(run.time, evidenceForOp(view, first,
                                     fmt::format("{} {} copies in a row on this stream, {} bytes "
                                                 "in all, took {}",
                                                 run.positions.size(),
                                                 run.direction == 0 ? "HtoD" : "DtoH", run.bytes,
                                                 units::formatDuration(run.time))));
  }
  std::sort(faster.begin(), faster.end(),
            [](const FasterOp& a, const FasterOp& b) { return a.position < b.position; });
  // Merging leaves every op on its stream: the legacy stream's implicit barriers stay, in both
  // schedules, but only for the copies the fixed program still issues (a run's later copies are
  // gone with their barriers).
  const std::vector<OrderEdge> waits = waitEdges(streamWaits(view));
  std::vector<OrderEdge> recorded = waits;
  std::vector<OrderEdge> kept = waits;
  std::vector<bool> removed(ops.size(), false);
  for (const CopyRun& run : runs) {
    for (std::size_t k = 1; k < run.positions.size(); ++k) removed[run.positions[k]] = true;
  }
  for (const OrderEdge& e : legacyBarrierEdges(view)) {
    recorded.push_back(e);
    if (!removed[e.from] && !removed[e.to]) kept.push_back(e);
  }
  const ScheduleModel model(view, host, recorded);
  std::vector<HostTimeGiven> given;
  for (const HostTimeGiven& g : piece_host) {
    if (g.amount > 0) given.push_back(g);
  }
  // A later piece on the legacy stream no longer holds other threads' calls (legacy_threads.h).
  std::sort(removed_calls.begin(), removed_calls.end());
  // Any later piece's call no longer holds other threads' launches for its own time (heldByPieces);
  // a call that a legacy-stream piece held gets the larger of the two.
  std::map<std::size_t, Ns> held_in_call;
  for (const HostTimeGiven& held : contendedTime(view, legacy_pieces)) {
    if (!std::binary_search(removed_calls.begin(), removed_calls.end(), held.call)) {
      held_in_call[held.call] = std::max(held_in_call[held.call], held.amount);
    }
  }
  std::sort(async_pieces.begin(), async_pieces.end());
  for (const HostTimeGiven& held : heldByPieces(view, async_pieces, removed_calls, host, changed)) {
    held_in_call[held.call] = std::max(held_in_call[held.call], held.amount);
  }
  for (const auto& [call, amount] : held_in_call) given.push_back({call, amount, /*in_call=*/true});
  std::vector<Ns> earlier = hostTimeGivenBack(view, given, host);
  // A later piece's op is gone with its call: it holds its stream no longer than the call's start
  // (released after a blocking call, its recorded lag after it would still hold the stream: a
  // staged piece whose op began a µs before its call returned follows the previous piece's call,
  // its whole staging later).
  for (const CopyRun& run : runs) {
    if (!run.staged) continue;
    for (std::size_t k = 1; k < run.positions.size(); ++k) {
      const std::size_t p = run.positions[k];
      const auto launch = view.launchCall(view.op(ops[p]));
      if (!launch || host.barrier_of.empty() || host.barrier_of[p] < 0) continue;
      earlier[p] = std::max<Ns>(earlier[p], ops[p].start - view.call(*launch).start);
    }
  }
  barriersGivenBack(view, given, host, changed);
  const Ns saving = savingLessReplayError(view, model, recorded, kept, earlier, faster, changed);
  const Ns reduction = std::clamp<Ns>(ledgerIdeal(view) - ledgerIdeal(view, faster), 0, saving);
  builder.estimateSaving(saving - reduction);
  builder.lowerIdeal(reduction);
  if (saving < kMinimumClaimNs) return std::nullopt;
  return builder.build(
      fmt::format("{} copies in {} runs on their streams, pieces of larger transfers: each paid a "
                  "copy's fixed cost and a call",
                  copies, runs.size()),
      "Gather the pieces into one buffer and copy it with one cudaMemcpyAsync (or one "
      "cudaMemcpy2DAsync for strided pieces); copy once per batch, not per element or row");
}

}  // namespace cuoverlap::diagnosis
