// pageable-memcpy: host<->device copies (not host-to-host) from or to pageable host memory (source or destination
// memory kind "pageable"). The driver stages them through a pinned buffer: they run at reduced
// bandwidth and are synchronous to the host even when issued with cudaMemcpyAsync, so the thread
// that issued them cannot run ahead and feed the device.
// Cost: what pinning them would save, from the what-if schedule (schedule_estimate.h, event waits
// kept): the span as recorded minus the span with
//   - each pageable copy at the pinned rate of its direction plus a pinned copy's fixed cost
//     (pinned_rate.h: pinnedDuration), also where that is longer than it took: a small staged
//     upload's DMA from the driver's staging buffer took less than a pinned copy's fixed cost
//     (lab H100: 4 KiB 1.06 us staged, 2.33 pinned in g000028; 11.6 KiB 1.2 against 2.6-3.5 in
//     g000013);
//   - each copy starting as its pinned call returns (a few µs after it began), instead of after
//     the host staged its first bytes (the schedule as recorded keeps an upload's start where that
//     staging, not its stream, set it: stagingPacedUploads), a DtoH copy no sooner than the op
//     its thread launched before it ended (what it reads: the legacy stream's barrier or the host
//     ordered them in the trace);
//   - each asynchronous pageable copy call returning after the few µs an asynchronous pinned copy
//     call takes (a thread's first one its recorded time up to kFirstCopyCallNs; a small upload
//     its recorded time less the host's staging of its bytes: pinnedSmallUploadCall) instead of
//     waiting for its copy (a synchronous cudaMemcpy still waits, for the
//     faster copy, but without staging after a DtoH: sync-memcpy costs the rest; one that
//     returned once staged, before its DMA, now waits for its copy); host threads
//     modelled with their blocking calls
//     (host_timeline.h), so a thread that synchronizes runs ahead when the device finishes
//     sooner;
//   - a legacy-stream cudaMemset or cudaMemcpy that other threads' staged calls held in the driver
//     (heldBehindStaging) no longer held: the schedule as recorded keeps that hold.
//   - a copy call that waited out another thread's page-locking call (cudaMallocHost,
//     cudaFreeHost, ...) still waits for it (keepPinningHolds): the driver holds every thread's
//     calls while it maps pinned pages, whatever their memory.
// Of that saving S, R = min(S, ledger ideal - ledger ideal with the faster copies) is the part that
// lowers the ideal itself (Finding::ideal_reduction_ns, added outside the ledger's cap); S - R is
// charged through the ledger, where (region) the copies ran and the device idled inside their
// calls. The overlap that more streams would add on top is single-stream's or low-overlap's.
// Needs: memory kinds (exports without srcKind/dstKind do not fire); for the faster copies, large
// pinned copies in the trace or the PCIe link our collector records; launch calls for the host
// part.
#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <unordered_map>

#include <fmt/format.h>

#include "cuoverlap/intervals.h"
#include "diagnosis/api_names.h"
#include "diagnosis/cost_ledger.h"
#include "diagnosis/finding_builder.h"
#include "diagnosis/host_time_given.h"
#include "diagnosis/kernels_alone.h"
#include "diagnosis/legacy_barriers.h"
#include "diagnosis/overlap_index.h"
#include "diagnosis/pinned_rate.h"
#include "diagnosis/rules/legacy_threads.h"
#include "diagnosis/rules/pinned_chunks.h"
#include "diagnosis/rules/rules.h"
#include "diagnosis/rules/staging_holds.h"
#include "diagnosis/schedule_turns.h"
#include "diagnosis/thread_launches.h"

