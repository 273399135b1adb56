// Other threads' calls that an allocation or free call held in the driver (implicit-sync-call's
// heldByRemoved, blocking-sync-call's heldByMovedAllocations): a call of 50 µs or more holds the
// context's lock, and another thread's launch or asynchronous copy or memset that was in the
// driver meanwhile returns only after it. Where a what-if moves the holder, the calls it held
// return sooner unless the what-if's own schedule still begins them inside it (heldNoLonger).
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "diagnosis/device_view.h"
#include "diagnosis/host_time_given.h"
#include "diagnosis/host_timeline.h"
#include "diagnosis/schedule_estimate.h"
#include "diagnosis/schedule_turns.h"

namespace cuoverlap::diagnosis {

// Only calls of 50 µs or more hold: a shorter one lasts no longer than API calls that other
// threads' calls overlap and outlive anyway (of the other threads' launches and copies begun
// inside a launch or copy of 30-50 µs, 62% returned after it; inside an allocation or free of
// 30-50 µs, 72%; from 50 µs on the allocations and frees hold more, 53% at 50-100 µs and 21%
// beyond against 44% and 14%, and synchronizes 13% and 1%).
inline constexpr Ns kHoldingCallNs = 50'000;

// A call of kHoldingCallNs or more that holds other threads' calls from `locked` to its end.
struct Hold {
  Ns start = 0;
  Ns end = 0;
  Ns locked = 0;
  std::uint32_t pid = 0;
  std::uint32_t tid = 0;
  std::size_t call = 0;  // index into Trace::runtime_calls
};

// Holding calls: which of them a call of another thread began inside and outlived.
class Holds {
 public:
  explicit Holds(std::vector<Hold> holds) : holds_(std::move(holds)) {
    std::sort(holds_.begin(), holds_.end(), [](const Hold& a, const Hold& b) { return a.start < b.start; });
    by_end_.resize(holds_.size());
    for (std::size_t k = 0; k < holds_.size(); ++k) by_end_[k] = k;
    std::sort(by_end_.begin(), by_end_.end(),
              [&](std::size_t a, std::size_t b) { return holds_[a].end < holds_[b].end; });
  }
  bool empty() const { return holds_.empty(); }
  // Calls `f(hold)` for each hold of another thread of c's process that c was in the driver for
  // and outlived (it began inside the hold, or before it and was still in the driver when it
  // began), latest start first, until f returns true. A call already in the driver when the
  // holder locked the context returns only after it, as one begun inside it does: in the fixed
  // programs' own traces (/work/vt37/variants, every run of every variant) 115 of the 660
  // launches, copies and memsets of other threads in the driver when an allocation or free of
  // kHoldingCallNs or more began returned after it (a median 122 µs after; the rest got through
  // before its lock). Of the 18 asynchronous ones in baselines whose hoist-alloc run removed the
  // holder, 13 took 5-44 µs there (c5 g003018: main's and worker2's launches begun 9-31 µs
  // before worker0's 2.6 ms cudaMallocHost returned 3.5-3.8 ms later, 5-11 µs in the fixed
  // program); three were held there by the allocation the fix keeps before the loop.
  // Those are the holds that end inside c (after its start, before its end): found by their end,
  // so that holds spanning the whole trace (a thread's allocation or synchronize as long as the
  // run) cost a call nothing (walked by start, every call walked all of them: 75% of the analysis
  // of 128k launches beside 128k such calls, 8.8 s).
  template <typename F>
  void forEachHolding(const RuntimeCall& c, F f) const {
    auto it = std::upper_bound(by_end_.begin(), by_end_.end(), c.start,
                               [&](Ns t, std::size_t k) { return t < holds_[k].end; });
    std::vector<std::size_t> inside;
    for (; it != by_end_.end() && holds_[*it].end < c.end; ++it) {
      const Hold& h = holds_[*it];
      if (h.pid == c.pid && h.tid != c.tid) inside.push_back(*it);
    }
    std::sort(inside.begin(), inside.end(), std::greater<>());  // latest start first
    for (const std::size_t k : inside) {
      if (f(holds_[k])) return;
    }
  }

 private:
  std::vector<Hold> holds_;      // by start
  std::vector<std::size_t> by_end_;  // positions in holds_, by end
};

// Asynchronous work calls (launches, async copies and memsets) whose host memory was not
// pageable (`pageable`: sorted pageable copy calls): those a holding call of another thread can
// hold (a pageable copy blocks on its own).
inline bool holdable(const DeviceView& view, std::size_t call, const std::vector<std::size_t>& pageable) {
  const ApiKind kind = view.callKind(call);
  return (kind == ApiKind::kLaunch || kind == ApiKind::kMemcpyAsync || kind == ApiKind::kMemsetAsync) &&
         !std::binary_search(pageable.begin(), pageable.end(), call);
}

// A call that a holding call of another thread held, and what a what-if gives it back: the time
// from its start, or the holder's where it began before it, to its holder's return (it outlived
// the holder, so it waited for it all along).
struct HeldCall {
  HostTimeGiven given;     // in_call
  std::size_t position = 0;  // its op in view.ops()
  std::size_t holder = 0;    // Trace::runtime_calls index
};

// The holdable calls of the view's ops that a call of `holds` held (began inside it and outlived
// it; the longest hold where several did).
std::vector<HeldCall> callsHeldBy(const DeviceView& view, const Holds& holds);

// `removed` and `earlier` (a what-if's call changes and host time given back per op) with `held`
// given back where the fixed schedule no longer begins them inside their holder: scheduled with
// every hold given back, a held call that still begins while its holder is in progress there (its
// recorded start moved with its op's release) keeps its hold.
void heldNoLonger(const DeviceView& view, const HostTimeline& host, const ScheduleModel& model,
                  const std::vector<OrderEdge>& waits, const std::vector<HeldCall>& held,
                  std::vector<CallChange>& removed, std::vector<Ns>& earlier);

// Forward holds: the holds a what-if's own schedule makes. An allocation or free call of the
// timeline `host` that the schedule `times` runs for kHoldingCallNs or more (a cudaFree the
// what-if moves to a point where device work is still running, which it waits for) holds the
// holdable calls (`candidate`, per position; holdable's) of the other threads of its process
// that the schedule begins inside it: each returns only as the holder returns, its thread's
// later calls moving with it (addTurnDelays). In lab g000301's defer-read, worker1 runs ahead
// and frees its loop's buffer while its own 4 ms kernel still runs: the fixed program's cudaFree
// took 4.8 and 5.6 ms, and worker0's cudaMemcpyAsync begun 45 and 18 µs after each returned
// 36-100 µs after it, worker0's streams idle meanwhile; as recorded the frees came after the
// worker's synchronize and held nothing. Adds the delays to `changed` and `earlier`, clears
// `candidate` for the calls held (one hold per call); returns whether any was added.
bool addForwardHolds(const DeviceView& view, const HostTimeline& host, const HostTurns& turns,
                     const ScheduledHost& times, std::vector<std::uint8_t>& candidate,
                     std::vector<CallChange>& changed, std::vector<Ns>& earlier);

// The candidates of addForwardHolds: per position of view.ops(), whether its launch call is
// holdable (an asynchronous call of pinned or device memory).
std::vector<std::uint8_t> forwardHoldCandidates(const DeviceView& view);

}  // namespace cuoverlap::diagnosis
