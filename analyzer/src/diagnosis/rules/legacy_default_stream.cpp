// legacy-default-stream: an op issued to the legacy default (null) stream while another blocking
// stream of the same context had work, or while another host thread's op on the legacy stream
// was in flight. The legacy stream is an implicit barrier: its op waits for all earlier work of
// the context's blocking streams, and their later work waits for it; and it is one stream, so
// host threads that all issue to it serialize each other's work.
// An op X on the null stream counts when some op Y of another blocking stream (flag "default" in
// the stream table) of the same context was in flight when X's launch call began (Y launched
// earlier and not yet finished), or was launched while X was in flight; or when X was launched
// by a host thread while an op another thread launched to the legacy stream was in flight (both
// threads synchronizing on their own: independent producers, not a hand-over).
// Cost: what the fix saves in the what-if schedule with the host (diagnosis/schedule_estimate.h;
// event waits kept; blocking calls' ops released by their recorded constraints, the barrier edges
// included). Where some legacy op is asynchronous, the fix is lab transform own-streams (each
// thread's asynchronous work on a created non-blocking stream of its own): the span with every
// barrier edge ("the last op of every other blocking stream launched before X precedes X", "X
// precedes the first op of every other blocking stream launched after X"; at most the trace's
// span) minus the span with the asynchronous legacy ops of each thread on a lane of their own,
// without their barrier edges (synchronous copies and memsets stay on the legacy stream, barriers
// included, after their own thread's earlier work, unordered across threads), each synchronize of the legacy stream waiting
// only for its own thread's lane, a synchronous copy or memset for its own thread's earlier work
// only, and the time calls waited for other threads' calls on the legacy stream given back
// (legacy_threads.h), except what another thread's cudaMemcpy or cudaMemset, which stays on the
// legacy stream, still holds them once it no longer waits for other threads' work
// (stillHeldBySynchronous). The other fix, where the context has created blocking streams, is
// nonblocking-streams: the span without the barrier edges, except those into a synchronous op from
// its own thread's earlier work (the legacy stream stays one queue), a staged cudaMemcpy or
// cudaMemset on the legacy stream no longer waiting in its call for other threads' work on the
// blocking streams (stagedBehindBlockingStreams; a cudaMemset still waits for another thread's
// pageable copy call in flight as it began: heldByStagedCopy), other threads' calls that the
// driver held while a legacy call waited for the blocking streams given back (heldByBarrier),
// and a legacy call another thread's cudaMemcpy held returning as that copy returns in the fix's
// schedule (heldByLegacyCopies). In both fixes a synchronous op that the barrier held behind its
// own thread's earlier work follows it through the host, as behind the synchronize the fix puts
// before it: at least the trace's wake-up plus submission time after that work ends
// (handoffThroughHost).
// A per-thread default stream (Stream::origin kPerThread, where the trace tells) has no
// non-blocking flag: nonblocking-streams keeps its barrier edges both ways, a legacy call still
// waits for its work, and the fix applies only where some blocking stream is created (or of
// unknown origin). own-streams treats it as any blocking stream: the synchronous ops left on the
// legacy stream keep their edges to every blocking stream, created or per-thread, alike.
// The finding prices each fix that applies (Finding::fixes) and recommends the one that saves
// more: fix_saving_ns is its saving, and the advice names it first. In own-streams each
// asynchronous legacy launch also returns kLegacyLaunchCost sooner (a launch to the legacy stream
// costs the driver more than one to a created non-blocking stream).
// Where: each X's own run and the stretches the ops after it were held back ([ready, start)).
// Needs: the null stream (stream flag or context nullStreamId), stream flags, launch calls.
#include <algorithm>
#include <cctype>
#include <iterator>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <unordered_map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cuoverlap/intervals.h"
#include "diagnosis/finding_builder.h"
#include "diagnosis/host_time_given.h"
#include "diagnosis/kernels_alone.h"
#include "diagnosis/legacy_barriers.h"
#include "diagnosis/median.h"
#include "diagnosis/overlap_index.h"
#include "diagnosis/rules/legacy_threads.h"
#include "diagnosis/rules/rules.h"
#include "diagnosis/rules/staging_holds.h"
#include "diagnosis/schedule_estimate.h"
#include "diagnosis/schedule_turns.h"
#include "diagnosis/stream_waits.h"

namespace cuoverlap::diagnosis {
namespace {

// The blocking-stream ops of one context, ordered by launch start, with the running maximum of
// their ends ("was any of them in flight at time t", "was any launched in [a, b)"), and per stream
// the same launches (the barrier's edges in the what-if schedule).
struct BlockingStreamLaunches {
  std::vector<Ns> launch_start;
  std::vector<Ns> max_end;
  std::map<std::uint64_t, std::vector<std::pair<Ns, std::size_t>>> per_stream;  // (launch, position)
  // The keys of per_stream that are per-thread default streams (Stream::origin kPerThread): no
  // flag makes them non-blocking, so nonblocking-streams leaves them under the barrier.
  std::set<std::uint64_t> per_thread;

  // Some blocking stream that nonblocking-streams can make non-blocking (created, or of unknown
  // origin).
  bool anyCreated() const {
    return std::any_of(per_stream.begin(), per_stream.end(),
                       [&](const auto& s) { return per_thread.count(s.first) == 0; });
  }