namespace cuoverlap::diagnosis {
namespace {

// A host-to-host copy (JAX's 8-byte HtoH copies) never crosses PCIe: no staging to save.
bool pageable(const GpuOp& op) {
  return op.kind == OpKind::kMemcpy && op.copy_kind != CopyKind::kHtoH &&
         (op.src_kind == MemKind::kPageable || op.dst_kind == MemKind::kPageable);
}

// The launch calls of the pageable copies on a stream other than the legacy default stream.
std::vector<std::size_t> pageableAsyncToCreated(const DeviceView& view) {
  std::vector<std::size_t> out;
  for (const std::uint32_t pos : view.pageableCopyPositions()) {
    if (view.onLegacyDefaultStreamAt(pos)) continue;
    const GpuOp& op = view.op(view.ops()[pos]);
    if (!pageable(op)) continue;
    if (const auto launch = view.launchCall(op)) out.push_back(*launch);
  }
  return out;
}

int slotOf(Engine engine) { return engine == Engine::kH2D ? 0 : engine == Engine::kD2H ? 1 : -1; }

struct PageableCopies {
  std::uint64_t bytes[2] = {0, 0};  // [0] HtoD, [1] DtoH
  Ns time[2] = {0, 0};
  std::uint64_t count[2] = {0, 0};
  PinnedRate rate[2];
  std::vector<FasterOp> faster;
  std::vector<std::size_t> calls;  // their launch calls (indices into Trace::runtime_calls)
  std::map<std::size_t, std::size_t> position_of_call;  // launch call -> its copy's position
  std::vector<std::size_t> downloads;  // positions of the DtoH copies
  // Per position: how long after its call began the copy started, beyond an asynchronous call's
  // time: the host staging the first bytes, which a pinned copy does not wait for.
  std::vector<Ns> staging_lead;
  std::vector<StagedHold> holds;  // their calls, as they held other threads' calls
  std::map<std::size_t, Ns> turn_of_call;  // async calls that take turns with another thread's
  std::map<std::size_t, Ns> pinned_call;   // async calls: how long each would take pinned
  std::set<std::size_t> first_async;       // each thread's first cudaMemcpyAsync call
  std::set<std::size_t> passed;            // legacy async copy calls another thread's call got past
  std::vector<Ns> previous_end;            // per position: when its stream's previous op ended
};

// A thread's first cudaMemcpyAsync of the trace takes about 20 us whatever its memory (the driver's
// cold path for the call, paid once): in the lab's H100 pinned runs (the fixed programs' own
// traces, pin-host) the first such call of the 28 single-thread programs took 8.7-36.6 us, median
// 19.8 (g000013 17.1, g000072 17.3, g000123 32.3, g000218 17.4), where their later calls took 5.6
// (median of medians); 22.5 over all 112 threads; and small pageable first calls took as long
// (g000013 14.6, g000218 14.7). Pinning takes the staging out of that call, not its first-call
// cost: pinned, it keeps its recorded time up to this (at least kAsyncCopyCallNs).
constexpr Ns kFirstCopyCallNs = 20'000;

std::set<std::size_t> firstAsyncCopyCalls(const DeviceView& view) {
  std::set<std::uint64_t> seen;
  std::set<std::size_t> out;
  for (const std::size_t call : view.calls()) {
    if (view.callKind(call) != ApiKind::kMemcpyAsync) continue;
    if (seen.insert(threadKey(view.call(call))).second) out.insert(call);
  }
  return out;
}

// How long a download's call (or its stream's previous op, where that ended later) may take to
// start its DMA and still count as the driver's own startup, which pinning keeps: a DtoH copy
// stages nothing ahead of its DMA (the host copies the data out of the staging buffer after it),
// so a pinned download starts as late after its call as a pageable one. In the lab's H100 runs
// (the fixed programs' own traces, pin-host against the baseline, downloads whose device was
// idle as their call began) the DMA started 7.8 us (median; 7.2-9.6 quartiles) into a pinned
// small cudaMemcpy against 8.5 pageable, 8.1 into a pinned small cudaMemcpyAsync against 11.0
// pageable, 15.0 (11.8-20.6) into a pinned small cudaMemcpy beside other threads' calls; and
// 5.1 us after the kernel it waited for, pinned, against 4.8 staged (g000051). The what-if had
// released it 5 us into its call (kAsyncCopyCallNs, as an upload's, whose first bytes the host
// stages first) or at once after that kernel: pinning a small download followed by a
// synchronize was claimed 6-13 us a copy where the pinned runs saved 2-8 (g000051 91 us claimed
// against 34 saved, g000218 26 against 2). A startup longer than this was another thread's
// staged call holding the download (g000206: 0.2-1.2 ms): pinning still frees that.
constexpr Ns kDownloadStartupNs = 20'000;

// One turn on the legacy stream: kLegacyTurnNs (schedule_turns.h), measured on this rule's pinned
// runs.

// The pageable asynchronous copy calls to the legacy default stream that another thread's call
// (one that issues device work) got past: it began more than one turn (kLegacyTurnNs) into the
// call and returned before it. Such a call was waiting for its own turn, not holding the others:
// which thread's legacy-stream call gets through is the driver's arbitration (blocking-sync-call's
// lab25-g9 paragraph), and pinned it still waits (g000183's pin-host run: pinned 4-18 KiB calls
// of 0.30-0.74 ms with other threads' calls getting through inside them; g000359's up to 1.9 ms). Pinning gives back
// nothing of what such a call held.
std::set<std::size_t> passedLegacyCopyCalls(const DeviceView& view) {
  std::vector<std::size_t> legacy;
  for (const std::uint32_t pos : view.pageableCopyPositions()) {
    if (!view.onLegacyDefaultStreamAt(pos)) continue;
    const GpuOp& op = view.op(view.ops()[pos]);
    if (!pageable(op)) continue;
    const auto launch = view.launchCall(op);
    if (launch && view.callKind(*launch) == ApiKind::kMemcpyAsync) legacy.push_back(*launch);
  }
  std::set<std::size_t> out;
  if (legacy.empty()) return out;
  struct Issued {
    Ns start = 0;
    Ns end = 0;
    std::uint64_t thread = 0;
  };
  std::vector<Issued> issued;
  for (const std::size_t call : view.calls()) {
    const ApiKind kind = view.callKind(call);
    if (kind != ApiKind::kLaunch && kind != ApiKind::kMemcpyAsync && kind != ApiKind::kMemcpySync &&
        kind != ApiKind::kMemsetAsync && kind != ApiKind::kMemsetSync) continue;
    const RuntimeCall& c = view.call(call);
    issued.push_back({c.start, c.end, threadKey(c)});
  }
  std::sort(issued.begin(), issued.end(), [](const Issued& a, const Issued& b) { return a.start < b.start; });
  for (const std::size_t call : legacy) {
    const RuntimeCall& c = view.call(call);
    const std::uint64_t thread = threadKey(c);
    auto it = std::upper_bound(issued.begin(), issued.end(), c.start + kLegacyTurnNs,
                               [](Ns t, const Issued& x) { return t < x.start; });
    for (; it != issued.end() && it->start < c.end; ++it) {
      if (it->thread != thread && it->end < c.end) {
        out.insert(call);
        break;
      }
    }
  }
  return out;
}

// The legacy stream's synchronous copies and memsets (not pageable themselves) that other threads'
// staged copies held in the driver: a staged call of another thread was in progress when the call
// began, every such call had returned before its op started (it waited them out), pinning shortens
// at least one of them (StagedHold::released_from), and the legacy barrier did not order the op after
// a holding copy itself (then it waited for that copy, which it still does pinned). Such a call
// submits its op only as it gets through, behind work other threads issued meanwhile: in g000190
// (non-blocking streams, so no barrier) a cudaMemset began while two threads staged 3.4 MiB
// uploads and ran 2.9 ms later, after the next staged calls of those threads had returned too;
// pinned, the same memsets' calls took 0.1 ms. For each, the held op's position and the staged
// copies (positions) whose calls were in progress while it waited and that ended before it began.
std::vector<std::pair<std::size_t, std::vector<std::size_t>>> heldBehindStaging(
    const DeviceView& view, const PageableCopies& copies, const std::vector<OrderEdge>& order) {
  std::map<std::uint64_t, std::vector<StagedHold>> by_thread;  // disjoint, in start order
  for (const StagedHold& h : copies.holds) by_thread[h.thread].push_back(h);
  for (auto& [thread, list] : by_thread) {
    std::sort(list.begin(), list.end(), [](const StagedHold& a, const StagedHold& b) { return a.start < b.start; });
  }
  std::map<std::pair<std::uint64_t, Ns>, std::size_t> position_of_hold;  // (thread, call start)
  struct CopyCall {
    Ns start = 0;
    Ns end = 0;
    std::uint64_t thread = 0;
    std::size_t position = 0;
  };
  std::vector<CopyCall> copy_calls;
  for (const auto& [call, position] : copies.position_of_call) {
    const RuntimeCall& c = view.call(call);
    position_of_hold[{threadKey(c), c.start}] = position;
    copy_calls.push_back({c.start, c.end, threadKey(c), position});
  }
  const OverlapIndex<CopyCall> copy_calls_at(copy_calls);
  std::set<std::pair<std::size_t, std::size_t>> ordered;  // (from, to) of `order`
  for (const OrderEdge& e : order) ordered.emplace(e.from, e.to);
  std::vector<std::pair<std::size_t, std::vector<std::size_t>>> out;
  for (std::size_t pos = 0; pos < view.ops().size(); ++pos) {
    if (!view.onLegacyDefaultStreamAt(pos)) continue;
    const ScopedOp& x = view.ops()[pos];
    const auto call = view.launchCall(view.op(x));
    if (!call || copies.position_of_call.count(*call) != 0) continue;
    const ApiKind kind = view.callKind(*call);
    if (kind != ApiKind::kMemcpySync && kind != ApiKind::kMemsetSync) continue;
    const RuntimeCall& c = view.call(*call);
    const std::uint64_t thread = threadKey(c);
    bool covered = false;
    bool shortened = false;  // a hold that pinning ends sooner
    bool outlived = false;   // a hold still in progress when the op began: it did not wait for it
    bool own_copy = false;   // the barrier ordered it after a holding copy itself
    for (const auto& [other, list] : by_thread) {
      if (other == thread) continue;
      auto h = std::partition_point(list.begin(), list.end(), [&](const StagedHold& y) { return y.start <= c.start; });
      if (h == list.begin()) continue;
      --h;
      if (c.start >= h->end) continue;
      covered = true;
      shortened = shortened || h->released_from < h->end;
      outlived = outlived || h->end > x.start;
      const auto held_by = position_of_hold.find({h->thread, h->start});
      own_copy = own_copy || (held_by != position_of_hold.end() && ordered.count({held_by->second, pos}) != 0);
    }
    if (!covered || !shortened || outlived || own_copy) continue;
    // The other threads' copy calls in progress in [c.start, x.start) whose ops ended before x began,
    // by call start.
    std::vector<std::pair<Ns, std::size_t>> held_by;
    copy_calls_at.forEachOverlapping(c.start, x.start, [&](const CopyCall& q) {
      if (q.thread != thread && view.ops()[q.position].end <= x.start) held_by.emplace_back(q.start, q.position);
    });
    std::sort(held_by.begin(), held_by.end());
    std::vector<std::size_t> holders;
    for (const auto& [start, position] : held_by) holders.push_back(position);
    out.emplace_back(pos, std::move(holders));
  }
  return out;
}

void addCopy(const DeviceView& view, std::size_t position, const ScopedOp& scoped,
             PageableCopies& copies) {
  const GpuOp& op = view.op(scoped);
  const int d = slotOf(engineOf(op));
  const Ns duration = scoped.end - scoped.start;
  const Ns pinned = d < 0 ? 0 : pinnedDuration(copies.rate[d], op.bytes);
  const Ns after_fix = pinned > 0 ? pinned : duration;
  if (const auto launch = view.launchCall(op)) {
    copies.calls.push_back(*launch);
    copies.position_of_call[*launch] = position;
    const RuntimeCall& call = view.call(*launch);
    // Pinned, an asynchronous copy call returns at once, but one to the legacy default stream
    // still takes its turn with other threads' calls there (legacy_threads.cpp, contendedTime),
    // and holds them that long, not for the staged call it was: in the pin-host runs of the
    // lab's `threads` programs (/work/vtraces14) such calls of over 64 KiB took 15-24 µs
    // (medians: g000021 24.1, g000304 21.7, g000308 24.1, g000359 23.1, g000045 21.6, g000108
    // 15.4) against 250-970 µs staged; a cudaMemcpy still waits for its copy.
    const bool async = view.callKind(*launch) == ApiKind::kMemcpyAsync;
    const auto turn = copies.turn_of_call.find(*launch);
    const Ns alone = copies.first_async.count(*launch) != 0
                         ? std::clamp<Ns>(call.end - call.start, kAsyncCopyCallNs, kFirstCopyCallNs)
                         : pinnedCopyCall(async, d == 0, call.end - call.start, op.bytes);
    const Ns async_call = turn != copies.turn_of_call.end() ? turn->second : alone;
    // A pinned asynchronous copy is submitted as its call returns: in the lab's H100 pin-host runs
    // (/work/vtraces14) the first cudaMemcpyAsync of the 25 single-thread programs (14-37 µs, the
    // cold path) started its DMA a median 0.5 µs after the call returned (g000072: call 17.3 µs,
    // DMA 19.2 µs into it), the later ones (3.8 µs) 2.0 µs after, and the `threads` programs'
    // pinned calls of over 15 µs (turns) 0.15 µs before. So an upload is released as its pinned
    // call returns (a download keeps its startup, below).
    const Ns lead = scoped.start - call.start - (async ? async_call : kAsyncCopyCallNs);
    // A download stages nothing ahead of its DMA (the host copies out of the staging buffer
    // after it): the time from its call, or from its stream's previous op, to its DMA is the
    // driver's startup, pinned or not; only a longer one was another thread's call holding it.
    const Ns after = std::max(call.start, copies.previous_end[position]);
    copies.staging_lead[position] =
        d == 1 ? std::max<Ns>(0, scoped.start - after - kDownloadStartupNs) : std::max<Ns>(0, lead);
    copies.pinned_call[*launch] = async_call;
    const Ns released_from = async && view.onLegacyDefaultStream(op)
                                 ? (copies.passed.count(*launch) != 0
                                        ? call.end
                                        : call.start + std::clamp<Ns>(call.end - call.start, kAsyncCopyCallNs, kLegacyTurnNs))
                             : async ? call.start + async_call
                                     : std::max(call.start, scoped.start) + after_fix;
    copies.holds.push_back({call.start, call.end, released_from,
                            threadKey(call)});
  }
  if (d < 0) return;
  if (d == 1) copies.downloads.push_back(position);
  copies.bytes[d] += op.bytes;
  copies.time[d] += duration;
  ++copies.count[d];
  if (after_fix != duration) copies.faster.push_back({position, after_fix});
}

// A copy call begun less than this before another thread's page-locking call was held by it as if
// begun during it: in the lab's H100 traces (the fixed programs' own traces /work/vt37 and the
// committed corpora), copy calls of another thread begun 0-2 us before a cudaMallocHost or
// cudaFreeHost of 150 us or more returned after it 34 of 37 and 27 of 33 times, those begun 2-4 us
// before 1 of 6 and 4 of 9, 4-20 us before 1 of 24 and 0 of 20 (g003095's main thread: a
// pageable cudaMemcpy begun 0.9 us before the worker's 6.5 MB cudaMallocHost waited 3.2 ms for
// it, pageable and pinned).
constexpr Ns kPinningRaceNs = 2'000;

// Pinning takes the staging out of a copy call, not the wait for another thread's page-locking
// call (cudaMallocHost, cudaFreeHost, cudaHostRegister, ...) that was in progress when it began:
// the driver holds every thread's calls while it maps or unmaps pinned pages. In g000071's
// pinned run (the fixed program's own trace, pin-host) a 4.4 MiB cudaMallocHost took 2.22 ms and
// another thread's cudaMemcpy, a third's cudaMemcpyAsync and a fourth's launch, begun during it,
// returned 1.96-2.06 ms later, just after it; as recorded, pageable, the same copies waited for
// it too, and the what-if had given their pinned calls an asynchronous call's few us. A copy call
// that began while another thread's page-locking call was in progress and whose copy started only
// after that call returned (it waited it out) keeps that wait pinned: its call lasts until then
// plus kAsyncCopyCallNs (no longer than it took), its copy starts no sooner. Where that call was
// itself held by staged copies that pinning ends sooner (it began while one was in progress and
// outlived it), it returns that much sooner (the time those holds covered after their pinned
// release), and so does the wait.
void keepPinningHolds(const DeviceView& view, PageableCopies& copies) {
  struct Pinning {
    Ns start = 0;
    Ns recorded_end = 0;
    Ns end = 0;  // pinned
    std::uint64_t thread = 0;
  };
  std::vector<Pinning> pinning;
  for (const std::size_t call : view.calls()) {
    if (view.callKind(call) != ApiKind::kAllocation || !locksHostPages(view.callName(call))) continue;
    const RuntimeCall& c = view.call(call);
    pinning.push_back({c.start, c.end, c.end, threadKey(c)});
  }
  if (pinning.empty()) return;
  const auto by_start = [](const auto& x, const auto& y) { return x.start < y.start; };
  std::vector<StagedHold> holds = copies.holds;  // by start; each began at most `longest` before
  std::sort(holds.begin(), holds.end(), by_start);
  Ns longest = 0;
  for (const StagedHold& h : holds) longest = std::max(longest, h.end - h.start);
  // Each page-locking call's end, pinned: less what the staged holds it waited out would give back.
  for (Pinning& a : pinning) {
    bool held = false;
    std::vector<std::pair<Ns, Ns>> released;
    const auto last = std::partition_point(holds.begin(), holds.end(), [&](const StagedHold& h) { return h.start <= a.start; });
    const auto first = std::partition_point(holds.begin(), last, [&](const StagedHold& h) { return h.start < a.start - longest; });
    for (auto it = first; it != last; ++it) {
      const StagedHold& h = *it;
      // Only the staged calls in progress as it began held it; those begun meanwhile ran beside
      // it (g000071: three threads' copies went on for 1.7 ms into a 4.3 ms cudaMallocHost) or
      // waited for it.
      if (h.thread == a.thread || h.end <= a.start || h.end > a.end) continue;
      held = true;
      const Ns lo = std::max(a.start, h.released_from);
      const Ns hi = std::min(h.end, a.end);
      if (lo < hi) released.emplace_back(lo, hi);
    }
    if (!held || released.empty()) continue;
    std::sort(released.begin(), released.end());
    UnionLength covered;
    for (const auto& [lo, hi] : released) covered.add(lo, hi);
    a.end -= covered.length();
  }
  std::sort(pinning.begin(), pinning.end(), by_start);
  Ns longest_pinning = 0;
  for (const Pinning& a : pinning) longest_pinning = std::max(longest_pinning, a.recorded_end - a.start);
  std::map<std::pair<std::uint64_t, Ns>, std::size_t> hold_of;  // (thread, call start) -> index
  for (std::size_t i = 0; i < copies.holds.size(); ++i) hold_of[{copies.holds[i].thread, copies.holds[i].start}] = i;
  for (const auto& [call, position] : copies.position_of_call) {
    const RuntimeCall& c = view.call(call);
    const ScopedOp& x = view.ops()[position];
    const std::uint64_t thread = threadKey(c);
    Ns until = 0;  // the latest pinned end of a page-locking call it waited out
    // A page-locking call begun just after the copy call still took the driver first (the call had
    // not reached its submission): kPinningRaceNs.
    const auto last = std::partition_point(pinning.begin(), pinning.end(),
                                           [&](const Pinning& a) { return a.start < c.start + kPinningRaceNs; });
    const auto first = std::partition_point(pinning.begin(), last, [&](const Pinning& a) { return a.start < c.start - longest_pinning; });
    for (auto it = first; it != last; ++it) {
      const Pinning& a = *it;
      if (a.thread == thread || c.start >= a.recorded_end) continue;
      if (x.start < a.recorded_end || c.end < a.recorded_end) continue;  // did not wait it out
      until = std::max(until, a.end);
    }
    if (until <= c.start) continue;
    copies.staging_lead[position] =
        std::min(copies.staging_lead[position], std::max<Ns>(0, x.start - until - kAsyncCopyCallNs));
    // A cudaMemcpy still waits for its copy, which now starts no sooner: only an asynchronous
    // call's own time grows.
    if (view.callKind(call) != ApiKind::kMemcpyAsync) continue;
    const Ns kept = std::min(c.end - c.start, until - c.start + kAsyncCopyCallNs);
    Ns& pinned = copies.pinned_call[call];
    if (kept <= pinned) continue;
    pinned = kept;
    const auto h = hold_of.find({thread, c.start});
    if (h == hold_of.end() || view.onLegacyDefaultStreamAt(position)) continue;
    StagedHold& hold = copies.holds[h->second];
    hold.released_from = std::max(hold.released_from, c.start + kept);
  }
}

// "HtoD at 7.1 GB/s, pinned about 52.3 GB/s (this trace's pinned HtoD copies)"; a direction whose
// copies average under 64 KiB is left out (their time is latency, a rate says nothing).
std::string rates(const PageableCopies& copies) {
  constexpr std::uint64_t kMinMeanBytes = 64 << 10;
  std::string text;
  const char* names[] = {"HtoD", "DtoH"};
  for (int d = 0; d < 2; ++d) {
    if (copies.time[d] <= 0 || copies.bytes[d] < kMinMeanBytes * copies.count[d]) continue;
    text += fmt::format("{}{} at {:.1f} GB/s", text.empty() ? "" : "; ", names[d],
                        static_cast<double>(copies.bytes[d]) / copies.time[d]);
    if (copies.rate[d].bytes_per_ns > 0) {
      text += fmt::format(", pinned about {:.1f} GB/s ({})", copies.rate[d].bytes_per_ns,
                          copies.rate[d].source);
    }
  }
  return text.empty() ? text : " (" + text + ")";
}

// The view's pageable copies (positions, in order) and what pinning does to each.
PageableCopies collectCopies(const DeviceView& view, std::vector<std::size_t>& positions,
                             bool recorded_turns = true) {
  PageableCopies copies;
  for (const std::size_t at : view.pageableCopyPositions()) {
    const ScopedOp scoped = view.ops()[at];
    if (!pageable(view.op(scoped))) continue;
    if (positions.empty()) {  // the first pageable copy: now the rates and per-op state
      copies.staging_lead.assign(view.ops().size(), 0);
      copies.previous_end.assign(view.ops().size(), 0);
      std::unordered_map<std::uint64_t, Ns> stream_end;
      for (std::size_t p = 0; p < view.ops().size(); ++p) {
        const ScopedOp& y = view.ops()[p];
        Ns& end = stream_end[DeviceView::streamKey(view.op(y))];
        copies.previous_end[p] = end;
        end = std::max(end, y.end);
      }
      if (recorded_turns) copies.turn_of_call = callsTakingTurns(view, pageableAsyncToCreated(view));
      copies.first_async = firstAsyncCopyCalls(view);
      copies.passed = passedLegacyCopyCalls(view);
      copies.rate[0] = pinnedRate(view, Engine::kH2D);
      copies.rate[1] = pinnedRate(view, Engine::kD2H);
    }
    positions.push_back(at);
    addCopy(view, at, scoped, copies);
  }
  return copies;
}

// The pageable asynchronous uploads whose start the host's staging set, as edges from their
// stream's previous op with the recorded lag: the driver copies a pageable buffer into its pinned
// staging buffer in pieces and starts the DMA once the first piece is staged, so an upload whose
// call began before its stream's previous op ended, whose DMA began after that op ended and
// before the call returned (still staging), started when its first bytes were staged. In
// g000072 (one thread, 1.2 MiB uploads) the DMA began 64-81 µs into the call and 7-28 µs after
// the kernel before it ended (corpus: 22.7 and 27.6; 30-run replica: 11.0 and 6.7), the call
// returning during the DMA; where the call staged the whole buffer and returned first (g000055:
// 1.4 MiB staged in 104 µs, the DMA 7 µs after its kernel, 382 µs after the call returned) the
// stream set the start. The schedule as recorded released such an upload at its call's start
// plus its start after that op (releaseBlocked), which the op's end overtook: it ran the copy
// 5 µs after the kernel, the recorded program 15.5 µs shorter than the trace, and pinning, which
// starts the copy that soon (the pinned run: 8.7 µs after the kernel), was given nothing for it.
// Only where no other thread's call overlapped the lag: there another thread's staged call may
// have held it (g000239, g000045: pinning frees that part differently, timeHeldByStaging).
std::vector<OrderEdge> stagingPacedUploads(const DeviceView& view, const std::vector<std::size_t>& positions) {
  std::vector<OrderEdge> out;
  std::vector<OtherThreadCalls::Call> calls;
  for (const std::size_t call : view.calls()) {
    const RuntimeCall& c = view.call(call);
    calls.push_back({c.start, c.end, threadKey(c)});
  }
  const OtherThreadCalls others(std::move(calls));
  const std::vector<std::int64_t> previous = previousOnStream(view);
  for (const std::size_t at : positions) {
    const ScopedOp& x = view.ops()[at];
    const GpuOp& op = view.op(x);
    if (engineOf(op) != Engine::kH2D || previous[at] < 0) continue;
    const auto launch = view.launchCall(op);
    if (!launch || view.callKind(*launch) != ApiKind::kMemcpyAsync) continue;
    const RuntimeCall& c = view.call(*launch);
    const std::size_t prev = static_cast<std::size_t>(previous[at]);
    const Ns prev_end = view.ops()[prev].end;
    if (c.start >= prev_end || x.start <= prev_end || c.end <= x.start) continue;
    if (others.overlap(prev_end, x.start, threadKey(c))) continue;
    out.push_back({prev, at, x.start - prev_end});
  }
  return out;
}

std::vector<StagingHold> holdsOf(const DeviceView& view, const PageableCopies& copies,
                                 const std::vector<OrderEdge>& order) {
  std::vector<StagingHold> out;
  for (const auto& [pos, holders] : heldBehindStaging(view, copies, order)) {
    const ScopedOp& x = view.ops()[pos];
    StagingHold hold{pos, {}, x.start};
    for (const std::size_t q : holders) {
      const ScopedOp& y = view.ops()[q];
      const RuntimeCall& cq = view.call(*view.launchCall(view.op(y)));
      hold.edges.push_back({q, pos, std::clamp<Ns>(cq.end - y.end, 0, x.start - y.end)});
    }
    out.push_back(std::move(hold));
  }
  return out;
}

}  // namespace

std::vector<StagingHold> stagingHolds(const DeviceView& view, const std::vector<OrderEdge>& order) {
  // Only a synchronous copy or memset on the legacy stream can be held so: most traces have none.
  bool any = false;
  for (std::size_t pos = 0; pos < view.ops().size() && !any; ++pos) {
    if (!view.onLegacyDefaultStreamAt(pos)) continue;
    const auto call = view.launchCall(view.op(view.ops()[pos]));
    any = call && (view.callKind(*call) == ApiKind::kMemcpySync || view.callKind(*call) == ApiKind::kMemsetSync);
  }
  if (!any) return {};
  std::vector<std::size_t> positions;
  const PageableCopies copies = collectCopies(view, positions);
  if (positions.empty()) return {};
  return holdsOf(view, copies, order);
}

// The pinned program's turns decided in its own schedule (schedule_turns.h) where its barrier
// follows issue order: a pinned asynchronous copy call to a created stream that the schedule
// begins while another thread is issuing pinned asynchronous copies to the legacy stream takes a
// turn (kLegacyTurnNs), and so does a legacy-stream call begun while another thread is issuing
// copies to created streams: the turn is symmetric (the 21st session: 23.7 against 25.9 us;
// g000108's pinned run: ~20 us a call on both threads). A thread issues its copies of one kind
// over one span of the schedule (from its first call's begin to its last's end), and a call begun
// outside every other thread's span of the other kind keeps its own time: once the other thread is
// done, its calls drop to their time alone (g000108's worker, 80 of its 256 calls). Each round
// decides the turns afresh in the previous round's schedule (a pinned call ends as its op is
// released, addCopy: in progress over [release - its time, release)), until they repeat or
// kTurnRounds (g000108 settles by its second: 2 to 20 rounds give the same span). Deciding per
// call instead (the call it begins beside, as addTurnsBeside does) never settled in g000108: its
// turns swung between 120 and 195 a thread from round to round, the span with them between 4.0
// and 5.3 ms.
Ns withTurnsInSchedule(const DeviceView& view, const HostTimeline& host, const ScheduleModel& model,
                       const PageableCopies& copies, const std::vector<std::size_t>& positions,
                       const std::vector<OrderEdge>& edges, std::vector<Ns> earlier,
                       std::vector<CallChange> changed) {
  constexpr Ns kPast = 2'000;  // addTurnsBeside's: the other thread's calls last past the begin
  const std::size_t n = view.ops().size();
  HostTurns turns;
  turns.op_thread.assign(n, 0);
  turns.op_call_start.assign(n, 0);
  turns.op_call_end.assign(n, 0);
  std::vector<std::uint8_t> legacy(n, 0);
  std::vector<std::uint8_t> created(n, 0);
  std::vector<Ns> own(n, 0);
  for (const std::size_t p : positions) {
    const auto call = view.launchCall(view.op(view.ops()[p]));
    if (!call || view.callKind(*call) != ApiKind::kMemcpyAsync) continue;
    turns.op_thread[p] = threadKey(view.call(*call));
    own[p] = copies.pinned_call.at(*call);
    (view.onLegacyDefaultStreamAt(p) ? legacy : created)[p] = 1;
  }
  // The legacy stream's other asynchronous calls (launches, pinned copies) hold the created-stream
  // calls beside them too (callsTakingTurns' holders): over their recorded call, moved with their
  // op's release; they keep their time.
  std::vector<std::pair<std::size_t, std::pair<Ns, Ns>>> legacy_other;  // (position, call)
  for (const LegacyOp& x : legacyOps(view)) {
    if (x.synchronous || legacy[x.position]) continue;
    const auto call = view.launchCall(view.op(view.ops()[x.position]));
    if (!call) continue;
    legacy_other.push_back({x.position, {view.call(*call).start, view.call(*call).end}});
    turns.op_thread[x.position] = x.thread;
  }
  for (const HostBarrier& barrier : host.barriers) turns.call_thread[barrier.call] = threadKey(view.call(barrier.call));
  ScheduledHost times;
  Ns after = spanWithTurns(model, turns, edges, earlier, copies.faster, changed, &times);
  for (std::size_t p = 0; p < n; ++p) {
    if (!legacy[p] && !created[p]) continue;
    turns.op_call_start[p] = times.recorded_release[p] - own[p];  // call order, for addTurnDelays
    turns.op_call_end[p] = times.recorded_release[p];
  }
  if (std::find(created.begin(), created.end(), 1) == created.end()) return after;
  if (legacy_other.empty() && std::find(legacy.begin(), legacy.end(), 1) == legacy.end()) {
    return withTurnsBesideSynchronousCopies(view, host, model, turns, edges, created, copies.faster, earlier,
                                            changed, times, after);
  }
  std::vector<std::uint8_t> turned(n, 0);
  const std::vector<Ns> base_earlier = earlier;
  const std::vector<CallChange> base_changed = changed;
  for (int round = 0; round < kTurnRounds; ++round) {
    const auto took = [&](std::size_t p) { return turned[p] ? std::max(own[p], kLegacyTurnNs) : own[p]; };
    std::map<std::uint64_t, BusyCall> legacy_span;   // per thread
    std::map<std::uint64_t, BusyCall> created_span;  // per thread
    const auto widen = [](std::map<std::uint64_t, BusyCall>& spans, const BusyCall& c) {
      const auto it = spans.try_emplace(c.thread, c).first;
      it->second.begin = std::min(it->second.begin, c.begin);
      it->second.end = std::max(it->second.end, c.end);
    };
    for (std::size_t p = 0; p < n; ++p) {
      if ((!legacy[p] && !created[p]) || times.release[p] == std::numeric_limits<Ns>::min()) continue;
      widen(legacy[p] ? legacy_span : created_span,
            BusyCall{times.release[p] - took(p), times.release[p], turns.op_thread[p]});
    }
    for (const auto& [p, call] : legacy_other) {
      if (times.release[p] == std::numeric_limits<Ns>::min()) continue;
      const Ns moved = times.release[p] - times.recorded_release[p];
      widen(legacy_span, BusyCall{call.first + moved, call.second + moved, turns.op_thread[p]});
    }
    std::vector<std::uint8_t> next(n, 0);
    std::vector<Ns> delay(n, 0);
    for (std::size_t p = 0; p < n; ++p) {
      if ((!legacy[p] && !created[p]) || times.release[p] == std::numeric_limits<Ns>::min()) continue;
      if (own[p] >= kLegacyTurnNs) continue;
      const Ns begins = times.release[p] - took(p);
      for (const auto& [thread, c] : legacy[p] ? created_span : legacy_span) {
        if (thread == turns.op_thread[p] || c.begin > begins || c.end <= begins + kPast) continue;
        next[p] = 1;
        delay[p] = kLegacyTurnNs - own[p];
        break;
      }
    }
    if (next == turned) break;
    turned = std::move(next);
    earlier = base_earlier;
    changed = base_changed;
    addTurnDelays(host, turns, delay, changed, earlier);
    after = spanWithTurns(model, turns, edges, earlier, copies.faster, changed, &times);
  }
  // The created-stream calls that took no turn beside the legacy stream's asynchronous calls take
  // one beside another thread's cudaMemcpy (withTurnsBesideSynchronousCopies).
  std::vector<std::uint8_t> candidate(n, 0);
  for (std::size_t p = 0; p < n; ++p) candidate[p] = created[p] && !turned[p] ? 1 : 0;
  after = withTurnsBesideSynchronousCopies(view, host, model, turns, edges, candidate, copies.faster, earlier,
                                           changed, times, after);
  // Kernels slowed beside other streams' kernels that the fix runs beside none take their alone
  // run (kernels_alone.h, kernelsLeftAlone), as in sync-memcpy's fix. Only where other threads'
  // legacy or created-stream calls take turns with the pinned copies (this schedule's second half):
  // taken in every schedule, 216 bytes of pageable copies in headline_ddp would be priced at
  // 1.5-1.8 ms for freeing NCCL and compute kernels that the copies never held.
  std::vector<FasterOp> faster = kernelsLeftAlone(view, times);
  if (faster.empty()) return after;
  faster.insert(faster.end(), copies.faster.begin(), copies.faster.end());
  return spanWithTurns(model, turns, edges, earlier, faster, changed);
}

std::optional<Finding> findPageableMemcpy(const DeviceView& view) {
  // No pageable copy, no finding: and the barrier classes below cost a pass over every op.
  if (view.pageableCopyPositions().empty()) return std::nullopt;
  FindingBuilder builder(view, "pageable-memcpy", Severity::kWarning);
  std::vector<std::size_t> positions;
  const std::vector<std::int64_t> classes = barrierClasses(view);
  // Pinned, every legacy-stream op of the fixed program may come from a call that returns at once
  // (no cudaMemcpy or cudaMemset to it, no free): its barrier then follows the order the what-if
  // issues the work in (barrierFollowsIssueOrder), as sync-memcpy's fixed program's does, and the
  // turns the threads' calls take are decided in that schedule (withTurnsInSchedule), not from
  // the recorded overlaps (callsTakingTurns).
  const bool issue_order = barrierFollowsIssueOrder(view, classes, std::nullopt, /*pinned=*/true);
  PageableCopies copies = collectCopies(view, positions, !issue_order);
  if (!positions.empty()) keepPinningHolds(view, copies);
  std::uint64_t bytes = 0;
  for (const std::size_t at : positions) {
    const ScopedOp scoped = view.ops()[at];
    const GpuOp& op = view.op(scoped);
    bytes += op.bytes;
    builder.add(Interval{scoped.start, scoped.end},
                evidenceForOp(view, op, describeOp(view, op) + " with pageable host memory"));
    if (const auto launch = view.launchCall(op)) {
      builder.addRegion(Interval{view.call(*launch).start, view.call(*launch).end});
    }
  }
  if (builder.count() == 0) return std::nullopt;
  std::sort(copies.calls.begin(), copies.calls.end());
  // Pinning leaves every op on its stream: the legacy stream's implicit barriers stay, in both
  // schedules (without them a pageable copy's thread, released sooner, let its blocking-stream
  // work overtake legacy-stream work it could never overtake).
  std::vector<OrderEdge> waits = programOrderEdges(view);
  const HostTimeline& host = buildHostTimeline(view);
  // As recorded, an op held behind other threads' staged copies (heldBehindStaging) waited for their
  // calls: it ran after the last of them returned (its copy's end plus what the call did after it)
  // and was submitted as it ran. The schedule as recorded keeps that (edges from those copies, the
  // op issued at its start); without it the held op ran at its call's start plus its startup, as
  // if nothing had held it, and pinning was given nothing for it (g000190: the recorded schedule
  // modelled 1.15 ms short, pinning costed 1.18 ms against 2.67 saved). Pinned, the holds end:
  // the op is released as its call began, as before.
  const std::vector<StagingHold> holds = holdsOf(view, copies, waits);
  const std::vector<OrderEdge> as_recorded = withHoldEdges(waits, holds);
  const ScheduleModel model(view, host, as_recorded);
  // As recorded, an upload still being staged when its DMA began started when the host had staged
  // its first bytes, not when its stream's previous op ended (stagingPacedUploads): the schedule
  // as recorded keeps that lag; pinned, nothing stages and the copy follows that op.
  std::vector<OrderEdge> recorded_edges = as_recorded;
  const std::vector<OrderEdge> paced = stagingPacedUploads(view, positions);
  recorded_edges.insert(recorded_edges.end(), paced.begin(), paced.end());
  std::vector<OrderEdge> unused;
  const ScheduleModel held_model = keepHolds(model, holds, [](const StagingHold&) { return true; }, unused);
  // A DtoH copy reads what its thread launched just before it: started sooner (no staging ahead of
  // it), it still waits for that op, as the legacy stream's barrier or the host made it wait.
  const ThreadLaunches launches(view);
  for (std::size_t download : copies.downloads) {
    if (const auto producer = launches.before(download)) waits.push_back({*producer, download});
  }
  // Pinning unblocks asynchronous copy calls; a cudaMemcpy of pinned memory still waits for its
  // copy (sync-memcpy's to cost), but without staging on the host after a DtoH. It waits for its
  // copy even where the pageable one returned once staged, before its DMA (a small HtoD copy):
  // pinned, such a call takes longer than it did (on the lab's H100 12.7 µs for 4-64 KiB, staged
  // 10.7).
  std::vector<CallChange> changed;
  for (std::size_t call : copies.calls) {
    const bool waits_still = view.callKind(call) != ApiKind::kMemcpyAsync;
    const std::int64_t own_copy =
        waits_still ? static_cast<std::int64_t>(copies.position_of_call.at(call)) : -1;
    const Ns own = copies.pinned_call.at(call);
    changed.push_back({call, waits_still, own, 0, own_copy});
  }
  // Other threads' calls that the staged calls held get back what pinning takes from the holds.
  const HeldTime held = timeHeldByStaging(view, host, copies.holds, copies.calls);
  changed.insert(changed.end(), held.changed.begin(), held.changed.end());
  // The buffers pinned at setup keep the pinned allocator's chunk alive: a loop's pinned
  // allocation and free no longer map and unmap one (pinned_chunks.h).
  std::uint64_t smallest = 0;
  for (const std::size_t at : positions) {
    const std::uint64_t b = view.op(view.ops()[at]).bytes;
    if (b > 0 && (smallest == 0 || b < smallest)) smallest = b;
  }
  addChunkKeptAlive(view, host, smallest, changed);
  barriersGivenBack(view, held.given, host, changed);
  std::vector<Ns> earlier = hostTimeGivenBack(view, held.given, host);
  for (std::size_t p = 0; p < earlier.size(); ++p) earlier[p] += copies.staging_lead[p];
  // Where the barrier follows issue order, each op is issued at its recorded submission, a held
  // call's (one that timeHeldByStaging gives time back) at its call's start less what it is given
  // back, and the saving is measured against the recorded program issued in that order too.
  Ns before = 0;
  Ns after = 0;
  if (issue_order) {
    const BarrierIssue issued = barrierIssueTimes(view);
    const ScheduleModel reference = model.withBarrierIssueOrder(classes, issued);
    std::set<std::size_t> held_calls;
    for (const HostTimeGiven& g : held.given) {
      if (g.amount > 0) held_calls.insert(g.call);
    }
    std::vector<bool> pinned_at(view.ops().size(), false);
    for (std::size_t p = 0; p < view.ops().size(); ++p) {
      const auto call = view.launchCall(view.op(view.ops()[p]));
      pinned_at[p] = call && held_calls.count(*call) != 0;
    }
    const ScheduleModel fixed_model = model.withBarrierIssueOrder(classes, barrierIssueTimes(view, pinned_at),
                                                                  reference.issueReleases(recorded_edges));
    before = reference.span(recorded_edges);
    after = withTurnsInSchedule(view, host, fixed_model, copies, positions, waits, earlier, changed);
  } else {
    before = held_model.span(recorded_edges);
    // Pinned, a copy call to a created stream that the what-if begins while another thread's
    // cudaMemcpy holds the context takes a turn (withTurnsBesideSynchronousCopies): decided in
    // this schedule, its pinned call where the recorded one staged. Every thread's calls there
    // are candidates, the pinned ones as recorded too (pinning moves them beside other calls),
    // each priced afresh: one a recorded cudaMemcpy held (heldBesideSynchronousCopies) gets back
    // its time past an asynchronous call's, and takes its turn where this schedule begins it in a
    // holding part again (what staged calls held them, timeHeldByStaging gives back).
    std::vector<HostTimeGiven> given = held.given;
    std::set<std::size_t> given_calls;
    for (const HostTimeGiven& g : held.given) given_calls.insert(g.call);
    for (const auto& [call, took] : heldBesideSynchronousCopies(view)) {
      if (took > kAsyncCopyCallNs && given_calls.count(call) == 0) {
        given.push_back({call, took - kAsyncCopyCallNs, /*in_call=*/true});
      }
    }
    if (given.size() != held.given.size()) {
      earlier = hostTimeGivenBack(view, given, host);
      for (std::size_t p = 0; p < earlier.size(); ++p) earlier[p] += copies.staging_lead[p];
    }
    HostTurns turns;
    recordLaunchCalls(view, given, turns);
    for (const HostBarrier& barrier : host.barriers) {
      turns.call_thread[barrier.call] = threadKey(view.call(barrier.call));
    }
    ScheduledHost times;
    after = spanWithTurns(model, turns, waits, earlier, copies.faster, changed, &times);
    std::vector<std::uint8_t> candidate(view.ops().size(), 0);
    for (std::size_t p = 0; p < view.ops().size(); ++p) {
      const auto call = view.launchCall(view.op(view.ops()[p]));
      if (!call || view.callKind(*call) != ApiKind::kMemcpyAsync || view.onLegacyDefaultStreamAt(p)) continue;
      candidate[p] = 1;
      const auto pinned = copies.pinned_call.find(*call);
      if (pinned == copies.pinned_call.end()) continue;
      turns.op_call_start[p] = times.recorded_release[p] - pinned->second;  // its pinned call
      turns.op_call_end[p] = times.recorded_release[p];
    }
    after = withTurnsBesideSynchronousCopies(view, host, model, turns, waits, candidate, copies.faster, earlier,
                                             changed, times, after);
  }
  const Ns saving = std::max<Ns>(0, before - after);
  const Ns lower_ideal = copies.faster.empty() ? 0 : ledgerIdeal(view) - ledgerIdeal(view, copies.faster);
  const Ns reduction = std::clamp<Ns>(lower_ideal, 0, saving);
  builder.estimateSaving(saving - reduction);
  builder.lowerIdeal(reduction);
  const bool known = copies.rate[0].bytes_per_ns > 0 || copies.rate[1].bytes_per_ns > 0;
  return builder.build(
      fmt::format("{} copies ({} bytes) used pageable host memory: staged by the driver and "
                  "synchronous to the host{}{}",
                  builder.count(), bytes, rates(copies),
                  known ? "" : "; no pinned rate known (no large pinned copy in the trace, no "
                               "recorded PCIe link), so the cost leaves out the copies getting faster"),
      "Allocate the host buffers with cudaMallocHost/cudaHostAlloc, or pin existing ones with "
      "cudaHostRegister, then copy with cudaMemcpyAsync on a created stream");
}

}  // namespace cuoverlap::diagnosis
