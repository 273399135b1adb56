// legacy-default-stream's model of host threads that share the legacy default stream
// (rules/legacy_default_stream.cpp): how long each thread's calls waited for other threads'
// blocking calls there, time that its fix (each thread's work on a stream of its own) gives back.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <vector>

#include "diagnosis/device_view.h"
#include "diagnosis/host_time_given.h"
#include "diagnosis/host_timeline.h"
#include "diagnosis/schedule_estimate.h"
#include "diagnosis/schedule_turns.h"

namespace cuoverlap::diagnosis {

// An op of the view on the legacy default stream, with its launching thread.
struct LegacyOp {
  std::size_t position = 0;
  std::uint64_t thread = 0;  // pid << 32 | tid of the launch call
  Ns launched = 0;
  bool synchronous = false;  // cudaMemcpy, cudaMemset: no stream to move them to
};

// The view's ops on the legacy default stream that have a launch call, in the view's order.
std::vector<LegacyOp> legacyOps(const DeviceView& view);

// The asynchronous copy calls among `calls` (to a created stream) that overlapped, as recorded, an
// asynchronous call of another thread that launched an op on the legacy default stream: pinned,
// they still take turns with it (kLegacyTurnNs), not the kAsyncCopyCallNs of a call alone. Per
// such call, its recorded time within those two.
std::map<std::size_t, Ns> callsTakingTurns(const DeviceView& view, const std::vector<std::size_t>& calls);

// Another thread's cudaMemcpy (a synchronous copy on the legacy default stream) holds a pinned
// cudaMemcpyAsync to a created stream for a turn where the call begins in its holding part: its
// last kSynchronousCopyHoldNs before its copy starts, the copy's run and its return. In the lab's
// H100 traces (the fixed programs' own traces /work/vt37, the baseline and pin-host runs of its
// 241 programs), the pinned cudaMemcpyAsync calls to created streams begun beside other threads'
// copy calls only to created streams took 5.1 us (median of 1370; 6.8 beside two or more, 273)
// against 3.8 alone (11610): no turn; beside another thread's asynchronous legacy-stream call 20.7-
// 22.8 (630: the legacy turn, kLegacyTurnNs); beside a cudaMemcpy 27-33, two populations: begun in
// its last 16 us before its DMA started or in the DMA, 31.5 us (median of 764 over 13 programs,
// quartiles 27.4-34.8; 96-99% of them 15 us or more), begun earlier, while it waited for the
// device, 7.1-7.8 (712: a third held, the staged ones). 8-24 us score alike (lab c1-c9).
inline constexpr Ns kSynchronousCopyHoldNs = 16'000;
// What such a held call takes where the trace has too few of its own (turnBesideSynchronousCopies):
// 31.5 us, the median above; 24-36 us score alike.
inline constexpr Ns kBesideSynchronousCopyNs = 32'000;

// What a pinned cudaMemcpyAsync to a created stream took as recorded where it began in another
// thread's cudaMemcpy's holding part: their median where the trace has 8 or more, else
// kBesideSynchronousCopyNs (the lab's programs: 23-29 us where they have them).
Ns turnBesideSynchronousCopies(const DeviceView& view);

// Those calls as recorded (pinned cudaMemcpyAsync to created streams begun in another thread's
// cudaMemcpy's holding part): their launch call (Trace::runtime_calls index) and recorded time.
std::vector<std::pair<std::size_t, Ns>> heldBesideSynchronousCopies(const DeviceView& view);

// The holding parts of the view's cudaMemcpy calls as the schedule `times` ran them (their
// copies' runs `faster`'s where it has one), less those `changed` no longer has wait (made
// asynchronous by the fix).
std::vector<BusyCall> synchronousCopiesHolding(const DeviceView& view, const ScheduledHost& times,
                                               const std::vector<FasterOp>& faster,
                                               const std::vector<CallChange>& changed);

// `after`, a span of spanWithTurns whose host `times` holds, scheduled again while the calls of
// `candidate` (per position: pinned asynchronous calls to created streams, with their call in
// `turns`) that the schedule begins in another thread's cudaMemcpy's holding part take a turn
// (turnBesideSynchronousCopies), their thread's later calls moving with them. Each round decides
// the turns afresh in the previous round's schedule (as withTurnsInSchedule, pageable_memcpy.cpp),
// until they repeat or kTurnRounds: keeping every earlier round's turns (settleTurns) turned
// 204-293 of lab g000071's calls in the what-if of its vt37 baseline run, where its pinned run has
// about 100 held (77 in a holding part, 99% of them held, and 15% of the 175 begun earlier);
// afresh, 103-113. `earlier`, `changed` and `times` come out as that schedule's.
Ns withTurnsBesideSynchronousCopies(const DeviceView& view, const HostTimeline& host, const ScheduleModel& model,
                                    const HostTurns& turns, const std::vector<OrderEdge>& edges,
                                    const std::vector<std::uint8_t>& candidate, const std::vector<FasterOp>& faster,
                                    std::vector<Ns>& earlier, std::vector<CallChange>& changed,
                                    ScheduledHost& times, Ns after);

// The latest end seen so far of the two threads with the latest ends: enough to know whether any
// thread other than a given one still had something in flight (per-thread ends only grow).
class LatestOfTwoThreads {
 public:
  void add(std::uint64_t thread, Ns end) {
    if (thread == first_.thread) {
      first_.end = std::max(first_.end, end);
    } else if (end > first_.end) {
      second_ = first_;  // first.end >= second.end: the old first is the runner-up either way
      first_ = {thread, end};
    } else if (thread == second_.thread) {
      second_.end = std::max(second_.end, end);
    } else if (end > second_.end) {
      second_ = {thread, end};
    }
  }
  // The latest end of any thread but `thread`.
  Ns otherThan(std::uint64_t thread) const { return first_.thread != thread ? first_.end : second_.end; }