  bool inFlightAt(Ns t) const {
    const auto k = std::lower_bound(launch_start.begin(), launch_start.end(), t) -
                   launch_start.begin();
    return k > 0 && max_end[k - 1] > t;
  }
  bool launchedIn(Ns from, Ns to) const {
    auto it = std::lower_bound(launch_start.begin(), launch_start.end(), from);
    return it != launch_start.end() && *it < to;
  }
  // The barrier of a null-stream op at `position` launched at `launched`: the last op of each
  // blocking stream launched before it precedes it, and it precedes the first one launched after.
  void addBarrierEdges(Ns launched, std::size_t position, std::vector<OrderEdge>& edges) const {
    for (const auto& [stream, list] : per_stream) {
      auto after = std::lower_bound(list.begin(), list.end(), std::make_pair(launched, std::size_t{0}));
      if (after != list.begin()) edges.push_back({std::prev(after)->second, position});
      if (after != list.end()) edges.push_back({position, after->second});
    }
  }
};

std::map<std::uint32_t, BlockingStreamLaunches> blockingLaunchesPerContext(const DeviceView& view) {
  std::map<std::uint32_t, std::vector<std::pair<Ns, Ns>>> launches;
  std::map<std::uint32_t, BlockingStreamLaunches> result;
  const auto& ops = view.ops();
  for (std::size_t pos = 0; pos < ops.size(); ++pos) {
    const GpuOp& op = view.op(ops[pos]);
    const Stream* stream = view.stream(op);
    const auto call = view.launchCall(op);
    if (!call || !stream || stream->flag != StreamFlag::kDefault) continue;
    if (view.onLegacyDefaultStream(op)) continue;
    launches[op.context_id].emplace_back(view.call(*call).start, ops[pos].end);
    result[op.context_id].per_stream[DeviceView::streamKey(op)].emplace_back(view.call(*call).start, pos);
    if (stream->origin == StreamOrigin::kPerThread) result[op.context_id].per_thread.insert(DeviceView::streamKey(op));
  }
  for (auto& [context, list] : launches) {
    std::sort(list.begin(), list.end());
    BlockingStreamLaunches& out = result[context];
    for (auto& [stream, positions] : out.per_stream) std::sort(positions.begin(), positions.end());
    for (const auto& [start, end] : list) {
      out.launch_start.push_back(start);
      out.max_end.push_back(out.max_end.empty() ? end : std::max(out.max_end.back(), end));
    }
  }
  return result;
}

// Per position: the op is on a per-thread default stream (Stream::origin kPerThread, where the
// trace tells; unknown origin reads as created).
std::vector<bool> onPerThreadStream(const DeviceView& view) {
  std::vector<bool> out(view.ops().size(), false);
  for (std::size_t pos = 0; pos < out.size(); ++pos) {
    const Stream* stream = view.stream(view.op(view.ops()[pos]));
    out[pos] = stream && stream->origin == StreamOrigin::kPerThread;
  }
  return out;
}

// Threads that synchronize on their own (an explicit synchronize call in the view): independent
// producers of work. A thread that never waits (PyTorch's autograd thread, which launches backward
// while the main thread waits in backward()) is driven by another and hands its work over in
// order: putting it on a stream of its own would drop an ordering the program needs.
std::vector<std::uint64_t> synchronizingThreads(const DeviceView& view) {
  std::vector<std::uint64_t> threads;
  for (std::size_t call : view.calls()) {
    if (!isExplicitSync(view.callKind(call))) continue;
    const RuntimeCall& c = view.call(call);
    threads.push_back(threadKey(c));
  }
  std::sort(threads.begin(), threads.end());
  threads.erase(std::unique(threads.begin(), threads.end()), threads.end());
  return threads;
}

// Positions of the legacy ops launched while an op another thread launched to the legacy stream
// was in flight (the threads queue behind each other on the one stream); only threads that
// synchronize on their own count.
std::vector<std::size_t> sharedByThreads(const DeviceView& view, std::vector<LegacyOp> legacy) {
  const std::vector<std::uint64_t> independent = synchronizingThreads(view);
  legacy.erase(std::remove_if(legacy.begin(), legacy.end(),
                              [&](const LegacyOp& x) {
                                return !std::binary_search(independent.begin(), independent.end(),
                                                           x.thread);
                              }),
               legacy.end());
  std::sort(legacy.begin(), legacy.end(),
            [](const LegacyOp& a, const LegacyOp& b) { return a.launched < b.launched; });
  LatestOfTwoThreads latest;  // of the legacy ops so far
  std::vector<std::size_t> shared;
  for (const LegacyOp& x : legacy) {
    if (latest.otherThan(x.thread) > x.launched) shared.push_back(x.position);
    latest.add(x.thread, view.ops()[x.position].end);
  }
  std::sort(shared.begin(), shared.end());
  return shared;
}

using LaunchesPerThread = std::map<std::uint64_t, std::vector<std::pair<Ns, std::size_t>>>;

// The last legacy op of `list` (launch, position; sorted) launched before `t`.
std::optional<std::size_t> lastLaunchedBefore(const std::vector<std::pair<Ns, std::size_t>>& list,
                                              Ns t) {
  auto it = std::lower_bound(list.begin(), list.end(), std::make_pair(t, std::size_t{0}));
  return it == list.begin() ? std::optional<std::size_t>{} : std::prev(it)->second;
}

// A synchronous copy or memset stays on the legacy stream, and first synchronizes it (CUDA's API
// synchronization behavior): in the trace it may have waited for another thread's asynchronous
// legacy work (host_timeline.h: a staged copy waits for its stream's previous op). In the fix that
// work runs on the other thread's own stream, so the call waits for its own thread's earlier work
// only (the fix synchronizes the thread's stream before a copy that may read it).
void ownWorkOnly(const DeviceView& view, HostBarrier& barrier, const std::vector<bool>& is_legacy,
                 const std::vector<std::uint64_t>& thread_of, const LaunchesPerThread& by_thread) {
  const RuntimeCall& call = view.call(barrier.call);
  const std::uint64_t self = threadKey(call);
  const auto others = [&](std::size_t p) { return is_legacy[p] && thread_of[p] != self; };
  const auto first_other = std::remove_if(barrier.waited_for.begin(), barrier.waited_for.end(), others);
  if (first_other == barrier.waited_for.end()) return;
  barrier.waited_for.erase(first_other, barrier.waited_for.end());
  const auto list = by_thread.find(self);
  if (list == by_thread.end()) return;
  const auto p = lastLaunchedBefore(list->second, call.start);
  if (p && std::find(barrier.waited_for.begin(), barrier.waited_for.end(), *p) == barrier.waited_for.end()) {
    barrier.waited_for.push_back(*p);
  }
}

// The host timeline of the fix: a synchronize of the legacy stream waits for the last legacy op
// its own thread launched before it (the thread's own stream), a device synchronize for the last
// of every thread's, and so does a free that waited for work in flight (it synchronizes the
// device: lab g008019's main thread freed a buffer each step, its wait standing on its own memset
// queued behind a worker's legacy kernels; with those kernels on the worker's own stream the
// what-if let the free return 550 µs before them), a synchronous copy or memset for its own
// thread's work only (ownWorkOnly).
HostTimeline ownStreamsTimeline(const DeviceView& view, const HostTimeline& host,
                                const std::vector<LegacyOp>& legacy) {
  std::vector<bool> is_legacy(view.ops().size(), false);
  for (const LegacyOp& x : legacy) is_legacy[x.position] = true;
  LaunchesPerThread by_thread;  // launched, position
  for (const LegacyOp& x : legacy) by_thread[x.thread].emplace_back(x.launched, x.position);
  for (auto& [thread, list] : by_thread) std::sort(list.begin(), list.end());
  std::vector<std::uint64_t> thread_of(view.ops().size(), 0);
  for (const LegacyOp& x : legacy) thread_of[x.position] = x.thread;
  HostTimeline own = host;
  for (HostBarrier& barrier : own.barriers) {
    const ApiKind kind = view.callKind(barrier.call);
    if (kind == ApiKind::kMemcpySync || kind == ApiKind::kMemsetSync) {
      ownWorkOnly(view, barrier, is_legacy, thread_of, by_thread);
      continue;
    }
    const bool device_wide =
        kind == ApiKind::kDeviceSync || (kind == ApiKind::kAllocation && !barrier.waited_for.empty());
    if (kind != ApiKind::kStreamSync && !device_wide) continue;
    const auto legacy_wait = std::find_if(barrier.waited_for.begin(), barrier.waited_for.end(),
                                          [&](std::size_t p) { return is_legacy[p]; });
    if (legacy_wait == barrier.waited_for.end()) continue;
    const RuntimeCall& call = view.call(barrier.call);
    const std::uint64_t self = threadKey(call);
    barrier.waited_for.erase(std::remove_if(barrier.waited_for.begin(), barrier.waited_for.end(),
                                            [&](std::size_t p) { return is_legacy[p]; }),
                             barrier.waited_for.end());
    for (const auto& [thread, list] : by_thread) {
      if (kind == ApiKind::kStreamSync && thread != self) continue;
      if (const auto p = lastLaunchedBefore(list, call.start)) barrier.waited_for.push_back(*p);
    }
  }
  return own;
}

// A synchronous copy or memset stays on the legacy stream, and returns after the work its thread
// issued before it, which it may read: with that work on the thread's own stream, the fix
// synchronizes that stream first (the lab's own-streams does). Edges from each thread's last
// moved op launched before each of its synchronous ops.
void ownWorkBeforeSynchronousOps(const std::vector<LegacyOp>& legacy, std::vector<OrderEdge>& edges) {
  std::vector<const LegacyOp*> by_launch;
  for (const LegacyOp& x : legacy) by_launch.push_back(&x);
  std::sort(by_launch.begin(), by_launch.end(),
            [](const LegacyOp* a, const LegacyOp* b) { return a->launched < b->launched; });
  std::map<std::uint64_t, std::size_t> last_moved;  // thread -> position
  for (const LegacyOp* x : by_launch) {
    if (!x->synchronous) {
      last_moved[x->thread] = x->position;
    } else if (const auto it = last_moved.find(x->thread); it != last_moved.end()) {
      edges.push_back({it->second, x->position});
    }
  }
}

// What `given` keeps in the fix of the time other threads' synchronous calls (cudaMemcpy,
// cudaMemset) on the legacy stream held it: those stay there and still hold the other threads'
// calls while they run, but no longer while the legacy stream's asynchronous work ahead of them
// runs: that work moves to its thread's own stream, which the copy's thread synchronizes first
// if it must, and a synchronize holds no other thread's call (the lab's own-streams variants:
// 2,713 of 2,819 launches, async copies and event records begun during another thread's stream
// synchronize of 0.1 ms or more returned within 20 us). A call keeps the part of its excess that
// overlapped such a call from its start, or from the end of the legacy stream's previous op where
// that op was asynchronous, to its return; it gets back the rest.
std::vector<HostTimeGiven> stillHeldBySynchronous(const DeviceView& view, const std::vector<LegacyOp>& legacy,
                                                  std::vector<HostTimeGiven> given) {
  struct Hold {
    Ns start = 0;  // its op's start, or the call's if later
    Ns end = 0;    // the call's return
    std::uint64_t thread = 0;
  };
  std::vector<const LegacyOp*> in_order;  // the legacy stream's ops in the order they ran
  for (const LegacyOp& x : legacy) in_order.push_back(&x);
  std::sort(in_order.begin(), in_order.end(),
            [](const LegacyOp* a, const LegacyOp* b) { return a->position < b->position; });
  std::vector<Hold> holds;
  for (std::size_t k = 0; k < in_order.size(); ++k) {
    const LegacyOp& x = *in_order[k];
    if (!x.synchronous) continue;
    const auto call = view.launchCall(view.op(view.ops()[x.position]));
    if (!call) continue;
    const RuntimeCall& c = view.call(*call);
    Ns from = c.start;
    if (k > 0 && !in_order[k - 1]->synchronous) {
      from = std::max(from, view.ops()[in_order[k - 1]->position].end);
    }
    if (from < c.end) holds.push_back({from, c.end, x.thread});
  }
  if (holds.empty()) return given;
  const OverlapIndex<Hold> index(holds);
  for (HostTimeGiven& g : given) {
    const RuntimeCall& c = view.call(g.call);
    const std::uint64_t self = threadKey(c);
    Ns kept = 0;
    index.forEachOverlapping(c.start, c.end, [&](const Hold& h) {
      if (h.thread != self) kept += std::min(c.end, h.end) - std::max(c.start, h.start);
    });
    g.amount -= std::min(g.amount, kept);
  }
  given.erase(std::remove_if(given.begin(), given.end(), [](const HostTimeGiven& g) { return g.amount <= 0; }),
              given.end());
  return given;
}

// A launch to the legacy default stream costs the driver more than one to a created non-blocking
// stream: it orders the op against the context's blocking streams (the implicit barrier), work a
// non-blocking stream's launch skips. About 0.2 us a call on the lab's H100 (driver 580): the
// kernel launches of the corpus's single-thread programs that launch to both took 0.26 us more
// to the legacy stream at the median (5 of 6 programs); own-streams saved 0.13-0.32 us per
// legacy launch the device waited for in the programs with 80 or more of them (g000093 130 us
// for 513, g000322 27 for 128, g000210 26 for 82, g000013 98 for 768; g000140 12 for 217). In
// the fix each asynchronous legacy launch returns that much sooner (where the device waited for
// the host, its op and the thread's later work start sooner).
constexpr Ns kLegacyLaunchCost = 200;

void withLegacyLaunchCost(const DeviceView& view, const std::vector<LegacyOp>& legacy,
                          std::vector<HostTimeGiven>& given) {
  for (const LegacyOp& x : legacy) {
    if (x.synchronous) continue;
    const auto call = view.launchCall(view.op(view.ops()[x.position]));
    if (call) given.push_back({*call, kLegacyLaunchCost, true});
  }
}

// The part of a synchronous legacy-stream copy's call, as a schedule ran it ([begin, end)), that
// holds other threads' calls (schedule_turns.h). In the fixed programs' own traces
// (/work/vtraces14), other threads' calls begun in such a call took a turn (30-35 µs, median)
// while it was submitted and while its op waited for the legacy stream's previous op; but a wait
// for work elsewhere holds nothing, as a stream synchronize holds nothing: in g000060's
// nonblocking-streams run its synchronous copies, which as recorded waited 0.83 ms under the
// barrier for another stream's work and which the what-if has wait for their own thread's work
// there, took 21.9 µs with no other call beside them (the fixed program synchronizes that stream
// first). So the call holds from its start where the previous op of the legacy stream
// (`previous`, a position; none: -1) ends after it began, but not before that op is submitted
// (its call's start in the schedule, or its release): the what-if keeps the recorded order, and a
// call it lets begin sooner may queue behind an op another thread submits much later (lab c8
// g006047: 2.2 ms before it, every other thread's call held meanwhile); else for its last `own`
// ns (what the recorded call took after the last op of another stream it waited for ended), at
// least a turn and its op's run.
BusyCall heldBySynchronousCopy(const DeviceView& view, const ScheduledHost& times, const LegacyOp& x,
                               std::int64_t previous, Ns own, Ns begin, Ns end) {
  constexpr Ns kPast = 2'000;
  if (previous >= 0) {
    const Ns ended = times.op_end[static_cast<std::size_t>(previous)];
    if (ended != std::numeric_limits<Ns>::min() && ended > begin + kPast) {
      const auto p = static_cast<std::size_t>(previous);
      Ns submitted = times.release[p];
      if (const auto call = view.launchCall(view.op(view.ops()[p]))) {
        if (const auto t = times.call.find(*call); t != times.call.end()) submitted = t->second.first;
      }
      const Ns from = submitted == std::numeric_limits<Ns>::min() ? begin : std::clamp(submitted, begin, end);
      return {from, end, x.thread};
    }
  }
  const ScopedOp& op = view.ops()[x.position];
  return {std::max(begin, end - std::max(own, kLegacyTurnNs + (op.end - op.start))), end, x.thread};
}

// Per synchronous legacy op (by position): what its recorded call took after the last op of
// another stream that `barriers` order it after ended (the whole call where none did).
std::unordered_map<std::size_t, Ns> ownCallTime(const DeviceView& view, const std::vector<LegacyOp>& legacy,
                                                const std::vector<OrderEdge>& barriers) {
  std::unordered_map<std::size_t, Ns> waited;  // position -> the latest end of those ops
  for (const OrderEdge& e : barriers) {
    if (view.onLegacyDefaultStreamAt(e.from)) continue;
    auto [it, added] = waited.emplace(e.to, view.ops()[e.from].end);
    if (!added) it->second = std::max(it->second, view.ops()[e.from].end);
  }
  std::unordered_map<std::size_t, Ns> own;
  for (const LegacyOp& x : legacy) {
    if (!x.synchronous) continue;
    const auto call = view.launchCall(view.op(view.ops()[x.position]));
    if (!call) continue;
    const RuntimeCall& c = view.call(*call);
    const auto w = waited.find(x.position);
    own[x.position] = c.end - std::max(c.start, w != waited.end() ? std::min(w->second, c.end) : c.start);
  }
  return own;
}

// Per legacy op (by position): the previous op on the legacy stream in the recorded order among
// those `counts` (-1: none).
template <typename Counts>
std::unordered_map<std::size_t, std::int64_t> previousLegacyOps(const std::vector<LegacyOp>& legacy, Counts counts) {
  std::vector<std::size_t> positions;
  for (const LegacyOp& x : legacy) {
    if (counts(x)) positions.push_back(x.position);
  }
  std::sort(positions.begin(), positions.end());
  std::unordered_map<std::size_t, std::int64_t> previous;
  for (std::size_t k = 0; k < positions.size(); ++k) {
    previous[positions[k]] = k == 0 ? -1 : static_cast<std::int64_t>(positions[k - 1]);
  }
  return previous;
}

// How long after work ends an op issued behind a host synchronize of that work starts, as the
// trace shows it: the median time a synchronize that waited returned after its work ended (the
// thread's wake-up) plus the median time from a kernel launch call's start to its kernel's start
// where the call began on an idle device and returned before the kernel started (the
// submission's own time). Both fixes put a synchronize of the thread's earlier work before a
// synchronous copy or memset that the legacy stream's barrier used to order after it (the lab's
// transforms insert one where the copy reads or overwrites what that work touches): the copy's
// call then begins once the synchronize returns, and its op starts a submission later, where the
// barrier handed off on the device in a few microseconds (g000298, one thread: a 991 KB DtoH
// cudaMemcpy after each of 8 kernels on blocking streams, its copy 1.0-8.5 µs after the kernel
// ended; its synchronizes woke 2.7-3.9 µs after their kernel ended, and kernels launched onto an
// idle device started 9.7-12.9 µs after their call began). No constant: 0 (the barrier's own
// lag stays) where the trace shows either part nowhere.
Ns handoffThroughHost(const DeviceView& view, const HostTimeline& host) {
  const auto& ops = view.ops();
  std::vector<Ns> wakes;
  for (const HostBarrier& barrier : host.barriers) {
    if (!isExplicitSync(view.callKind(barrier.call))) continue;
    Ns waited = barrier.start;
    for (std::size_t p : barrier.waited_for) waited = std::max(waited, ops[p].end);
    if (waited > barrier.start && barrier.end >= waited) wakes.push_back(barrier.end - waited);
  }
  std::vector<Ns> submissions;
  Ns busy_until = std::numeric_limits<Ns>::min();  // the latest end of the ops started so far
  for (const ScopedOp& op : ops) {
    const auto call = view.launchCall(view.op(op));
    if (call && view.callKind(*call) == ApiKind::kLaunch) {
      const RuntimeCall& c = view.call(*call);
      if (busy_until <= c.start && c.end <= op.start) submissions.push_back(op.start - c.start);
    }
    busy_until = std::max(busy_until, op.end);
  }
  if (wakes.empty() || submissions.empty()) return 0;
  return medianOf(std::move(wakes)) + medianOf(std::move(submissions));
}

// The edges into a synchronous op from its own thread's earlier work that the fix keeps, where the
// op's call began before that work ended (the barrier held it; the fix synchronizes first): the
// handoff goes through the host (handoffThroughHost), no sooner than the barrier's.
void throughHost(const DeviceView& view, Ns handoff, std::vector<OrderEdge>& edges, std::size_t first) {
  if (handoff <= 0) return;
  for (std::size_t k = first; k < edges.size(); ++k) {
    OrderEdge& e = edges[k];
    const auto call = view.launchCall(view.op(view.ops()[e.to]));
    if (call && view.call(*call).start < view.ops()[e.from].end) e.lag = std::max(e.lag, handoff);
  }
}

// A staged copy that took turns with another thread's staged copy under the legacy barrier
// (contendedBarriers: its call shortened, no longer waiting for its op) started its op late too:
// the driver stages one pageable copy at a time, and the copy waited while the other threads'
// staged copies took theirs. With the thread on a stream of its own the call keeps only its own
// time, and its op is released sooner by the part of its startup (what the schedule keeps of the
// wait before the op: from its release back to the call's start, ScheduleModel::release) that
// other threads' staged copies covered, each up to its return before the op started (a copy that
// returned after the op began waited for this one instead); no more than the change shortens the
// call. The rest of the wait (the legacy queue, a cudaMallocHost, the window's start) stays. Lab
// c1 g000304's own-streams run (/work/vt34): worker1's staged 2.5 MB upload, held 484 µs in its
// call as recorded, took 316 µs, its op released 159 µs sooner. Only the startup counts: c1
// g000308's first upload, held 905 µs with 621 µs of it beside staged copies, keeps all but 208 µs
// as waits for the legacy queue the schedule already gives back.
void releaseStagedSooner(const DeviceView& view, const ScheduleModel& fixed,
                         const std::vector<CallChange>& changed, std::vector<Ns>& earlier) {
  if (std::none_of(changed.begin(), changed.end(), [](const CallChange& c) { return !c.waits; })) return;
  std::vector<const RuntimeCall*> staged;  // the pageable copy calls by return
  for (const std::size_t x : pageableCopyCalls(view)) staged.push_back(&view.call(x));
  std::sort(staged.begin(), staged.end(),
            [](const RuntimeCall* a, const RuntimeCall* b) { return a->end < b->end; });
  std::unordered_map<std::size_t, std::size_t> op_of_call;
  for (std::size_t p = 0; p < view.ops().size(); ++p) {
    if (const auto call = view.launchCall(view.op(view.ops()[p]))) op_of_call.emplace(*call, p);
  }
  for (const CallChange& change : changed) {
    if (change.waits) continue;  // a blocking call that still waits for its ops
    const auto it = op_of_call.find(change.call);
    if (it == op_of_call.end()) continue;
    const RuntimeCall& c = view.call(change.call);
    const ScopedOp& op = view.ops()[it->second];
    const Ns begin = std::max(c.start, view.spanStart());
    if (op.start >= c.end || op.start <= begin) continue;
    const Ns from = std::max(begin, op.start - (fixed.release(it->second) - begin));
    const std::uint64_t self = threadKey(c);
    std::vector<Interval> parts;
    // Returned in (from, op.start]: in order of return, from the first after `from`.
    auto x = std::upper_bound(staged.begin(), staged.end(), from,
                              [](Ns t, const RuntimeCall* r) { return t < r->end; });
    for (; x != staged.end() && (*x)->end <= op.start; ++x) {
      if (threadKey(**x) != self) parts.push_back({std::max((*x)->start, from), (*x)->end});
    }
    const Ns covered = totalLength(unionOf(std::move(parts)));
    const Ns sooner = std::min(covered, c.end - c.start - change.own);
    if (sooner <= 0) continue;
    if (earlier.empty()) earlier.assign(view.ops().size(), 0);
    earlier[it->second] += sooner;
  }
}

// A staged copy of a thread the fix moves that ran longer than its thread's staged copies of its
// direction and size (more than kStretchedCopyShare of their median, where the thread made at
// least kStretchedCopyPeers of them) while another thread's call that the fix no longer holds
// (`given`: contendedTime's, held beside a legacy call) was in progress beside it: its chunks took
// turns with that thread's calls in the driver, which the fix lets go; it runs as its thread's
// typical copy (the median). Lab c1
// g000304 (/work/vt34): worker1's first 2.5 MB pageable download ran 308 µs beside two threads'
// held calls in the baseline run, 152 in the own-streams run, against 130-162 for its others.
inline constexpr double kStretchedCopyShare = 1.2;
inline constexpr std::size_t kStretchedCopyPeers = 3;

std::vector<FasterOp> unstretchedCopies(const DeviceView& view, const std::vector<LegacyOp>& legacy,
                                        const std::vector<HostTimeGiven>& given) {
  std::vector<FasterOp> out;
  std::vector<OtherThreadCalls::Call> held;
  for (const HostTimeGiven& g : given) {
    const RuntimeCall& c = view.call(g.call);
    if (g.amount > 0) held.push_back({c.start, c.end, threadKey(c)});
  }
  if (held.empty()) return out;
  const OtherThreadCalls beside(std::move(held));
  const std::vector<std::size_t> pageable = pageableCopyCalls(view);
  using Key = std::tuple<std::uint64_t, int, std::uint64_t>;  // thread, direction, bytes
  const auto keyOf = [&](const GpuOp& op) -> std::optional<Key> {
    if (!op.isCopy()) return std::nullopt;
    const auto call = view.launchCall(op);
    if (!call || !std::binary_search(pageable.begin(), pageable.end(), *call)) return std::nullopt;
    return Key{threadKey(view.call(*call)), static_cast<int>(op.copy_kind), op.bytes};
  };
  std::map<Key, std::vector<Ns>> durations;
  for (const ScopedOp& scoped : view.ops()) {
    if (const auto key = keyOf(view.op(scoped))) durations[*key].push_back(scoped.end - scoped.start);
  }
  for (const LegacyOp& x : legacy) {
    if (x.synchronous) continue;
    const ScopedOp& scoped = view.ops()[x.position];
    const auto key = keyOf(view.op(scoped));
    if (!key) continue;
    const std::vector<Ns>& peers = durations[*key];
    if (peers.size() < kStretchedCopyPeers) continue;
    const Ns typical = medianOf(peers);
    const double ran = static_cast<double>(scoped.end - scoped.start);
    if (ran <= kStretchedCopyShare * static_cast<double>(typical)) continue;
    if (beside.overlap(scoped.start, scoped.end, x.thread)) out.push_back({x.position, typical});
  }
  return out;
}

// Saving of the fix: the schedule with every barrier minus the schedule with each thread's
// asynchronous legacy work on its own non-blocking lane, without the time its calls waited for
// other threads' calls on the legacy stream (contendedTime).
Ns ownStreamsSaving(const DeviceView& view, const std::vector<LegacyOp>& legacy,
                    const std::vector<OrderEdge>& barriers, Ns handoff) {
  const HostTimeline& host = buildHostTimeline(view);
  const std::vector<OrderEdge> waits = waitEdges(streamWaits(view));
  std::vector<OrderEdge> recorded = waits;
  recorded.insert(recorded.end(), barriers.begin(), barriers.end());
  // A synchronous legacy-stream call held in the driver behind other threads' staged pageable
  // copies (staging_holds.h) stays on the legacy stream, and the copies stay staged: both
  // schedules keep the hold.
  const std::vector<StagingHold> holds = stagingHolds(view, recorded);
  const auto all = [](const StagingHold&) { return true; };
  std::vector<OrderEdge> before_edges = recorded;
  recorded = withHoldEdges(std::move(recorded), holds);
  // The fixed program is priced against what the program took: where the schedule of the
  // recorded program runs longer than the trace, the excess is that schedule's error (in the lab
  // a kernel placed late in another's drain that then loses a race for the SMs the run won, or
  // barrier edges that hold ops longer than they held in the run), which the fix's schedule,
  // with the threads' work on lanes of their own and no longer meeting in that order, mostly
  // does not repeat: the fix cannot save time the program never took. Where the schedule runs
  // shorter, the difference stays with it: the trace's span less the fixed schedule's would
  // credit the fix with time nothing it changes explains (the lab: own-streams g000008,
  // g000030, g000266 out on the corpus, g000239 on the recording before).
  const Ns before = std::min(
      view.spanLength(), keepHolds(ScheduleModel(view, host, recorded), holds, all, before_edges).span(before_edges));
  std::vector<std::uint64_t> lane(view.ops().size());
  for (std::size_t p = 0; p < lane.size(); ++p) lane[p] = DeviceView::streamKey(view.op(view.ops()[p]));
  std::vector<bool> moved(lane.size(), false);
  for (const LegacyOp& x : legacy) {
    // A lane per thread, unlike any stream key. The synchronous ops left on the legacy stream
    // queue there in the order the fixed program issues them, which is not the recorded one (a
    // thread no longer waits behind the others' asynchronous work): the schedule leaves those of
    // different threads unordered (the copy engines still serialize copies of one direction).
    lane[x.position] = x.thread ^ (x.synchronous ? 0x7f4a7c159e3779b9ULL : 0x9e3779b97f4a7c15ULL);
    moved[x.position] = !x.synchronous;
  }
  std::vector<OrderEdge> kept = waits;
  for (const OrderEdge& e : barriers) {
    if (!moved[e.from] && !moved[e.to]) kept.push_back(e);
  }
  const std::size_t own_first = kept.size();
  ownWorkBeforeSynchronousOps(legacy, kept);
  throughHost(view, handoff, kept, own_first);
  const HostTimeline own = ownStreamsTimeline(view, host, legacy);
  const ScheduleModel fixed = keepHolds(ScheduleModel(view, own, recorded).withLanes(lane), holds, all, kept);
  std::vector<HostTimeGiven> given =
      stillHeldBySynchronous(view, legacy, contendedTime(view, legacy, /*legacy_beside_any=*/true));
  // The calls held beside other threads' calls, before the legacy launches' own cost joins them.
  const std::vector<FasterOp> unstretched = unstretchedCopies(view, legacy, given);
  withLegacyLaunchCost(view, legacy, given);
  std::vector<CallChange> changed = contendedBarriers(view, own);
  barriersGivenBack(view, given, own, changed);
  std::vector<Ns> earlier = hostTimeGivenBack(view, given, own);
  releaseStagedSooner(view, fixed, changed, earlier);
  // Turns in the fixed schedule (schedule_turns.h): the synchronous copies left on the legacy
  // stream still hold the context while in progress, and another thread's asynchronous call,
  // now to its own stream, that the schedule begins meanwhile takes a turn (lab g000009's
  // own-streams run: such calls took 29.9 µs, median of 66, against 4.9 alone; g000235's 36.3 of
  // 437 against 6.9).
  HostTurns turns;
  const std::size_t n = view.ops().size();
  recordLaunchCalls(view, given, turns);
  std::vector<std::uint8_t> candidate(n, 0);
  for (std::size_t p = 0; p < n; ++p) {
    if (view.launchCall(view.op(view.ops()[p]))) candidate[p] = moved[p] ? 1 : 0;
  }
  for (const HostBarrier& barrier : own.barriers) turns.call_thread[barrier.call] = threadKey(view.call(barrier.call));
  // The synchronous copies left on the legacy stream take a turn where the schedule begins them
  // beside another thread's call now to its own stream (a legacy call beside a created-stream
  // call: 22.3 µs, median, in the corpus traces; scripts/lab_call_turns.py). Synchronous memsets
  // hold nothing: in g000360's own-streams run the other threads' calls beside them took 4-8 µs.
  turns.op_holds = candidate;
  for (const LegacyOp& x : legacy) {
    if (!x.synchronous) continue;
    const auto call = view.launchCall(view.op(view.ops()[x.position]));
    if (!call || view.callKind(*call) != ApiKind::kMemcpySync) continue;
    const RuntimeCall& c = view.call(*call);
    turns.turn[*call] = std::min(c.end - c.start, kLegacyTurnNs);
  }
  ScheduledHost times;
  Ns after = spanWithTurns(fixed, turns, kept, earlier, unstretched, changed, &times);
  if (turns.turn.empty()) return std::max<Ns>(0, before - after);
  // And the other way: an asynchronous call begun while a synchronous legacy call is in progress
  // takes a turn (settleTurns).
  // The synchronous ops stay one queue on the legacy stream in the fixed program.
  const auto previous = previousLegacyOps(legacy, [](const LegacyOp& x) { return x.synchronous; });
  const auto own_time = ownCallTime(view, legacy, barriers);
  const auto synchronousCalls = [&] {
    std::vector<BusyCall> busy;
    for (const LegacyOp& x : legacy) {
      if (!x.synchronous) continue;
      const auto call = view.launchCall(view.op(view.ops()[x.position]));
      if (!call || view.callKind(*call) != ApiKind::kMemcpySync) continue;
      const auto t = times.call.find(*call);
      if (t != times.call.end()) {
        busy.push_back(heldBySynchronousCopy(view, times, x, previous.at(x.position), own_time.at(x.position),
                                             t->second.first, t->second.second));
      }
    }
    return busy;
  };
  after = settleTurns(fixed, own, turns, kept, candidate, changed, earlier, times, after,
                      synchronousCalls, unstretched);
  // Kernels slowed beside other streams' kernels that the fix runs beside none take their alone
  // run (kernels_alone.h, kernelsLeftAlone), as in sync-memcpy's fix; the unstretched copies keep
  // their medians.
  if (std::vector<FasterOp> faster = kernelsLeftAlone(view, times); !faster.empty()) {
    faster.insert(faster.end(), unstretched.begin(), unstretched.end());
    after = spanWithTurns(fixed, turns, kept, earlier, faster, changed);
  }
  return std::max<Ns>(0, before - after);
}

// The thread (pid << 32 | tid) that launched each op of the view, 0 without a launch call.
std::vector<std::uint64_t> launchingThreads(const DeviceView& view) {
  std::vector<std::uint64_t> thread(view.ops().size(), 0);
  std::size_t position = 0;
  for (const ScopedOp& scoped : view.ops()) {
    const std::size_t at = position++;
    if (const auto call = view.launchCall(view.op(scoped))) {
      thread[at] = threadKey(view.call(*call));
    }
  }
  return thread;
}

// A call as an interval of its thread: the calls in progress at a time (OverlapIndex).
struct CallSpan {
  Ns start = 0;
  Ns end = 0;
  std::uint64_t thread = 0;
};

OverlapIndex<CallSpan> callSpans(const DeviceView& view, const std::vector<std::size_t>& calls) {
  std::vector<CallSpan> spans;
  for (std::size_t c : calls) {
    const RuntimeCall& call = view.call(c);
    spans.push_back({call.start, call.end, threadKey(call)});
  }
  return OverlapIndex<CallSpan>(spans);
}

// When another thread's copy from or to pageable memory that was in progress as `barrier` (a
// cudaMemset's call) began returned, if it returned before `barrier` did; else the call's start.
// A cudaMemset waits in its call for such a copy call of any thread, on any stream, to return,
// with or without the legacy barrier: on the lab's H100 traces (every variant of the 173
// re-recorded programs) 55 of 68 cudaMemset calls begun while another thread's pageable copy call
// waited returned after it (most 20-70 us after), and so did those of the nonblocking-streams
// variants, which have no blocking stream (g000180: 510 us, 53 us after the other thread's
// pageable DtoH returned). cudaMemcpy is not held so (297 of 339 returned before it).
// `pageable`: the pageable copy calls (pageableCopyCalls).
Ns heldByStagedCopy(const OverlapIndex<CallSpan>& pageable, const RuntimeCall& memset, const HostBarrier& barrier) {
  const std::uint64_t self = threadKey(memset);
  Ns held = barrier.start;
  // In progress as the call began: begun before it, ended after it began.
  pageable.forEachOverlapping(barrier.start, barrier.start, [&](const CallSpan& other) {
    if (other.end <= barrier.end && other.thread != self) held = std::max(held, other.end);
  });
  return held;
}

// A staged cudaMemcpy or cudaMemset on the legacy stream (its call returned before its op ended:
// the host timeline has it wait for the stream's previous op at most) first waited, under the
// barrier, for the last op of each blocking stream launched before it; the host timeline counts
// that wait as the call's own time. With those streams non-blocking the call no longer waits for
// other threads' work there (its own thread's it still follows: the fix synchronizes that stream
// first): it keeps the time after the last op it still waits for.
std::vector<CallChange> stagedBehindBlockingStreams(const DeviceView& view, const HostTimeline& host,
                                                    const std::map<std::uint32_t, BlockingStreamLaunches>& per_context) {
  std::map<std::size_t, std::size_t> legacy_position;  // launch call -> position
  for (std::size_t pos = 0; pos < view.ops().size(); ++pos) {
    if (!view.onLegacyDefaultStreamAt(pos)) continue;
    if (const auto call = view.launchCall(view.op(view.ops()[pos]))) legacy_position.emplace(*call, pos);
  }
  const std::vector<std::uint64_t> thread = launchingThreads(view);
  const OverlapIndex<CallSpan> pageable = callSpans(view, pageableCopyCalls(view));
  std::vector<CallChange> changes;
  for (const HostBarrier& barrier : host.barriers) {
    const ApiKind kind = view.callKind(barrier.call);
    if (kind != ApiKind::kMemcpySync && kind != ApiKind::kMemsetSync) continue;
    const auto position = legacy_position.find(barrier.call);
    if (position == legacy_position.end()) continue;
    const auto context = per_context.find(view.op(view.ops()[position->second]).context_id);
    if (context == per_context.end()) continue;
    if (std::find(barrier.waited_for.begin(), barrier.waited_for.end(), position->second) !=
        barrier.waited_for.end()) {
      continue;  // it waited for its own op, which the schedule moves
    }
    const RuntimeCall& call = view.call(barrier.call);
    const std::uint64_t self = threadKey(call);
    Ns still = barrier.start;
    for (std::size_t p : barrier.waited_for) still = std::max(still, view.ops()[p].end);
    if (kind == ApiKind::kMemsetSync) still = std::max(still, heldByStagedCopy(pageable, call, barrier));
    const BlockingStreamLaunches& streams = context->second;
    // A per-thread default stream stays blocking in the fix: the call still waits for its work.
    for (const std::uint64_t stream : streams.per_thread) {
      const auto p = lastLaunchedBefore(streams.per_stream.at(stream), barrier.start);
      if (p && view.ops()[*p].end <= barrier.end) still = std::max(still, view.ops()[*p].end);
    }
    Ns blocking = still;
    for (const auto& [stream, list] : streams.per_stream) {
      if (streams.per_thread.count(stream) != 0) continue;
      const auto p = lastLaunchedBefore(list, barrier.start);
      if (!p || view.ops()[*p].end > barrier.end || thread[*p] == self) continue;
      blocking = std::max(blocking, view.ops()[*p].end);
    }
    if (blocking > still) changes.push_back({barrier.call, true, barrier.end - blocking, 0});
  }
  return changes;
}

// The legacy ops whose launch call the barrier held: an op of another blocking stream it waited
// for (a barrier edge into it) ended after the call began and after the legacy stream's previous
// op, so the call waited for that stream's work, not its own stream's. While it waits the driver
// holds other threads' calls (contendedTime); with the created streams non-blocking it no longer
// waits there, and they no longer wait for it. `kept`: the barrier edges the fix keeps (from a
// per-thread default stream): the call still waits for those ops, as for the legacy stream's own.
std::vector<LegacyOp> heldByBarrier(const DeviceView& view, std::vector<LegacyOp> legacy,
                                    const std::vector<OrderEdge>& barriers, const std::vector<OrderEdge>& kept = {}) {
  std::vector<Ns> barrier_end(view.ops().size(), std::numeric_limits<Ns>::min());
  for (const OrderEdge& e : barriers) {
    barrier_end[e.to] = std::max(barrier_end[e.to], view.ops()[e.from].end);
  }
  std::vector<Ns> kept_end(view.ops().size(), std::numeric_limits<Ns>::min());
  for (const OrderEdge& e : kept) kept_end[e.to] = std::max(kept_end[e.to], view.ops()[e.from].end);
  std::sort(legacy.begin(), legacy.end(),
            [](const LegacyOp& a, const LegacyOp& b) { return a.launched < b.launched; });
  std::vector<LegacyOp> held;
  Ns stream_end = std::numeric_limits<Ns>::min();  // the legacy stream's previous op's end
  for (const LegacyOp& x : legacy) {
    if (barrier_end[x.position] > std::max({x.launched, stream_end, kept_end[x.position]})) held.push_back(x);
    stream_end = std::max(stream_end, view.ops()[x.position].end);
  }
  return held;
}

// What each call of `held` (heldByLegacyCopies) gets back in `fixed` beyond what `given` gives
// it: how much sooner its holder returns there than in `before` (the recorded program's
// schedule), less how much sooner the call itself begins (it would return that much sooner
// anyway), at most its excess.
std::vector<HostTimeGiven> releasedWithHolder(const std::vector<HeldByCopy>& held,
                                              const std::vector<HostTimeGiven>& given,
                                              const ScheduledHost& before, const ScheduledHost& fixed) {
  std::unordered_map<std::size_t, Ns> already;
  for (const HostTimeGiven& g : given) {
    if (g.in_call) already[g.call] += g.amount;
  }
  std::vector<HostTimeGiven> more;
  for (const HeldByCopy& h : held) {
    const auto b = before.call.find(h.holder);
    const auto f = fixed.call.find(h.holder);
    const Ns rb = before.release[h.position];
    const Ns rf = fixed.release[h.position];
    if (b == before.call.end() || f == fixed.call.end() || rb == std::numeric_limits<Ns>::min() ||
        rf == std::numeric_limits<Ns>::min()) {
      continue;
    }
    const auto a = already.find(h.call);
    const Ns given_back = a != already.end() ? a->second : 0;
    // Its op's release moved with the call's start (one released as its call returned also by
    // what the call no longer waits).
    const Ns begun_sooner = rb - rf - (h.released_at_return ? given_back : 0);
    const Ns sooner = std::min(h.excess, b->second.second - f->second.second - begun_sooner) - given_back;
    if (sooner > 0) more.push_back({h.call, sooner, /*in_call=*/true});
  }
  return more;
}

// Saving of the other fix: the created blocking streams made non-blocking (the lab's
// nonblocking-streams); the only one where the legacy stream has no asynchronous work (only
// cudaMemcpy and cudaMemset, which no created stream can take). The schedule with every barrier
// edge minus the schedule without them, except that a synchronous op still follows the work its
// own thread issued before it, which it may read (the fix synchronizes that stream first); the
// calls of other threads that waited behind a legacy call the barrier held get that time back.
Ns nonblockingSaving(const DeviceView& view, const std::vector<LegacyOp>& legacy,
                     const std::vector<OrderEdge>& barriers,
                     const std::map<std::uint32_t, BlockingStreamLaunches>& per_context, Ns handoff) {
  const HostTimeline& host = buildHostTimeline(view);
  const std::vector<OrderEdge> waits = waitEdges(streamWaits(view));
  std::vector<OrderEdge> recorded = waits;
  recorded.insert(recorded.end(), barriers.begin(), barriers.end());
  // A legacy-stream call held behind other threads' staged copies (staging_holds.h) stays held.
  const std::vector<StagingHold> holds = stagingHolds(view, recorded);
  const std::vector<OrderEdge> with_holds = withHoldEdges(recorded, holds);
  std::vector<OrderEdge> unused;
  const ScheduleModel model =
      keepHolds(ScheduleModel(view, host, with_holds), holds, [](const StagingHold&) { return true; }, unused);
  std::vector<bool> synchronous(view.ops().size(), false);
  for (const LegacyOp& x : legacy) synchronous[x.position] = x.synchronous;
  const std::vector<std::uint64_t> thread = launchingThreads(view);
  // A per-thread default stream stays blocking in the fix (no flag makes it non-blocking; the lab's
  // nonblocking-streams changes created streams only): its barrier edges stay, both ways.
  const std::vector<bool> per_thread = onPerThreadStream(view);
  std::vector<OrderEdge> kept = waits;
  std::vector<OrderEdge> dropped;        // the barrier edges the fix drops (or their thread's own)
  std::vector<OrderEdge> per_thread_kept;  // the edges from a per-thread stream's op
  std::vector<OrderEdge> own_work;  // into a synchronous op from its own thread's earlier work
  for (const OrderEdge& e : barriers) {
    if (per_thread[e.from] || per_thread[e.to]) {
      kept.push_back(e);
      if (per_thread[e.from]) per_thread_kept.push_back(e);
      continue;
    }
    dropped.push_back(e);
    if (synchronous[e.to] && thread[e.from] == thread[e.to]) own_work.push_back(e);
  }
  throughHost(view, handoff, own_work, 0);
  kept.insert(kept.end(), own_work.begin(), own_work.end());
  std::vector<CallChange> changed = stagedBehindBlockingStreams(view, host, per_context);
  std::vector<HostTimeGiven> given = contendedTime(view, heldByBarrier(view, legacy, dropped, per_thread_kept));
  barriersGivenBack(view, given, host, changed);
  kept = withHoldEdges(std::move(kept), holds);
  std::vector<Ns> earlier = hostTimeGivenBack(view, given, host);
  ScheduledHost recorded_times;
  const Ns before = spanWithTurns(model, HostTurns{}, with_holds, {}, {}, {}, &recorded_times);
  // Turns in the fixed schedule (schedule_turns.h): non-blocking streams do not end the legacy
  // stream's turns. In the fixed programs' own traces (/work/vtraces14, nonblocking-streams runs)
  // a call to a non-blocking stream begun while another thread's call to the legacy stream was
  // in progress took 25.9 µs (copies, median of 30; kernels 30.3 of 42), 34.7 beside a
  // synchronous legacy copy (103), against 4.1 alone and 5.6 beside non-blocking streams' calls.
  // So the calls the barrier no longer holds (heldByBarrier's, given back) and the others take
  // a turn where the fixed schedule begins them beside another thread's legacy call in progress:
  // a cudaMemcpy there while it holds (heldBySynchronousCopy), an asynchronous call for its last
  // turn (the rest of a long call was itself held); cudaMemset holds nothing (own-streams'
  // lab26-g9b paragraph).
  const std::size_t n = view.ops().size();
  HostTurns turns;
  recordLaunchCalls(view, given, turns);
  std::vector<std::uint8_t> candidate(n, 0);
  const std::vector<std::size_t> pageable = pageableCopyCalls(view);
  std::vector<std::uint8_t> on_legacy(n, 0);
  for (const LegacyOp& x : legacy) on_legacy[x.position] = 1;
  for (std::size_t p = 0; p < n; ++p) {
    const auto call = view.launchCall(view.op(view.ops()[p]));
    if (!call) continue;
    const ApiKind kind = view.callKind(*call);
    candidate[p] = !on_legacy[p] && kind != ApiKind::kMemcpySync && kind != ApiKind::kMemsetSync &&
                           !std::binary_search(pageable.begin(), pageable.end(), *call)
                       ? 1
                       : 0;
  }
  for (const HostBarrier& barrier : host.barriers) turns.call_thread[barrier.call] = threadKey(view.call(barrier.call));
  ScheduledHost times;
  Ns after = spanWithTurns(model, turns, kept, earlier, {}, changed, &times);
  // Legacy calls another thread's cudaMemcpy held return as it returns in this schedule.
  if (const std::vector<HeldByCopy> held = heldByLegacyCopies(view, legacy); !held.empty()) {
    const std::vector<HostTimeGiven> more = releasedWithHolder(held, given, recorded_times, times);
    if (!more.empty()) {
      given.insert(given.end(), more.begin(), more.end());
      changed = stagedBehindBlockingStreams(view, host, per_context);
      barriersGivenBack(view, given, host, changed);
      earlier = hostTimeGivenBack(view, given, host);
      recordLaunchCalls(view, given, turns);
      after = spanWithTurns(model, turns, kept, earlier, {}, changed, &times);
    }
  }
  const auto previous = previousLegacyOps(legacy, [](const LegacyOp&) { return true; });
  const auto own_time = ownCallTime(view, legacy, barriers);
  const auto legacyCalls = [&] {
    std::vector<BusyCall> busy;
    for (const LegacyOp& x : legacy) {
      const auto call = view.launchCall(view.op(view.ops()[x.position]));
      if (!call) continue;
      const ApiKind kind = view.callKind(*call);
      if (kind == ApiKind::kMemsetSync) continue;
      if (kind == ApiKind::kMemcpySync) {
        const auto t = times.call.find(*call);
        if (t != times.call.end()) {
          busy.push_back(heldBySynchronousCopy(view, times, x, previous.at(x.position), own_time.at(x.position),
                                             t->second.first, t->second.second));
        }
        continue;
      }
      const std::size_t p = x.position;
      if (times.release[p] == std::numeric_limits<Ns>::min()) continue;
      const auto [begins, ends] = asyncCallHolding(turns, p, times.release[p], times.recorded_release[p]);
      busy.push_back({begins, ends, x.thread});
    }
    return busy;
  };
  after = settleTurns(model, host, turns, kept, candidate, changed, earlier, times, after, legacyCalls);
  // Kernels slowed beside other streams' kernels that the fix runs beside none take their alone
  // run (kernels_alone.h, kernelsLeftAlone), as in sync-memcpy's fix.
  if (const std::vector<FasterOp> faster = kernelsLeftAlone(view, times); !faster.empty()) {
    after = spanWithTurns(model, turns, kept, earlier, faster, changed);
  }
  return std::max<Ns>(0, before - after);
}

// The fixes the finding advises that apply to the program, each with its saving, the larger
// first (the one the finding recommends): own-streams where some legacy op is asynchronous (a
// cudaMemcpy or cudaMemset stays on the legacy stream in any program), nonblocking-streams where
// the context has created blocking streams.
std::vector<FixSaving> fixSavings(const DeviceView& view, const std::vector<LegacyOp>& legacy,
                                  const std::vector<OrderEdge>& barriers,
                                  const std::map<std::uint32_t, BlockingStreamLaunches>& per_context) {
  std::vector<FixSaving> fixes;
  const bool asynchronous = std::any_of(legacy.begin(), legacy.end(),
                                        [](const LegacyOp& x) { return !x.synchronous; });
  // Both fixes hand a synchronous op off through the host behind its thread's work (throughHost).
  const Ns handoff = handoffThroughHost(view, buildHostTimeline(view));
  if (asynchronous) fixes.push_back({"own-streams", ownStreamsSaving(view, legacy, barriers, handoff)});
  // nonblocking-streams changes created streams: it does not apply where every blocking stream is
  // a per-thread default stream.
  if (std::any_of(per_context.begin(), per_context.end(), [](const auto& c) { return c.second.anyCreated(); })) {
    fixes.push_back({"nonblocking-streams", nonblockingSaving(view, legacy, barriers, per_context, handoff)});
  }
  std::stable_sort(fixes.begin(), fixes.end(),
                   [](const FixSaving& a, const FixSaving& b) { return a.saving_ns > b.saving_ns; });
  return fixes;
}

// The advice names the fixes in the order of what they save.
std::string advice(const std::vector<FixSaving>& fixes, bool threads_share) {
  std::vector<std::string> steps;
  for (const FixSaving& fix : fixes) {
    if (fix.fix == "own-streams") {
      steps.push_back(threads_share ? "give each host thread a created stream of its own "
                                      "(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking)) and "
                                      "issue its copies and kernels there"
                                    : "issue this work to a created stream");
    } else {
      steps.push_back("create the other streams with cudaStreamCreateWithFlags(&s, "
                      "cudaStreamNonBlocking)");
    }
  }
  if (fixes.empty()) steps.push_back("give each host thread a created stream of its own");
  steps.push_back("compile with --default-stream per-thread");
  std::string text = fmt::format("{}", fmt::join(steps.begin(), steps.end() - 1, ", "));
  text += fmt::format(", or {}", steps.back());
  text[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(text[0])));
  return text;
}

}  // namespace

