// Turns on the legacy stream in a what-if's own schedule (docs/findings.md, blocking-sync-call's
// lab25-g9 and lab26-g9b paragraphs). A host call (a small pinned cudaMemcpyAsync, a launch)
// takes about 4-6 µs alone or beside other threads' calls to created streams, but about one turn
// (kLegacyTurnNs, 22-27 µs measured over the lab's traces, scripts/lab_call_turns.py) when another
// thread's call to the legacy stream is in progress as it begins: the driver orders a legacy-stream
// op after every blocking stream of the context, and the threads' calls alternate. A fix that moves
// one thread's calls off the legacy stream while another thread stays on it makes calls contended
// that were not as recorded (their thread waited in a synchronous call instead), so whether a call
// is beside a legacy call must be read from the what-if's schedule, not the recorded overlaps.
#pragma once

#include <algorithm>
#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

#include "diagnosis/host_time_given.h"
#include "diagnosis/schedule_estimate.h"

namespace cuoverlap::diagnosis {

// One turn on the legacy stream between threads: how long a pinned cudaMemcpyAsync to a created
// stream takes while another thread issues asynchronous calls to the legacy default stream beside
// it (the driver orders each legacy-stream op after every blocking stream of the context, and the
// two threads' calls take turns, each call lasting about one turn whatever its memory). The lab's
// H100 pinned runs (the fixed programs' own traces, pin-host of the `threads` programs): such calls
// took 21-29 us (median per program; g000108 21.1, g000235 23.2, g000304 23.9, g000359 24.7,
// g000045 25.2, g000308 29.3; 24 the median of those) against 3-10 us for the same programs'
// pinned calls that overlapped none; legacy-default-stream's g000360 about 25 us. A call that
// took less as recorded keeps its time.
inline constexpr Ns kLegacyTurnNs = 24'000;

// What the schedule needs to tell who is beside whom.
struct HostTurns {
  // Per position of view.ops(): the thread that launched it (0: unknown), whether its launch call
  // is an asynchronous call that holds other threads' calls while in progress in the what-if (one
  // to the legacy stream where the fix keeps calls to created streams, one to a created stream
  // where it keeps synchronous calls on the legacy stream), and that call's start (less the time
  // the fix no longer holds it in the driver) and end as recorded: the what-if moves them with
  // the op's release. A held call holds others for its last turn only.
  std::vector<std::uint64_t> op_thread;
  std::vector<std::uint8_t> op_holds;
  std::vector<Ns> op_call_start;
  std::vector<Ns> op_call_end;
  // Blocking calls (Trace::runtime_calls index) of the host timeline: their thread, and whether
  // they hold other threads' calls while in progress (a synchronous legacy-stream call).
  std::unordered_map<std::size_t, std::uint64_t> call_thread;
  std::unordered_map<std::size_t, std::uint8_t> call_holds;
  // Blocking calls that take a turn where the schedule begins them while another thread's
  // holding call is in progress (begun no later, lasting 2 µs past it): the time they then take
  // at least.
  std::unordered_map<std::size_t, Ns> turn;
};

// When a schedule ran the host: per position the op's release (the minimum of Ns where it has
// none), per blocking call (Trace::runtime_calls index) when it began and returned.
struct ScheduledHost {
  std::vector<Ns> release;
  std::vector<Ns> recorded_release;  // per position: the model's release as recorded
  std::vector<Ns> op_end;            // per position: when the op ended (the minimum of Ns: not run)
  std::unordered_map<std::size_t, std::pair<Ns, Ns>> call;
  // Per node (the ops' positions, then the blocking calls'): the predecessor whose end set its
  // ready time last (-1: its own release), and when it ended (the minimum of Ns: not run); per
  // blocking call node (less the ops), its call (Trace::runtime_calls index).
  std::vector<std::int64_t> binder;
  std::vector<Ns> node_end;
  std::vector<std::size_t> node_call;
};

// Sizes turns.op_thread, op_call_start and op_call_end to the ops and fills them for each op with
// a launch call: its thread, its call's start less the time the fix gives back inside the call
// (`given`: held in the driver; never past its end) and its end, as recorded.
void recordLaunchCalls(const DeviceView& view, const std::vector<HostTimeGiven>& given, HostTurns& turns);

// ScheduleModel::span(edges, earlier, faster, changed) with the calls of `turns.turn` taking
// their turn where the schedule begins them beside another thread's legacy-stream call; with
// `times`, when that schedule ran the host.
Ns spanWithTurns(const ScheduleModel& model, const HostTurns& turns, const std::vector<OrderEdge>& edges,
                 const std::vector<Ns>& earlier, const std::vector<FasterOp>& faster,
                 const std::vector<CallChange>& changed, ScheduledHost* times = nullptr);

// A call in progress in a schedule: [begin, end) of `thread`.
struct BusyCall {
  Ns begin = 0;
  Ns end = 0;
  std::uint64_t thread = 0;
};

// The asynchronous calls of `candidate` (per position) that the schedule `times` begins while
// another thread's call of `busy` is in progress (begun no later, lasting 2 µs past it) take a
// turn (kLegacyTurnNs) where their call (turns.op_call_start/end) took less: their thread's
// later calls up to its next blocking call, and that call, move by what the turn adds (a later
// call of the thread is tested where those turns put it: one they carry past the busy call's end
// takes none). Adds the
// delays to `earlier` (negative: later; sized to the ops where empty) and `changed`; returns
// whether there were any.
bool addTurnsBeside(const HostTimeline& host, const HostTurns& turns, const ScheduledHost& times,
                    const std::vector<BusyCall>& busy, std::vector<std::uint8_t>& candidate,
                    std::vector<CallChange>& changed, std::vector<Ns>& earlier, Ns turn = kLegacyTurnNs);

// Op p's call takes `delay[p]` longer (per position): its thread's later calls up to its next
// blocking call, and that call, move with it (addTurnsBeside's second half). Adds to `earlier`
// (negative: later; sized to the ops where empty) and `changed`.
void addTurnDelays(const HostTimeline& host, const HostTurns& turns, const std::vector<Ns>& delay,
                   std::vector<CallChange>& changed, std::vector<Ns>& earlier);

// The part of the asynchronous call of op `p` that holds other threads' calls in a schedule that
// released the op at `release` (`recorded_release` as recorded): its recorded call moved with the
// op's release, for its last turn only (the rest of a long call was itself held in the driver:
// lab g000188's launches held 3-4 ms). [begin, end).
inline std::pair<Ns, Ns> asyncCallHolding(const HostTurns& turns, std::size_t p, Ns release, Ns recorded_release) {
  const Ns ends = release + (turns.op_call_end[p] - recorded_release);
  return {std::max(release + (turns.op_call_start[p] - recorded_release), ends - kLegacyTurnNs), ends};
}

// How often a what-if adds turns and schedules again: each call takes one turn at most, and the
// lab's programs settle in two rounds.
inline constexpr int kTurnRounds = 4;

// `after`, a span of spanWithTurns whose host `times` holds, scheduled again while the calls of
// `candidate` begun beside a call of `busyCalls()` (the BusyCall list of that schedule) take a turn
// (addTurnsBeside): their thread's later calls move with them, which can put other calls beside a
// busy one, so until no call is added or kTurnRounds. `faster`: as spanWithTurns'.
template <class BusyCalls>
Ns settleTurns(const ScheduleModel& model, const HostTimeline& host, const HostTurns& turns,
               const std::vector<OrderEdge>& edges, std::vector<std::uint8_t>& candidate,
               std::vector<CallChange>& changed, std::vector<Ns>& earlier, ScheduledHost& times, Ns after,
               const BusyCalls& busyCalls, const std::vector<FasterOp>& faster = {}, Ns turn = kLegacyTurnNs) {
  for (int round = 0; round < kTurnRounds; ++round) {
    if (!addTurnsBeside(host, turns, times, busyCalls(), candidate, changed, earlier, turn)) break;
    after = spanWithTurns(model, turns, edges, earlier, faster, changed, &times);
  }
  return after;
}

}  // namespace cuoverlap::diagnosis
