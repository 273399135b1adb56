#include "diagnosis/rules/single_stream_threads.h"

#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "cuoverlap/intervals.h"
#include "diagnosis/api_names.h"
#include "diagnosis/host_time_given.h"
#include "diagnosis/legacy_barriers.h"
#include "diagnosis/median.h"
#include "diagnosis/overlap_index.h"
#include "diagnosis/pinned_rate.h"
#include "diagnosis/rules/legacy_threads.h"

namespace cuoverlap::diagnosis {
namespace {

// The thread that launched the op at `pos` (pid << 32 | tid), nullopt without a launch call. Asked
// per op, not kept per op: most traces share no stream between threads, and 16 bytes an op was
// 160 MB at 10^7 ops.
std::optional<std::uint64_t> launchingThread(const DeviceView& view, std::size_t pos) {
  const auto call = view.launchCall(view.op(view.ops()[pos]));
  return call ? std::optional<std::uint64_t>(threadKey(view.call(*call))) : std::nullopt;
}

// A key for one thread's work on a shared stream: unlike any (context, stream) key in use (their
// high half is a context id) and the split's lanes (just below 2^64).
std::uint64_t threadWorkKey(std::uint64_t stream, std::uint64_t thread) {
  return (stream ^ (thread * 0x9e3779b97f4a7c15ULL)) | (std::uint64_t{1} << 62);
}

// The ops of other threads' blocking copies and memsets (an op that started before its call
// returned) whose start the split stream's staging held (`holds`: each staged copy from its op's
// start to its call's return): the driver stages one pageable copy at a time, so another thread's
// pageable copy waited to start, after what it waited for on its stream had ended, until the
// staging was done. The part of that wait (from its call's start or its stream's previous op's
// end, the later, to its start) that the holds of other threads covered is given back to its
// release (`earlier`, resized to the view's ops): in the split those copies no longer stage.
// Where the copy's call is a blocking call of `host` whose own time held that wait (a pageable
// upload returns once staged, before its copy ends: it waited for nothing on its stream), the call
// returns as much sooner (a change in `calls`, keeping at least the part from its copy's start).
// O(ops x holds each overlaps).
void startsHeldByStaging(const DeviceView& view, const HostTimeline& host, const std::vector<StagedHold>& holds,
                         std::vector<Ns>& earlier, std::vector<CallChange>& calls) {
  if (holds.empty()) return;
  std::unordered_map<std::size_t, std::size_t> barrier_of;  // call -> its barrier in `host`
  for (std::size_t b = 0; b < host.barriers.size(); ++b) barrier_of.emplace(host.barriers[b].call, b);
  const OverlapIndex<StagedHold> index(holds);
  std::unordered_map<std::uint64_t, Ns> stream_end;  // per stream: its previous op's end
  const auto& ops = view.ops();
  for (std::size_t pos = 0; pos < ops.size(); ++pos) {
    const GpuOp& op = view.op(ops[pos]);
    const std::uint64_t stream = DeviceView::streamKey(op);
    Ns& stream_last = stream_end[stream];  // 0 before its first op
    const Ns previous_end = stream_last;
    stream_last = std::max(stream_last, ops[pos].end);
    if (op.kind != OpKind::kMemcpy && op.kind != OpKind::kMemset) continue;
    const auto launch = view.launchCall(op);
    if (!launch) continue;
    const RuntimeCall& call = view.call(*launch);
    if (call.end <= ops[pos].start) continue;  // returned before its op began: not held by staging
    const Ns from = std::max(call.start, previous_end);
    const Ns to = ops[pos].start;
    if (to <= from) continue;
    const std::uint64_t thread = threadKey(call);
    const Ns covered = coveredLength(index, from, to, [&](const StagedHold& h) { return h.thread != thread; });
    if (covered == 0) continue;
    earlier.resize(ops.size(), 0);
    earlier[pos] += covered;
    // Its call's own time (after what it waited for on the device) held that wait too: the call
    // returns that much sooner, keeping at least its copy's part.
    const auto barrier = barrier_of.find(*launch);
    if (barrier == barrier_of.end()) continue;
    const Ns own = host.barriers[barrier->second].own;
    const Ns kept = std::max(own - covered, call.end - ops[pos].start);
    if (kept < own) calls.push_back({*launch, true, kept, 0});
  }
}

// The part of an op inside a loop's extent: 0 for one outside it.
Ns timeWithin(const ScopedOp& op, Interval extent) {
  return std::max<Ns>(0, std::min(op.end, extent.end) - std::max(op.start, extent.start));
}

}  // namespace

std::optional<std::vector<std::uint64_t>> threadsOwnWork(const DeviceView& view,
                                                         const std::vector<std::uint64_t>& keys) {
  // Per legacy stream key: the one thread issuing to it so far, or several.
  std::unordered_map<std::uint64_t, std::optional<std::uint64_t>> issuer;
  std::unordered_map<std::uint64_t, bool> shared;
  for (std::size_t pos = 0; pos < keys.size(); ++pos) {
    if (!view.onLegacyDefaultStreamAt(pos)) continue;
    if (keys[pos] != DeviceView::streamKey(view.op(view.ops()[pos]))) continue;
    const auto thread = launchingThread(view, pos);
    if (!thread) continue;
    const auto [it, inserted] = issuer.try_emplace(keys[pos], thread);
    if (!inserted && it->second != thread) shared[keys[pos]] = true;
  }
  if (shared.empty()) return std::nullopt;
  // Only threads that each synchronize on their own are independent loops; a thread that never
  // waits (PyTorch's autograd thread) is driven by another and hands its work over in order: one
  // loop with the driving thread's (as legacy-default-stream counts them).
  std::unordered_set<std::uint64_t> synchronizing;
  for (std::size_t call : view.calls()) {
    if (isExplicitSync(view.callKind(call))) synchronizing.insert(threadKey(view.call(call)));
  }
  // A copy to host memory whose call returned only once its op had ended (cudaMemcpy to the host,
  // or cudaMemcpyAsync to pageable memory) waited for its stream's earlier work, as a synchronize
  // does: its thread waits for its own work too. (A copy from pageable memory returns once its
  // data is staged, whatever the device still runs: no such wait.)
  for (const ScopedOp& scoped : view.ops()) {
    const GpuOp& op = view.op(scoped);
    if (op.kind != OpKind::kMemcpy || engineOf(op) != Engine::kD2H) continue;
    const auto launch = view.launchCall(op);
    if (launch && view.call(*launch).end >= scoped.end) synchronizing.insert(threadKey(view.call(*launch)));
  }
  std::vector<std::optional<std::uint64_t>> thread(keys.size());
  for (std::size_t pos = 0; pos < keys.size(); ++pos) {
    if (shared.count(keys[pos]) == 0) continue;
    thread[pos] = launchingThread(view, pos);
    if (thread[pos] && synchronizing.count(*thread[pos]) == 0) {
      shared.erase(keys[pos]);  // a thread of the stream hands its work over: keep it whole
    }
  }
  if (shared.empty()) return std::nullopt;
  std::vector<std::uint64_t> own = keys;
  for (std::size_t pos = 0; pos < own.size(); ++pos) {
    if (thread[pos] && shared.count(own[pos]) != 0) own[pos] = threadWorkKey(own[pos], *thread[pos]);
  }
  return own;
}

std::unordered_map<std::uint64_t, std::uint64_t> streamOfWork(const std::vector<std::uint64_t>& keys,
                                                              const std::vector<std::uint64_t>& stream_keys) {
  std::unordered_map<std::uint64_t, std::uint64_t> ran_on;
  for (std::size_t pos = 0; pos < keys.size(); ++pos) ran_on.emplace(keys[pos], stream_keys[pos]);
  return ran_on;
}

std::optional<std::uint32_t> workThread(const DeviceView& view, const std::vector<std::uint64_t>& keys,
                                        const std::unordered_map<std::uint64_t, std::uint64_t>& ran_on,
                                        std::uint64_t work) {
  const auto stream = ran_on.find(work);
  if (stream == ran_on.end() || stream->second == work) return std::nullopt;
  for (std::size_t pos = 0; pos < keys.size(); ++pos) {
    if (keys[pos] != work) continue;
    if (const auto call = view.launchCall(view.op(view.ops()[pos]))) return view.call(*call).tid;
  }
  return std::nullopt;
}

void mergeShorter(const std::vector<CallChange>& shorter, std::vector<CallChange>& changed) {
  if (shorter.empty()) return;
  std::unordered_map<std::size_t, std::size_t> index;  // call -> its change in `changed`
  for (std::size_t k = 0; k < changed.size(); ++k) index.emplace(changed[k].call, k);
  for (const CallChange& c : shorter) {
    const auto [it, added] = index.emplace(c.call, changed.size());
    if (added) {
      changed.push_back(c);
    } else if (changed[it->second].waits == c.waits) {
      changed[it->second].own = std::min(changed[it->second].own, c.own);
    }
  }
}

void heldBySplitCopies(const DeviceView& view, const HostTimeline& host,
                       const std::unordered_set<std::size_t>& pinned_calls,
                       std::vector<CallChange>& changed, std::vector<Ns>& earlier,
                       std::vector<HostTimeGiven>* given_out, std::vector<CallChange>* held_calls_out) {
  if (pinned_calls.empty()) return;
  std::vector<std::size_t> staged(pinned_calls.begin(), pinned_calls.end());
  std::sort(staged.begin(), staged.end());
  std::vector<StagedHold> holds;
  for (std::size_t call : staged) {
    const RuntimeCall& c = view.call(call);
    holds.push_back({c.start, c.end, std::min(c.end, c.start + kAsyncCopyCallNs), threadKey(c)});
  }
  const HeldTime held = timeHeldByStaging(view, host, holds, staged);
  // The staging itself: from the staged copy's start to its call's return (before its op began,
  // the call may have waited for another thread's staging itself).
  std::vector<StagedHold> staging;
  for (std::size_t pos = 0; pos < view.ops().size(); ++pos) {
    const auto launch = view.launchCall(view.op(view.ops()[pos]));
    if (!launch || pinned_calls.count(*launch) == 0) continue;
    const RuntimeCall& c = view.call(*launch);
    const Ns start = std::max(c.start, view.ops()[pos].start);
    if (start < c.end) staging.push_back({start, c.end, start, threadKey(c)});
  }
  std::vector<CallChange> held_calls;
  startsHeldByStaging(view, host, staging, earlier, held_calls);
  if (held_calls_out != nullptr) {
    held_calls_out->insert(held_calls_out->end(), held_calls.begin(), held_calls.end());
  } else {
    mergeShorter(held_calls, changed);
  }
  if (held.changed.empty() && held.given.empty()) return;
  for (const CallChange& change : held.changed) {
    const auto same = std::find_if(changed.begin(), changed.end(),
                                   [&](const CallChange& c) { return c.call == change.call; });
    if (same == changed.end()) changed.push_back(change);
  }
  if (given_out) {
    given_out->insert(given_out->end(), held.given.begin(), held.given.end());
    return;
  }
  barriersGivenBack(view, held.given, host, changed);
  const std::vector<Ns> given = hostTimeGivenBack(view, held.given, host);
  if (given.empty()) return;
  earlier.resize(view.ops().size(), 0);
  for (std::size_t p = 0; p < given.size() && p < earlier.size(); ++p) earlier[p] += given[p];
}

namespace {

// The staging of the pageable copies of threads other than `moving` (`pageable`:
// pageableCopyCalls'): the part of a staged copy's call the host spends copying through the
// driver's pinned buffer, which holds other threads' calls: an HtoD copy's from its call's start
// to its op's end (the host stages, then the op drains the buffer), a DtoH copy's from its op's
// start to its call's return (the op fills the buffer, the host copies it out). Before that a DtoH
// copy's call waits for its stream's earlier work. Kept by start with the latest end over each
// prefix, so that a call asks one binary search (a call per own call of the split thread).
class Staging {
 public:
  Staging(const DeviceView& view, const std::vector<std::size_t>& pageable,
          const std::unordered_set<std::uint64_t>& moving) {
    for (std::size_t pos = 0; pos < view.ops().size(); ++pos) {
      const GpuOp& op = view.op(view.ops()[pos]);
      const auto call = view.launchCall(op);
      if (!call || !std::binary_search(pageable.begin(), pageable.end(), *call)) continue;
      const RuntimeCall& c = view.call(*call);
      if (moving.count(threadKey(c)) != 0) continue;
      const Interval host = engineOf(op) == Engine::kH2D ? Interval{c.start, view.ops()[pos].end}
                                                         : Interval{view.ops()[pos].start, c.end};
      if (host.end > host.start) by_start_.push_back(host);
    }
    std::sort(by_start_.begin(), by_start_.end(),
              [](const Interval& a, const Interval& b) { return a.start < b.start; });
    latest_end_.reserve(by_start_.size());
    for (const Interval& s : by_start_) {
      latest_end_.push_back(latest_end_.empty() ? s.end : std::max(latest_end_.back(), s.end));
    }
  }

