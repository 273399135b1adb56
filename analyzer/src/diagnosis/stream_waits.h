// The cudaStreamWaitEvent records of a device resolved to ops: for each wait, the op X it held
// back (the first op of the waiting stream launched after the wait call) and the op(s) Y it
// waited for. Shared by event-wait-serialization, cross-stream-kernel-wait and the what-if
// schedules of every serialization finding (which keep the waits that are real dependencies).
//
// Y is exact when the trace records CUDA events (our collector's CUPTI_ACTIVITY_KIND_CUDA_EVENT):
// R is the latest cudaEventRecord of the wait's event (same process) whose correlation id is below
// the wait's, and Y the last op of R's stream (same context) submitted before R was (submittedAt;
// R as its call returned); without such R or Y, or when Y is on the waiting stream, no producer.
// Traces without event records (nsys exports) fall back to timestamps: every op of another stream
// that ended at most 5 µs before X started is a candidate.
// Cost: O(w log n) for w waits over n ops, after an O(n log n) index.
#pragma once

#include <cstdint>
#include <optional>
#include <tuple>
#include <vector>

#include "diagnosis/device_view.h"
#include "diagnosis/schedule_estimate.h"

namespace cuoverlap::diagnosis {

struct StreamWait {
  const SyncEvent* wait = nullptr;
  std::size_t released = 0;                // X: position in view.ops()
  std::vector<std::size_t> waited_for;     // Y candidates (one when exact); empty = no producer
  bool exact = false;                      // from CUDA event records
  // When X could have started but for the wait: its launch call returned (for a call that blocks
  // the host, a synchronous copy or memset or a pageable copy, and returned after X started: when
  // the call began) and the previous op of its stream ended. Empty without a launch call. An
  // asynchronous op that started before its call returned was not held by the call.
  std::optional<Ns> ready;
  // How long after Y ends the wait releases X: the median over the view's waits that released
  // their X (X ready by Y's end, no other op ending in between) of the same Y and X engines, else
  // of all such waits, else the stream's handoff between those engines (DeviceView::streamHandoff).
  // On an H100 about 3 µs kernel to kernel (the stream's own handoff: 1.1-1.4 µs) and 6-12 µs from
  // a DtoH copy to an HtoD one: a dropped wait gives that back as well.
  Ns release_lag = 0;
};

// Every stream-wait-event record of the view's device that released an op, in record order.
std::vector<StreamWait> streamWaits(const DeviceView& view);

// Whether some Y of the wait plausibly produces what X reads in the usual data flow (copy-in ->
// kernel -> kernel -> copy-out), or X and Y use the same engine: a real dependency.
bool waitIsRealDependency(const DeviceView& view, const StreamWait& wait);

// Which of the waits marked in `droppable` (one flag per wait) must stay because they guard the
// reuse of a copy's buffer: a kernel K that waited for an HtoD copy C of another stream reads
// C's buffer, so the next HtoD copy C' of C's stream (which may write it again) must not start
// before K ended. When the program orders K before C' only through waits (stream order of K's
// stream, waits, stream order of C''s), dropping a wait that breaks every such path would let C'
// overwrite what K reads. Droppable waits are taken one at a time in record order, each kept when
// without it (and the ones already dropped) some such K no longer reaches its C'; the waits of
// the same event on the same stream (one call site, run again by a loop) are then kept in every
// round. Cost: per droppable wait, two searches (over the ops between K and C') per pair whose
// [K start, C' start] holds the wait's op, found by binary search over the pairs.
std::vector<bool> guardsBufferReuse(const DeviceView& view, const std::vector<StreamWait>& waits,
                                    const std::vector<bool>& droppable);

// A wait's call site: the waits of one event on one stream (pid, event, context, stream) are one
// call, run again by a loop's body.
using CallSite = std::tuple<std::uint32_t, std::uint64_t, std::uint32_t, std::uint32_t>;
CallSite callSite(const StreamWait& wait);

// Which waits a fix that drops call sites removes: each wait marked `eligible` whose call site
// (the waits of one event on one stream: one call, run again by a loop's body) has a wait marked
// `held` (it held its op back in the trace). The fix edits the code, so it drops every round of
// the call, also the rounds where the other waits happened to leave the op ready just in time,
// which without them would hold it (lab g007056: a 1-block kernel's wait for the end of another
// stream's chain, ~110 µs a round like its own, held it 10.0-10.8 µs in five of eight rounds and
// 9.6-9.8 in two; only the five were dropped, the claim 57 µs for 102 measured, now 103).
std::vector<bool> roundsOfHeldSites(const std::vector<StreamWait>& waits,
                                    const std::vector<bool>& eligible,
                                    const std::vector<bool>& held);

// Y -> X for every wait with a producer.
std::vector<OrderEdge> waitEdges(const std::vector<StreamWait>& waits);

}  // namespace cuoverlap::diagnosis
