#include "diagnosis/rules/legacy_threads.h"

#include <algorithm>
#include <map>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "cuoverlap/intervals.h"
#include "diagnosis/median.h"
#include "diagnosis/pinned_rate.h"
#include "diagnosis/schedule_turns.h"

namespace cuoverlap::diagnosis {

std::vector<LegacyOp> legacyOps(const DeviceView& view) {
  std::vector<LegacyOp> out;
  const auto& ops = view.ops();
  for (std::size_t pos = 0; pos < ops.size(); ++pos) {
    if (!view.onLegacyDefaultStreamAt(pos)) continue;
    const auto call = view.launchCall(view.op(ops[pos]));
    if (!call) continue;
    const RuntimeCall& c = view.call(*call);
    const ApiKind kind = view.callKind(*call);
    out.push_back({pos, threadKey(c), c.start,
                   kind == ApiKind::kMemcpySync || kind == ApiKind::kMemsetSync});
  }
  return out;
}

OtherThreadCalls::OtherThreadCalls(std::vector<Call> calls) : calls_(std::move(calls)) {
  std::sort(calls_.begin(), calls_.end(), [](const Call& a, const Call& b) { return a.start < b.start; });
  LatestOfTwoThreads latest;
  latest_.reserve(calls_.size());
  for (const Call& c : calls_) {
    latest.add(c.thread, c.end);
    latest_.push_back(latest);
  }
}

bool OtherThreadCalls::overlap(Ns start, Ns end, std::uint64_t thread) const {
  const auto began = std::lower_bound(calls_.begin(), calls_.end(), end,
                                      [](const Call& c, Ns t) { return c.start < t; }) - calls_.begin();
  return began > 0 && latest_[static_cast<std::size_t>(began - 1)].otherThan(thread) > start;
}

// The part of each asynchronous call that waited for another thread: a call that overlaps another
// thread's call on the legacy stream (one that blocks there: cudaMemcpy, cudaMemset, a copy from
// or to pageable memory; or an asynchronous launch there) took longer than calls of its kind that
// overlapped none (their median; the shortest of them where all overlapped one) by that much. The
// driver holds the context while a blocking call waits on the legacy stream, and other threads'
// launches wait for it, to the legacy stream and to any other (in the lab, a cudaLaunchKernel
// waited 2.7 ms behind another thread's cudaMemcpy; g000083's launches to a non-blocking stream
// ended within 70 us of the other thread's cudaMemcpy, 570 and 730 us after they began); with a
// stream per thread the blocking call waits only for its own copy. A launch to the legacy stream
// holds it too while it orders the op after every blocking stream of the context: two threads
// launching side by side, one of them to the legacy stream, took about 25 us a call instead of
// 2.5 (g000360), and with each thread on a created stream of its own they no longer wait. The
// time is given back in the call itself: it returns sooner, and so releases its own op sooner.
std::vector<HostTimeGiven> contendedTime(const DeviceView& view, const std::vector<LegacyOp>& legacy,
                                         bool legacy_beside_any) {
  const std::vector<std::size_t> pageable = pageableCopyCalls(view);
  std::vector<OtherThreadCalls::Call> holders;
  struct Candidate {
    std::size_t call = 0;
    std::uint64_t thread = 0;
    bool on_legacy = false;  // its op runs on the legacy stream
  };
  std::vector<Candidate> candidates;
  std::vector<OtherThreadCalls::Call> launches;  // other streams' asynchronous launch calls
  std::vector<bool> on_legacy(view.ops().size(), false);
  for (const LegacyOp& x : legacy) {
    on_legacy[x.position] = true;
    const auto call = view.launchCall(view.op(view.ops()[x.position]));
    if (!call) continue;
    holders.push_back({view.call(*call).start, view.call(*call).end, x.thread});
    if (!x.synchronous && !std::binary_search(pageable.begin(), pageable.end(), *call)) {
      candidates.push_back({*call, x.thread, true});
    }
  }
  // The driver holds the context for a call on the legacy stream: other threads' launches to any
  // stream wait.
  std::size_t position = 0;
  for (const ScopedOp& scoped : view.ops()) {
    if (on_legacy[position++]) continue;
    const auto call = view.launchCall(view.op(scoped));
    if (!call || std::binary_search(pageable.begin(), pageable.end(), *call)) continue;
    const ApiKind kind = view.callKind(*call);
    if (kind == ApiKind::kMemcpySync || kind == ApiKind::kMemsetSync) continue;
    const RuntimeCall& c = view.call(*call);
    candidates.push_back({*call, threadKey(c), false});
    if (legacy_beside_any) launches.push_back({c.start, c.end, threadKey(c)});
  }
  if (holders.empty() || candidates.empty()) return {};
  const OtherThreadCalls others(std::move(holders));
  const OtherThreadCalls beside(std::move(launches));
  const auto contended = [&](const Candidate& x) {
    const RuntimeCall& c = view.call(x.call);
    return others.overlap(c.start, c.end, x.thread) ||
           (x.on_legacy && !beside.empty() && beside.overlap(c.start, c.end, x.thread));
  };
  std::map<ApiKind, std::vector<Ns>> alone;  // durations of calls that overlapped no holder
  std::vector<std::size_t> waited;
  for (const Candidate& x : candidates) {
    if (contended(x)) {
      waited.push_back(x.call);
    } else {
      alone[view.callKind(x.call)].push_back(view.call(x.call).end - view.call(x.call).start);
    }
  }
  // Where every call of a kind overlapped one, the shortest of them waited the least.
  std::map<ApiKind, Ns> shortest;
  for (const std::size_t call : waited) {
    const Ns duration = view.call(call).end - view.call(call).start;
    const auto [it, added] = shortest.emplace(view.callKind(call), duration);
    if (!added) it->second = std::min(it->second, duration);
  }
  std::map<ApiKind, Ns> typical;
  for (auto& [kind, durations] : alone) typical[kind] = medianOf(std::move(durations));
  std::vector<HostTimeGiven> given;
  for (const std::size_t call : waited) {
    const ApiKind kind = view.callKind(call);
    const auto it = typical.find(kind);
    const Ns own = it != typical.end() ? it->second : shortest[kind];
    const Ns excess = view.call(call).end - view.call(call).start - own;
    if (excess > 0) given.push_back({call, excess, /*in_call=*/true});
  }
  return given;
}

// A call to the legacy stream that another thread's cudaMemcpy there held in the driver: it began
// while the copy's call was in progress and returned at most kHeldReturnNs after the copy's call
// returned, having taken longer than the calls of its kind that overlapped no other thread's
// legacy call (contendedTime: `excess`). In nonblocking-streams the copy and the held call stay
// on the legacy stream: the call still returns as the copy returns, so where the fix's schedule
// has the copy return sooner, it returns sooner too (lab g000315: a worker's 4 KB
// cudaMemcpyAsync there took 1051 us and returned 20 us after the main thread's 6 MB cudaMemcpy,
// which waited in the legacy queue for the worker's kernel that the barrier held behind the main
// thread's 657 us kernel on a blocking stream; the worker's next step waited for that call).
// Calls to the created streams, non-blocking in the fix, are held there for a turn beside a
// legacy call, not until it returns (nonblockingSaving's turns). kHeldReturnNs: of the lab
// corpus's asynchronous calls of 50 us or more begun inside another thread's legacy cudaMemcpy
// and returned after it (one kept run each), 262 of 266 to other streams returned within 70 us
// of it, and 17 of 41 to the legacy stream, the other 24 of those 100 us or more later (held by
// something else). Any bound from 50 us to 1 ms scores the same; 40 us or less leaves
// g000315's holds out.
constexpr Ns kHeldReturnNs = 70'000;

std::vector<HeldByCopy> heldByLegacyCopies(const DeviceView& view, const std::vector<LegacyOp>& legacy) {
  std::vector<std::size_t> copies;  // by return
  std::unordered_map<std::size_t, std::size_t> position_of;  // asynchronous launch call -> position
  for (const LegacyOp& x : legacy) {
    const auto call = view.launchCall(view.op(view.ops()[x.position]));
    if (!call) continue;
    if (!x.synchronous) {
      position_of.emplace(*call, x.position);
    } else if (view.callKind(*call) == ApiKind::kMemcpySync) {
      copies.push_back(*call);
    }
  }
  if (copies.empty() || position_of.empty()) return {};
  std::sort(copies.begin(), copies.end(),
            [&](std::size_t a, std::size_t b) { return view.call(a).end < view.call(b).end; });
  std::vector<HeldByCopy> held;
  for (const HostTimeGiven& g : contendedTime(view, legacy)) {
    const auto position = position_of.find(g.call);
    if (position == position_of.end()) continue;
    const RuntimeCall& c = view.call(g.call);
    // The copy whose return it followed: the latest to return at most kHeldReturnNs before it.
    auto it = std::upper_bound(copies.begin(), copies.end(), c.end,
                               [&](Ns t, std::size_t k) { return t < view.call(k).end; });
    while (it != copies.begin()) {
      const RuntimeCall& copy = view.call(*--it);
      if (c.end - copy.end > kHeldReturnNs) break;
      if (threadKey(copy) == threadKey(c) || copy.start > c.start || copy.end <= c.start) continue;
      held.push_back({g.call, *it, position->second, c.end <= view.ops()[position->second].start, g.amount});
      break;
    }
  }
  return held;
}

namespace {

// The core of contendedBarriers and stagedCallsBehind: each staged call (a blocking call that
// waited for nothing the schedule knows, or a staged copy waiting for its stream's previous one:
// HostBarrier::staged) among `candidate` that overlapped a call of `holder` made
// by another thread, and took longer than its thread's staged calls of its kind that overlapped
// none (their median; the shortest of them where all did), shortened to that typical time.
std::vector<CallChange> shortenContended(const DeviceView& view, const HostTimeline& host,
                                         const std::vector<bool>& holder,
                                         const std::vector<bool>& candidate) {
  struct Call {
    std::size_t barrier = 0;
    Ns start = 0;
    Ns end = 0;
    std::uint64_t thread = 0;
  };
  const auto callOf = [&](std::size_t b) {
    const RuntimeCall& c = view.call(host.barriers[b].call);
    return Call{b, c.start, c.end, threadKey(c)};
  };
  std::vector<OtherThreadCalls::Call> holding;
  for (std::size_t b = 0; b < host.barriers.size(); ++b) {
    if (!holder[b]) continue;
    const Call c = callOf(b);
    holding.push_back({c.start, c.end, c.thread});
  }
  const OtherThreadCalls holders(std::move(holding));
  std::map<std::pair<std::uint64_t, ApiKind>, std::vector<Ns>> alone, contended;
  std::vector<std::pair<Call, bool>> staged;  // calls that waited for nothing known
  for (std::size_t b = 0; b < host.barriers.size(); ++b) {
    if (!candidate[b] || !(host.barriers[b].waited_for.empty() || host.barriers[b].staged)) continue;
    const Call c = callOf(b);
    const bool overlapped = holders.overlap(c.start, c.end, c.thread);
    const auto key = std::make_pair(c.thread, view.callKind(host.barriers[b].call));
    (overlapped ? contended : alone)[key].push_back(c.end - c.start);
    staged.emplace_back(c, overlapped);
  }
  std::vector<CallChange> changes;
  for (const auto& [c, overlapped] : staged) {
    if (!overlapped) continue;
    const HostBarrier& barrier = host.barriers[c.barrier];
    const auto key = std::make_pair(c.thread, view.callKind(barrier.call));
    Ns typical = 0;
    if (auto it = alone.find(key); it != alone.end()) {
      auto& durations = it->second;
      const auto middle = durations.begin() + static_cast<std::ptrdiff_t>(durations.size() / 2);
      std::nth_element(durations.begin(), middle, durations.end());
      typical = *middle;
    } else {
      typical = *std::min_element(contended[key].begin(), contended[key].end());
    }
    // A staged call's time is compared whole (from its start): the change drops what it waited
    // for in its stream (the previous staged copy, which took turns with the other thread's).
    const Ns whole = barrier.staged ? c.end - c.start : barrier.own;
    if (whole > typical) changes.push_back({barrier.call, !barrier.staged, typical, 0});
  }
  return changes;
}

}  // namespace

// Blocking calls that returned before their op ended (a copy from pageable memory: staged, then
// the DMA) and so waited for nothing the schedule knows: one that overlapped another thread's
// blocking copy or memset on the legacy stream or a blocking stream took longer than its
// thread's calls of its kind that overlapped none (their median; the shortest of them where all
// did). The legacy barrier made them take turns (in the lab, two threads' pageable copies took
// 27 us each instead of 5 and 10); with the thread's work on a stream of its own the call keeps
// only its own time: the change shortens it by the excess.
std::vector<CallChange> contendedBarriers(const DeviceView& view, const HostTimeline& host) {
  std::unordered_map<std::size_t, const GpuOp*> op_of_call;
  for (const ScopedOp& scoped : view.ops()) {
    if (const auto call = view.launchCall(view.op(scoped))) op_of_call.emplace(*call, &view.op(scoped));
  }
  std::vector<bool> tied(host.barriers.size(), false);
  for (std::size_t b = 0; b < host.barriers.size(); ++b) {
    const auto it = op_of_call.find(host.barriers[b].call);
    if (it == op_of_call.end()) continue;
    const Stream* stream = view.stream(*it->second);
    tied[b] = view.onLegacyDefaultStream(*it->second) || (stream && stream->flag == StreamFlag::kDefault);
  }
  return shortenContended(view, host, tied, tied);
}

// Staged calls of any stream behind another thread's `held` calls: see legacy_threads.h.
std::vector<CallChange> stagedCallsBehind(const DeviceView& view, const HostTimeline& host,
                                          const std::vector<std::size_t>& held) {
  std::vector<bool> holder(host.barriers.size(), false);
  for (std::size_t b = 0; b < host.barriers.size(); ++b) {
    holder[b] = std::binary_search(held.begin(), held.end(), host.barriers[b].call);
  }
  return shortenContended(view, host, holder, std::vector<bool>(host.barriers.size(), true));
}

namespace {

using HoldsByThread = std::map<std::uint64_t, std::vector<StagedHold>>;

// Each thread's holds in start order (disjoint: a thread makes one call at a time). A staged call
// that another thread's held first holds from when that one returned: pinning frees the time it
// waited from the other's hold, not from its own (its released_from moves there).
HoldsByThread holdsByThread(const std::vector<StagedHold>& holds) {
  HoldsByThread by_thread;
  for (const StagedHold& h : holds) by_thread[h.thread].push_back(h);
  for (auto& [thread, list] : by_thread) {
    std::sort(list.begin(), list.end(), [](const StagedHold& a, const StagedHold& b) { return a.start < b.start; });
  }
  for (auto& [thread, list] : by_thread) {
    for (StagedHold& h : list) {
      for (const auto& [other, others] : by_thread) {
        if (other == thread) continue;
        auto g = std::partition_point(others.begin(), others.end(), [&](const StagedHold& x) { return x.end <= h.start; });
        if (g != others.end() && g->start <= h.start && g->end <= h.end) {
          h.released_from = std::max(h.released_from, g->end);
        }
      }
    }
  }
  return by_thread;
}

// A call that only submits work to the device and returns.
bool submitsOnly(ApiKind kind) {
  return kind == ApiKind::kLaunch || kind == ApiKind::kMemcpyAsync || kind == ApiKind::kMemsetAsync ||
         kind == ApiKind::kStreamWaitEvent;
}

}  // namespace

Ns typicalTime(const std::vector<Ns>* alone, const std::vector<Ns>& contended) {
  if (alone == nullptr || alone->empty()) return *std::min_element(contended.begin(), contended.end());
  return medianOf(*alone);
}

// A copy from or to pageable memory holds a lock of the driver while it stages: other threads'
// calls that need it (a cudaMallocHost or cudaMalloc, an event record, a launch) wait until it
// returns, and where one thread copies back to back they wait for its whole run (in the lab,
// g000260's cudaMallocHost of 36 KiB took 4.8 ms beside two threads' pageable copies; g000357's
// cudaEventRecord 8.1 ms beside another thread's four 10.4 MiB cudaMemcpy calls). Pinned, those
// calls hold it only for what they still do: an asynchronous copy returns at once, a cudaMemcpy
// still waits for its copy, at the pinned rate (StagedHold::released_from). A held call gets back
// the time the other threads' holds covered with what pinning takes away, but keeps at least the
// time its thread's calls of its kind took where no hold overlapped them (their median; the
// shortest of them where all were overlapped, or for a call that only submits work the other
// threads' such calls where none was): a cudaMallocHost pins its pages meanwhile. A
// synchronous copy or memset is left alone: it waits for its own op, which the schedule orders
// behind the device work it waited for.
// Each thread's holds are disjoint and sorted, so a call looks at O(threads + holds it overlaps).
HeldTime timeHeldByStaging(const DeviceView& view, const HostTimeline& host,
                           const std::vector<StagedHold>& holds, const std::vector<std::size_t>& staged) {
  const HoldsByThread by_thread = holdsByThread(holds);
  std::unordered_map<std::size_t, std::size_t> barrier_of;  // call -> its barrier in `host`
  for (std::size_t b = 0; b < host.barriers.size(); ++b) barrier_of.emplace(host.barriers[b].call, b);
  struct Held {
    std::size_t call = 0;
    std::pair<std::uint64_t, ApiKind> key;  // (thread, kind)
    Ns own = 0;     // the part of the call not spent waiting for device work
    Ns amount = 0;  // of it, what the holds covered and pinning takes away
  };
  std::vector<Held> candidates;
  std::map<std::pair<std::uint64_t, ApiKind>, std::vector<Ns>> alone, contended;
  for (const std::size_t call : view.calls()) {
    const ApiKind kind = view.callKind(call);
    if (kind == ApiKind::kMemcpySync || kind == ApiKind::kMemsetSync) continue;
    if (std::binary_search(staged.begin(), staged.end(), call)) continue;
    const RuntimeCall& c = view.call(call);
    const std::uint64_t thread = threadKey(c);
    const auto barrier = barrier_of.find(call);
    // A blocking call's own time is its last part; before it, it waited for device work.
    const Ns own = barrier != barrier_of.end() ? host.barriers[barrier->second].own : c.end - c.start;
    const Ns from = c.end - own;
    bool overlapped = false;
    bool waited = false;
    // Another thread's staged call that overlapped the call's own part and returned before it did
    // held it, whether it was in progress when the call began or began during it: the driver's
    // lock goes to whichever call takes it next, not to the one that began first. A device free
    // waits for the device to go idle, and a staged call another thread began meanwhile held it
    // (lab g005046: the main thread's 4.1 ms cudaFree returned as the split stream's third staged
    // step began; pinned, it returned 2.2 ms sooner); so did a launch that began 45 µs before
    // another thread's 10 MiB pageable download and returned 56 µs after it (m39 g000206's
    // worker2: 1.06 ms; with such holds given back, c2 g001093's split of s0, which pins its
    // copies, is claimed 1.43 ms for 1.54 measured, 0.18 before). A call that maps
    // or unmaps host pages itself (cudaFreeHost, cudaMallocHost) does that work under the lock
    // once it has it: only a hold already in progress when it began held it (with any, c3's
    // g000239 pin-host goes 120 -> 191 µs for 100).
    const bool maps_pages = locksHostPages(apiBaseName(view.callName(call)));
    std::vector<std::pair<Ns, Ns>> released;  // parts of [from, c.end) the fix takes away
    for (const auto& [other, list] : by_thread) {
      if (other == thread) continue;
      auto h = std::partition_point(list.begin(), list.end(), [&](const StagedHold& x) { return x.end <= from; });
      for (; h != list.end() && h->start < c.end; ++h) {
        overlapped = true;
        waited = waited || (h->end <= c.end && (h->start <= from || !maps_pages));
        const Ns lo = std::max(from, h->released_from);
        if (lo < h->end) released.emplace_back(lo, std::min(h->end, c.end));
      }
    }
    (overlapped ? contended : alone)[{thread, kind}].push_back(own);
    if (!waited || released.empty()) continue;
    std::sort(released.begin(), released.end());
    UnionLength covered;  // every part starts at `from` or later
    for (const auto& [lo, hi] : released) covered.add(lo, hi);
    candidates.push_back({call, {thread, kind}, own, covered.length()});
  }
  // A call that only submits work (a launch, an asynchronous copy or memset, a stream wait) costs
  // its thread about as much as the same call of any thread: where holds overlapped all of its
  // thread's calls of its kind, the other threads' calls of its kind that none overlapped tell
  // what it does by itself (else their such submissions of any kind), never more than its
  // thread's shortest (lab m39 g000357: the main thread's one cudaMemsetAsync of 4 KiB, held 7.0
  // ms behind a worker's four 10.4 MiB pageable cudaMemcpy calls, kept all 7.0 ms as its own,
  // the shortest of its kind on its thread, and pinning was costed 0.22 ms for 3.86 saved).
  // Their medians, taken once: per kind, and over every submitting kind.
  std::map<ApiKind, std::vector<Ns>> submitting_alone;  // per kind, of every thread
  std::vector<Ns> any_submitting_alone;
  for (const auto& [key, times] : alone) {
    if (!submitsOnly(key.second)) continue;
    std::vector<Ns>& of_kind = submitting_alone[key.second];
    of_kind.insert(of_kind.end(), times.begin(), times.end());
    any_submitting_alone.insert(any_submitting_alone.end(), times.begin(), times.end());
  }
  std::map<ApiKind, Ns> submitting_typical;
  for (auto& [kind, times] : submitting_alone) submitting_typical[kind] = medianOf(std::move(times));
  const std::optional<Ns> any_submitting_typical =
      any_submitting_alone.empty() ? std::nullopt : std::optional<Ns>(medianOf(std::move(any_submitting_alone)));
  // Each (thread, kind)'s typical time, taken once (a thread may make many held calls of a kind).
  std::map<std::pair<std::uint64_t, ApiKind>, Ns> typical_of;
  const auto typicalOf = [&](const std::pair<std::uint64_t, ApiKind>& key) {
    const auto [known, added] = typical_of.try_emplace(key, 0);
    if (!added) return known->second;
    const auto it = alone.find(key);
    Ns typical = typicalTime(it != alone.end() ? &it->second : nullptr, contended[key]);
    if (it == alone.end() && submitsOnly(key.second)) {
      const auto of_kind = submitting_typical.find(key.second);
      const std::optional<Ns> others =
          of_kind != submitting_typical.end() ? std::optional<Ns>(of_kind->second) : any_submitting_typical;
      if (others) typical = std::min(typical, *others);
    }
    return known->second = typical;
  };
  HeldTime held;
  for (const Held& x : candidates) {
    const Ns typical = typicalOf(x.key);
    const Ns amount = std::min(x.amount, x.own - typical);
    if (amount <= 0) continue;
    if (barrier_of.count(x.call) != 0) {
      held.changed.push_back({x.call, true, x.own - amount, 0});
    } else {
      held.given.push_back({x.call, amount, /*in_call=*/true});
    }
  }
  return held;
}

namespace {

// The part [begin, end) of a cudaMemcpy (its launch `call`, its op at `position`) that holds other
// threads' calls, given when it returned (`end`), where it began (`begin`) and its copy's run.
std::pair<Ns, Ns> synchronousHold(Ns begin, Ns end, Ns copy) {
  return {std::max(begin, end - (kSynchronousCopyHoldNs + copy)), end};
}

}  // namespace

std::vector<std::pair<std::size_t, Ns>> heldBesideSynchronousCopies(const DeviceView& view) {
  constexpr Ns kPast = 2'000;  // addTurnsBeside's: the holding call lasts past the begin
  std::vector<OtherThreadCalls::Call> holding;
  for (const LegacyOp& x : legacyOps(view)) {
    if (!x.synchronous) continue;
    const ScopedOp& op = view.ops()[x.position];
    const auto call = view.launchCall(view.op(op));
    if (!call || view.callKind(*call) != ApiKind::kMemcpySync) continue;
    const RuntimeCall& c = view.call(*call);
    // As recorded: from its last kSynchronousCopyHoldNs before its copy started to its return.
    const Ns begin = std::max(c.start, op.start - kSynchronousCopyHoldNs);
    if (begin < c.end - kPast) holding.push_back({begin, c.end - kPast, x.thread});
  }
  std::vector<std::pair<std::size_t, Ns>> out;
  if (holding.empty()) return out;
  std::sort(holding.begin(), holding.end(), [](const auto& a, const auto& b) { return a.start < b.start; });
  const OtherThreadCalls holders(std::move(holding));
  for (std::size_t p = 0; p < view.ops().size(); ++p) {
    const GpuOp& op = view.op(view.ops()[p]);
    if (op.src_kind == MemKind::kPageable || op.dst_kind == MemKind::kPageable || view.onLegacyDefaultStreamAt(p)) {
      continue;
    }
    const auto call = view.launchCall(op);
    if (!call || view.callKind(*call) != ApiKind::kMemcpyAsync) continue;
    const RuntimeCall& c = view.call(*call);
    if (holders.overlap(c.start, c.start + 1, threadKey(c))) out.emplace_back(*call, c.end - c.start);
  }
  return out;
}

Ns turnBesideSynchronousCopies(const DeviceView& view) {
  constexpr std::size_t kMinCalls = 8;  // fewer: the trace's own median says little
  std::vector<Ns> took;
  for (const auto& [call, ns] : heldBesideSynchronousCopies(view)) took.push_back(ns);
  if (took.size() < kMinCalls) return kBesideSynchronousCopyNs;
  std::nth_element(took.begin(), took.begin() + static_cast<std::ptrdiff_t>(took.size() / 2), took.end());
  return took[took.size() / 2];
}

std::vector<BusyCall> synchronousCopiesHolding(const DeviceView& view, const ScheduledHost& times,
                                               const std::vector<FasterOp>& faster,
                                               const std::vector<CallChange>& changed) {
  std::unordered_map<std::size_t, Ns> run;
  for (const FasterOp& f : faster) run[f.position] = f.duration;
  std::unordered_set<std::size_t> asynchronous;
  for (const CallChange& c : changed) {
    if (!c.waits) asynchronous.insert(c.call);
  }
  std::vector<BusyCall> busy;
  for (const LegacyOp& x : legacyOps(view)) {
    if (!x.synchronous) continue;
    const ScopedOp& op = view.ops()[x.position];
    const auto call = view.launchCall(view.op(op));
    if (!call || view.callKind(*call) != ApiKind::kMemcpySync || asynchronous.count(*call) != 0) continue;
    const auto t = times.call.find(*call);
    if (t == times.call.end()) continue;
    const auto r = run.find(x.position);
    const auto [begin, end] = synchronousHold(t->second.first, t->second.second,
                                              r != run.end() ? r->second : op.end - op.start);
    busy.push_back({begin, end, x.thread});
  }
  return busy;
}

Ns withTurnsBesideSynchronousCopies(const DeviceView& view, const HostTimeline& host, const ScheduleModel& model,
                                    const HostTurns& turns, const std::vector<OrderEdge>& edges,
                                    const std::vector<std::uint8_t>& candidate, const std::vector<FasterOp>& faster,
                                    std::vector<Ns>& earlier, std::vector<CallChange>& changed,
                                    ScheduledHost& times, Ns after) {
  if (synchronousCopiesHolding(view, times, faster, changed).empty()) return after;
  const Ns turn = turnBesideSynchronousCopies(view);
  const std::vector<Ns> base_earlier = earlier;
  const std::vector<CallChange> base_changed = changed;
  std::vector<std::uint8_t> last;  // the calls left without a turn by the last round
  for (int round = 0; round < kTurnRounds; ++round) {
    std::vector<std::uint8_t> left = candidate;
    std::vector<Ns> more_earlier = base_earlier;
    std::vector<CallChange> more_changed = base_changed;
    const bool any = addTurnsBeside(host, turns, times, synchronousCopiesHolding(view, times, faster, base_changed),
                                    left, more_changed, more_earlier, turn);
    if (round > 0 && left == last) break;
    last = std::move(left);
    earlier = std::move(more_earlier);
    changed = std::move(more_changed);
    after = spanWithTurns(model, turns, edges, earlier, faster, changed, &times);
    if (!any) break;
  }
  return after;
}

std::map<std::size_t, Ns> callsTakingTurns(const DeviceView& view, const std::vector<std::size_t>& calls) {
  std::vector<OtherThreadCalls::Call> holding;
  for (const LegacyOp& x : legacyOps(view)) {
    if (x.synchronous) continue;
    const auto call = view.launchCall(view.op(view.ops()[x.position]));
    if (!call) continue;
    holding.push_back({view.call(*call).start, view.call(*call).end, x.thread});
  }
  std::map<std::size_t, Ns> out;
  if (holding.empty()) return out;
  const OtherThreadCalls holders(std::move(holding));
  for (const std::size_t call : calls) {
    if (view.callKind(call) != ApiKind::kMemcpyAsync) continue;
    const RuntimeCall& c = view.call(call);
    if (!holders.overlap(c.start, c.end, threadKey(c))) continue;
    out[call] = std::clamp<Ns>(c.end - c.start, kAsyncCopyCallNs, kLegacyTurnNs);
  }
  return out;
}

}  // namespace cuoverlap::diagnosis