std::optional<Finding> findLegacyDefaultStream(const DeviceView& view) {
  const std::vector<LegacyOp> legacy = legacyOps(view);
  if (legacy.empty()) return std::nullopt;
  const auto per_context = blockingLaunchesPerContext(view);
  const std::vector<std::size_t> shared = sharedByThreads(view, legacy);
  if (per_context.empty() && shared.empty()) return std::nullopt;
  FindingBuilder builder(view, "legacy-default-stream", Severity::kWarning);
  std::vector<OrderEdge> barriers;
  const auto& ops = view.ops();
  for (std::size_t pos = 0; pos < ops.size(); ++pos) {
    if (!view.onLegacyDefaultStreamAt(pos)) continue;
    const ScopedOp scoped = ops[pos];
    const GpuOp& op = view.op(scoped);
    const auto call = view.launchCall(op);
    if (!call) continue;
    if (std::binary_search(shared.begin(), shared.end(), pos)) {
      builder.add(Interval{scoped.start, scoped.end},
                  evidenceForOp(view, op, fmt::format("{} on the legacy default stream, which "
                                                      "another host thread's work also used",
                                                      describeOp(view, op))));
    }
    auto it = per_context.find(op.context_id);
    if (it == per_context.end()) continue;
    const Ns launched = view.call(*call).start;
    if (!it->second.inFlightAt(launched) && !it->second.launchedIn(launched, scoped.end)) continue;
    const std::size_t first_edge = barriers.size();
    // A cudaMemcpy or cudaMemset that returned before its op began (held in the driver behind
    // other threads' calls) entered the queue as it returned, after launches that began meanwhile.
    const bool blocking = view.callKind(*call) == ApiKind::kMemcpySync ||
                          view.callKind(*call) == ApiKind::kMemsetSync;
    it->second.addBarrierEdges(blocking ? submittedAt(view, *call, scoped.start) : launched, pos, barriers);
    if (!std::binary_search(shared.begin(), shared.end(), pos)) {
      builder.add(Interval{scoped.start, scoped.end},
                  evidenceForOp(view, op, fmt::format("{} on the legacy default stream while "
                                                      "other blocking streams had work",
                                                      describeOp(view, op))));
    }
    for (std::size_t e = first_edge; e < barriers.size(); ++e) {
      if (barriers[e].from != pos) continue;
      const auto ready = view.readyTime(barriers[e].to);
      const Ns start = ops[barriers[e].to].start;
      if (ready && *ready < start) builder.addRegion(Interval{std::max(*ready, scoped.start), start});
    }
  }
  setBarrierLags(view, barriers);
  const std::vector<FixSaving> fixes =
      builder.count() > 0 ? fixSavings(view, legacy, barriers, per_context) : std::vector<FixSaving>{};
  builder.estimateSaving(fixes.empty() ? 0 : fixes.front().saving_ns);
  builder.fixSaves(fixes);
  const std::string what =
      shared.empty() ? "acted as barriers for the other blocking streams of their context"
      : shared.size() == builder.count()
          ? "queued behind other host threads' work on the same stream"
          : "acted as barriers for the other blocking streams of their context or queued behind "
            "other host threads' work on the same stream";
  return builder.build(fmt::format("{} ops on the legacy default stream {}", builder.count(), what),
                       advice(fixes, !shared.empty()));
}

}  // namespace cuoverlap::diagnosis