  // Whether a staging began before `end` and ended after `start`.
  bool overlap(Ns start, Ns end) const {
    const std::size_t before = firstFrom(end);
    return before > 0 && latest_end_[before - 1] > start;
  }

  // When a call begun at `start` that takes `own` returns with only the staging holding it: at
  // the first moment from `start` on with `own` free of every staging, plus `own`. The stagings
  // begun before `start` hold it until the latest of their ends; from there one pass, which a
  // staging that begins once the call could have returned ends.
  Ns returnPast(Ns start, Ns own) const {
    const std::size_t from = firstFrom(start);
    Ns t = from > 0 ? std::max(start, latest_end_[from - 1]) : start;
    for (std::size_t i = from; i < by_start_.size(); ++i) {
      const Interval& s = by_start_[i];
      if (s.start >= t + own) break;
      if (s.end > t) t = s.end;
    }
    return t + own;
  }

 private:
  // The first staging that begins at or after `t`.
  std::size_t firstFrom(Ns t) const {
    return static_cast<std::size_t>(
        std::lower_bound(by_start_.begin(), by_start_.end(), t,
                         [](const Interval& s, Ns at) { return s.start < at; }) -
        by_start_.begin());
  }

  std::vector<Interval> by_start_;
  std::vector<Ns> latest_end_;  // over each prefix of by_start_
};

// The split thread's own asynchronous legacy-stream calls that took longer beside another
// thread's launches to other streams: a call to the legacy stream takes the context's lock (the
// driver orders it after every blocking stream's work), so it and other threads' launches take
// turns; on a created stream of its own it takes its stream's only (lab g000360: main's
// cudaMemcpyAsync calls to the legacy stream took 30 us a call (median) beside worker0's launches
// to its blocking stream, 4 alone; 21 and 4 on the 30-run replica; in the fixed programs' own runs
// 21 beside them as recorded, 24 with worker0's stream non-blocking (main still on the legacy
// stream), 4.7 on the split's blocking lanes and 4.9 with every thread on a stream of its own).
// The staying legacy calls still take turns with it (g000083: beside worker0's legacy loop, which
// stays, main's launches took 43 us on the split's lanes against 21 recorded).
// Each such call gets back its excess over its thread's calls of its kind that overlapped no other
// thread's call, unless a staying legacy call held it (the two then still take turns there; a
// synchronous one holds what it returned inside, as in heldBySplitLegacyCalls), and as many of
// them as the staying legacy calls over the loop's extent keep their wait (below).
// A call that another thread's staged pageable copy held (Staging) is held in the split by the
// staging alone: a staged copy on the legacy stream waits there for the stream's earlier work
// before it stages, and while it waits it holds the legacy calls behind it, not a call to a
// created stream. Such a call keeps the wait from its start to the end of the staging it began in
// (and of any staging that began before it could have returned, its kind's typical time later),
// plus that typical time; the rest is given back, whatever staying legacy calls overlapped it
// (they were waiting behind the same staging). Lab g000021: main's cudaMemcpyAsync of 36 KiB
// pinned to the legacy stream took 480-670 us once a loop beside worker1's pageable copies of
// 864 KiB, which waited for the legacy stream's 200 us kernels before staging for 20-120 us; the
// split (main's loop on created blocking streams) saved 254 +- 62 us (272 +- 23 on the older
// recording), none claimed; now 293 (median of five runs). Held for the whole of the staged
// copies' calls instead, the split would save 25.
std::vector<HostTimeGiven> ownCallsBesideOtherStreams(const DeviceView& view, const std::vector<LegacyOp>& leaving,
                                                      const std::vector<LegacyOp>& staying) {
  if (leaving.empty()) return {};
  const std::vector<std::size_t> pageable = pageableCopyCalls(view);
  std::unordered_set<std::uint64_t> moving_threads;
  std::unordered_set<std::size_t> legacy_positions;
  for (const LegacyOp& x : leaving) moving_threads.insert(x.thread), legacy_positions.insert(x.position);
  for (const LegacyOp& x : staying) legacy_positions.insert(x.position);
  // Other threads' calls: every launch call (partners: those of ops off the legacy stream).
  std::vector<OtherThreadCalls::Call> any_other, partners;
  for (std::size_t pos = 0; pos < view.ops().size(); ++pos) {
    const auto call = view.launchCall(view.op(view.ops()[pos]));
    if (!call) continue;
    const RuntimeCall& c = view.call(*call);
    const std::uint64_t thread = threadKey(c);
    if (moving_threads.count(thread) != 0) continue;
    any_other.push_back({c.start, c.end, thread});
    if (legacy_positions.count(pos) == 0) partners.push_back({c.start, c.end, thread});
  }
  if (partners.empty()) return {};
  // The split thread's candidate calls.
  std::vector<std::pair<std::size_t, std::uint64_t>> own;
  for (const LegacyOp& x : leaving) {
    if (x.synchronous) continue;
    const auto call = view.launchCall(view.op(view.ops()[x.position]));
    if (!call || std::binary_search(pageable.begin(), pageable.end(), *call)) continue;
    own.emplace_back(*call, x.thread);
  }
  std::sort(own.begin(), own.end());
  own.erase(std::unique(own.begin(), own.end()), own.end());
  // Staying legacy calls that held the split thread's calls. Two calls contending for the context
  // take turns, one each: an asynchronous call that two or more of the split thread's calls began
  // and ended inside was waiting itself (starved: g000360's worker1 copy call of 906 us, main's
  // calls passing one after another; 46 us at most in the fixed program), not holding them.
  constexpr std::ptrdiff_t kStarvedAfter = 2;
  std::vector<OtherThreadCalls::Call> holding_async, holding_sync;
  for (const LegacyOp& x : staying) {
    const auto call = view.launchCall(view.op(view.ops()[x.position]));
    if (!call) continue;
    const RuntimeCall& c = view.call(*call);
    if (x.synchronous) {
      holding_sync.push_back({c.start, c.end, x.thread});
      continue;
    }
    const auto passed = std::count_if(own.begin(), own.end(), [&](const auto& o) {
      const RuntimeCall& oc = view.call(o.first);
      return oc.start >= c.start && oc.end <= c.end;
    });
    if (passed < kStarvedAfter) holding_async.push_back({c.start, c.end, x.thread});
  }
  const OtherThreadCalls others(std::move(any_other));
  const OtherThreadCalls partner_calls(std::move(partners));
  const OtherThreadCalls async_holders(std::move(holding_async));
  const Staging staging(view, pageable, moving_threads);
  std::map<ApiKind, std::vector<Ns>> alone;
  std::vector<std::size_t> beside, staged;
  for (const auto& [call, thread] : own) {
    const RuntimeCall& c = view.call(call);
    if (!others.overlap(c.start, c.end, thread)) {
      alone[view.callKind(call)].push_back(c.end - c.start);
      continue;
    }
    if (staging.overlap(c.start, c.end)) {
      staged.push_back(call);
      continue;
    }
    if (!partner_calls.overlap(c.start, c.end, thread)) continue;
    if (async_holders.overlap(c.start, c.end, thread)) continue;
    const bool sync_held = std::any_of(holding_sync.begin(), holding_sync.end(), [&](const auto& s) {
      return s.end > c.start && s.end <= c.end;
    });
    if (!sync_held) beside.push_back(call);
  }
  std::map<ApiKind, Ns> typical;
  for (auto& [kind, durations] : alone) typical[kind] = medianOf(std::move(durations));
  std::vector<HostTimeGiven> held_by_staging;
  for (const std::size_t call : staged) {
    const auto it = typical.find(view.callKind(call));
    if (it == typical.end()) continue;
    const RuntimeCall& c = view.call(call);
    const Ns kept = staging.returnPast(c.start, it->second) - c.start;
    const Ns excess = c.end - c.start - kept;
    if (excess > 0) held_by_staging.push_back({call, excess, /*in_call=*/true});
  }
  std::vector<HostTimeGiven> given;
  for (const std::size_t call : beside) {
    const auto it = typical.find(view.callKind(call));
    if (it == typical.end()) continue;
    const Ns excess = view.call(call).end - view.call(call).start - it->second;
    if (excess > 0) given.push_back({call, excess, /*in_call=*/true});
  }
  // Off the legacy stream the split thread's calls still take turns with the staying legacy calls
  // of other threads (each holds the context while the driver orders it): as many of its calls
  // as there are such calls over its extent keep their wait, the longest waits first.
  if (!given.empty()) {
    Ns first = std::numeric_limits<Ns>::max(), last = std::numeric_limits<Ns>::min();
    for (const auto& o : own) {
      first = std::min(first, view.call(o.first).start);
      last = std::max(last, view.call(o.first).end);
    }
    std::size_t turns = 0;
    for (const LegacyOp& x : staying) {
      const auto call = view.launchCall(view.op(view.ops()[x.position]));
      if (call && view.call(*call).start < last && view.call(*call).end > first) ++turns;
    }
    std::sort(given.begin(), given.end(),
              [](const HostTimeGiven& a, const HostTimeGiven& b) { return a.amount > b.amount; });
    given.erase(given.begin(), given.begin() + static_cast<std::ptrdiff_t>(std::min(turns, given.size())));
  }
  given.insert(given.end(), held_by_staging.begin(), held_by_staging.end());
  return given;
}

}  // namespace

void heldBySplitLegacyCalls(const DeviceView& view, const HostTimeline& host,
                            const std::vector<std::uint64_t>& keys, std::uint64_t stream,
                            std::vector<CallChange>& changed, std::vector<Ns>& earlier,
                            std::vector<HostTimeGiven>* given_out) {
  std::vector<LegacyOp> leaving, staying;
  for (const LegacyOp& x : legacyOps(view)) {
    if (x.position < keys.size()) (keys[x.position] == stream ? leaving : staying).push_back(x);
  }
  if (leaving.empty()) return;
  std::vector<HostTimeGiven> given = contendedTime(view, leaving);
  // Only other threads' calls (the split thread's own, beside other streams' launches, are
  // ownCallsBesideOtherStreams'), and of those only calls no staying call held too.
  std::unordered_set<std::uint64_t> moving_threads;
  for (const LegacyOp& x : leaving) moving_threads.insert(x.thread);
  // A staying call holds a call only while the call waits for the driver: an asynchronous call to
  // the legacy stream wherever it overlapped it (they take turns ordering their ops after every
  // blocking stream), a synchronous one (cudaMemcpy, cudaMemset) only if it returned before the
  // call did, for the driver releases the calls it held as it returns. A call that got through
  // while another thread's synchronous call was still in flight was held by the one that
  // returned just before it (lab g000325: worker1's cudaMemcpyAsync calls to its own stream, 4 µs
  // alone, took 25-103 µs while the split thread's legacy cudaMemcpy waited and returned with it,
  // beside other threads' cudaMemcpy calls still in flight; g000211's worker calls held 1.4 and
  // 0.5 ms returned with worker2's cudaMemcpy while main's, begun before, waited 1.1 ms more).
  std::vector<OtherThreadCalls::Call> staying_sync, staying_async;  // by return, by start
  for (const LegacyOp& x : staying) {
    if (const auto call = view.launchCall(view.op(view.ops()[x.position]))) {
      (x.synchronous ? staying_sync : staying_async)
          .push_back({view.call(*call).start, view.call(*call).end, x.thread});
    }
  }
  std::sort(staying_sync.begin(), staying_sync.end(),
            [](const OtherThreadCalls::Call& a, const OtherThreadCalls::Call& b) { return a.end < b.end; });
  const OtherThreadCalls async_holders(std::move(staying_async));
  const auto heldByStaying = [&](std::size_t call) {
    const RuntimeCall& c = view.call(call);
    const std::uint64_t thread = threadKey(c);
    if (async_holders.overlap(c.start, c.end, thread)) return true;
    // Synchronous staying calls that returned inside the call: (c.start, c.end].
    auto it = std::upper_bound(staying_sync.begin(), staying_sync.end(), c.start,
                               [](Ns t, const OtherThreadCalls::Call& s) { return t < s.end; });
    for (; it != staying_sync.end() && it->end <= c.end; ++it) {
      if (it->thread != thread && it->start < c.end) return true;
    }
    return false;
  };
  std::unordered_set<std::size_t> still_held;
  for (const HostTimeGiven& g : contendedTime(view, staying)) {
    if (heldByStaying(g.call)) still_held.insert(g.call);
  }
  given.erase(std::remove_if(given.begin(), given.end(),
                             [&](const HostTimeGiven& g) {
                               return moving_threads.count(threadKey(view.call(g.call))) != 0 ||
                                      still_held.count(g.call) != 0;
                             }),
              given.end());
  const std::vector<HostTimeGiven> own = ownCallsBesideOtherStreams(view, leaving, staying);
  given.insert(given.end(), own.begin(), own.end());
  if (given.empty()) return;
  if (given_out) {
    given_out->insert(given_out->end(), given.begin(), given.end());
    return;
  }
  barriersGivenBack(view, given, host, changed);
  const std::vector<Ns> back = hostTimeGivenBack(view, given, host);
  if (back.empty()) return;
  earlier.resize(view.ops().size(), 0);
  for (std::size_t p = 0; p < back.size() && p < earlier.size(); ++p) earlier[p] += back[p];
}

void giveBackOnce(const DeviceView& view, const HostTimeline& host, std::vector<HostTimeGiven> given,
                  std::vector<CallChange>& changed, std::vector<Ns>& earlier) {
  if (given.empty()) return;
  // One entry a call: the larger amount (with its in_call).
  std::sort(given.begin(), given.end(), [](const HostTimeGiven& a, const HostTimeGiven& b) {
    return a.call != b.call ? a.call < b.call : a.amount > b.amount;
  });
  given.erase(std::unique(given.begin(), given.end(),
                          [](const HostTimeGiven& a, const HostTimeGiven& b) { return a.call == b.call; }),
              given.end());
  barriersGivenBack(view, given, host, changed);
  const std::vector<Ns> back = hostTimeGivenBack(view, given, host);
  if (back.empty()) return;
  earlier.resize(view.ops().size(), 0);
  for (std::size_t p = 0; p < back.size() && p < earlier.size(); ++p) earlier[p] += back[p];
}

bool blockingWork(const DeviceView& view, const std::vector<std::uint64_t>& keys, std::uint64_t stream) {
  for (std::size_t pos = 0; pos < keys.size(); ++pos) {
    if (keys[pos] != stream) continue;
    const GpuOp& op = view.op(view.ops()[pos]);
    if (DeviceView::streamKey(op) != stream && !view.onLegacyDefaultStream(op)) {
      continue;  // a thread's synchronous copy counted with its kernels' stream
    }
    // A per-thread default stream is blocking too (CUPTI flags it 1), but the fix gives its
    // lanes non-blocking streams (multi_stream.py: blocking only where the loop's stream was a
    // created blocking stream or the legacy one); only traces with the stream's origin tell.
    const Stream* s = view.stream(op);
    return view.onLegacyDefaultStream(op) ||
           (s != nullptr && s->flag == StreamFlag::kDefault && s->origin != StreamOrigin::kPerThread);
  }
  return false;
}

bool tookTurnsByLegacyBarrier(const DeviceView& view, const std::vector<std::uint64_t>& keys,
                              std::uint64_t work, Interval extent) {
  std::size_t copies = 0, legacy_copies = 0;
  Ns blocking = 0, legacy = 0;  // the other work beside the loop over its extent
  for (std::size_t pos = 0; pos < view.ops().size() && pos < keys.size(); ++pos) {
    const ScopedOp& scoped = view.ops()[pos];
    const GpuOp& op = view.op(scoped);
    if (keys[pos] == work) {
      if (op.kind != OpKind::kMemcpy) continue;
      ++copies;
      if (view.onLegacyDefaultStream(op)) ++legacy_copies;
      continue;
    }
    const Ns length = timeWithin(scoped, extent);
    if (view.onLegacyDefaultStream(op)) {
      legacy += length;
    } else if (const Stream* s = view.stream(op); s != nullptr && s->flag == StreamFlag::kDefault) {
      blocking += length;
    }
  }
  return 2 * legacy_copies > copies && blocking > legacy;
}

namespace {

// Whether the loop's own ops (those on its stream) waited behind legacy-stream ops longer than
// they ran: an op that was ready (its launch call begun, its stream's previous op ended) and
// started as a legacy op ended, that op having ended after it was ready, waited for it from ready
// to its start (the barrier: a blocking stream's op waits for the legacy ops issued before it).
// "As it ended": within kHandoff, a few of the barrier's hand-offs (the front end releases the op
// microseconds after, legacy_barriers.h: setBarrierLags), far below the waits that pace a loop.
bool waitedOnLegacyBarrier(const DeviceView& view, const std::vector<std::uint64_t>& keys, std::uint64_t work) {
  constexpr Ns kHandoff = 15'000;
  std::vector<Ns> legacy_ends;
  for (std::size_t pos = 0; pos < view.ops().size(); ++pos) {
    if (view.onLegacyDefaultStreamAt(pos)) legacy_ends.push_back(view.ops()[pos].end);
  }
  std::sort(legacy_ends.begin(), legacy_ends.end());
  Ns busy = 0, waited = 0, previous_end = 0;
  for (std::size_t pos = 0; pos < view.ops().size() && pos < keys.size(); ++pos) {
    if (keys[pos] != work) continue;
    const ScopedOp& scoped = view.ops()[pos];
    const GpuOp& op = view.op(scoped);
    if (DeviceView::streamKey(op) != work) continue;
    Ns ready = previous_end;
    if (const auto call = view.launchCall(op)) ready = std::max(ready, view.call(*call).start);
    const auto after = std::upper_bound(legacy_ends.begin(), legacy_ends.end(), scoped.start);
    if (after != legacy_ends.begin()) {
      const Ns released = *std::prev(after);
      if (released > ready && scoped.start - released <= kHandoff) waited += scoped.start - ready;
    }
    busy += scoped.end - scoped.start;
    previous_end = std::max(previous_end, scoped.end);
  }
  return waited > busy;
}

}  // namespace

bool perThreadTookTurnsByLegacyBarrier(const DeviceView& view, const std::vector<std::uint64_t>& keys,
                                       std::uint64_t work, Interval extent) {
  bool per_thread = false;
  Ns legacy = 0, other = 0;  // the other work beside the loop over its extent
  for (std::size_t pos = 0; pos < view.ops().size() && pos < keys.size(); ++pos) {
    const ScopedOp& scoped = view.ops()[pos];
    const GpuOp& op = view.op(scoped);
    if (keys[pos] == work) {
      if (DeviceView::streamKey(op) == work) {
        const Stream* s = view.stream(op);
        if (s == nullptr || s->origin != StreamOrigin::kPerThread) return false;
        per_thread = true;
      }
      continue;
    }
    (view.onLegacyDefaultStream(op) ? legacy : other) += timeWithin(scoped, extent);
  }
  // Beside mostly other work (other threads' blocking streams, which the barrier does not order
  // against it directly), it still took turns where the legacy ops between held it: each waited
  // for a blocking stream's earlier work and the loop's ops for them.
  return per_thread && (legacy > other || waitedOnLegacyBarrier(view, keys, work));
}

std::vector<OrderEdge> splitBarriers(const DeviceView& view, const std::vector<std::uint64_t>& lanes,
                                     bool split_blocking) {
  if (lanes.empty()) return legacyBarrierEdges(view);
  std::unordered_set<std::uint64_t> created;  // the split's lanes: no stream key of the view
  if (split_blocking) {
    for (std::size_t pos = 0; pos < lanes.size(); ++pos) {
      if (lanes[pos] != DeviceView::streamKey(view.op(view.ops()[pos]))) created.insert(lanes[pos]);
    }
  }
  return legacyBarrierEdges(view, lanes, created, /*moved_kernels_in_order=*/true);
}

}  // namespace cuoverlap::diagnosis