 private:
  struct Latest {
    std::uint64_t thread = 0;
    Ns end = std::numeric_limits<Ns>::min();
  } first_, second_;
};

// Calls of several host threads, each [start, end) with its thread: whether a call of another
// thread overlapped a span, O(log n) a question (the calls by start, with the latest ends of the
// two latest threads over each prefix).
class OtherThreadCalls {
 public:
  struct Call {
    Ns start = 0;
    Ns end = 0;
    std::uint64_t thread = 0;  // pid << 32 | tid
  };
  explicit OtherThreadCalls(std::vector<Call> calls);
  bool empty() const { return calls_.empty(); }
  // Whether a call of a thread other than `thread` began before `end` and ended after `start`.
  bool overlap(Ns start, Ns end, std::uint64_t thread) const;

 private:
  std::vector<Call> calls_;               // by start
  std::vector<LatestOfTwoThreads> latest_;  // over each prefix of calls_
};

// The part of each asynchronous call (to the legacy stream or any other) that waited for another
// thread's call on the legacy stream (a blocking call there, or a launch there); see
// legacy_threads.cpp.
// With `legacy_beside_any` (own-streams' fix, which takes the legacy calls off the legacy stream),
// an asynchronous call of `legacy` also waited where it overlapped another thread's launch to a
// created stream: the two took turns, and both get their excess back (lab g005053).
std::vector<HostTimeGiven> contendedTime(const DeviceView& view, const std::vector<LegacyOp>& legacy,
                                         bool legacy_beside_any = false);
// A thread's typical time for a call of a kind where others' calls held some: the median of its
// calls that nothing held (`alone`), or where there is none the shortest of those held
// (`contended`, not empty). timeHeldByStaging's and host-launch-bound's held calls keep it.
Ns typicalTime(const std::vector<Ns>* alone, const std::vector<Ns>& contended);
// An asynchronous call to the legacy stream that another thread's cudaMemcpy there held in the
// driver until that call returned.
struct HeldByCopy {
  std::size_t call = 0;              // the held call
  std::size_t holder = 0;            // the other thread's cudaMemcpy call
  std::size_t position = 0;          // the held call's op
  bool released_at_return = false;   // its op started after its call returned
  Ns excess = 0;
};
// The calls of `legacy` that another thread's cudaMemcpy held (each with the copy's call and its
// excess, as contendedTime gives it); see legacy_threads.cpp.
std::vector<HeldByCopy> heldByLegacyCopies(const DeviceView& view, const std::vector<LegacyOp>& legacy);

// Blocking calls (in `host`) that took turns with another thread's under the legacy barrier,
// shortened to their own time; see legacy_threads.cpp.
std::vector<CallChange> contendedBarriers(const DeviceView& view, const HostTimeline& host);
// Staged calls (a copy from pageable memory, to any stream) that overlapped another thread's call
// of `held` (indices into Trace::runtime_calls, sorted: synchronous calls on the legacy stream,
// which hold the context while they wait) and took longer than their thread's staged calls of
// their kind that overlapped none, shortened to that typical time (a fix that takes `held` off
// the legacy stream: sync-memcpy's).
std::vector<CallChange> stagedCallsBehind(const DeviceView& view, const HostTimeline& host,
                                          const std::vector<std::size_t>& held);

// A staged call (a copy from or to pageable memory) while it held other threads' calls: [start,
// end) as recorded, of which [released_from, end) is what the fix (pinning) takes away.
struct StagedHold {
  Ns start = 0;
  Ns end = 0;
  Ns released_from = 0;
  std::uint64_t thread = 0;  // pid << 32 | tid
};

// What the other threads' calls get back when those holds end sooner.
struct HeldTime {
  std::vector<HostTimeGiven> given;  // calls that are not blocking calls of `host`
  std::vector<CallChange> changed;   // blocking calls, their own time shortened
};

// Calls (other than `staged`: indices into Trace::runtime_calls, sorted) that another thread's
// staged call held: one of `holds` overlapped the call's part not spent waiting for device work
// (in progress when it began, or begun during it, except for a call that maps or unmaps host
// pages) and ended before it returned. Each gets back the part of its time that the holds of
// other threads covered with what the fix takes away, keeping at least the typical time of its
// kind; see legacy_threads.cpp.
HeldTime timeHeldByStaging(const DeviceView& view, const HostTimeline& host,
                           const std::vector<StagedHold>& holds, const std::vector<std::size_t>& staged);

}  // namespace cuoverlap::diagnosis
