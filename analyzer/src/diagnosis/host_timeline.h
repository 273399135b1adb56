// The host side of the what-if schedule (schedule_estimate.h): per host thread, the calls that
// blocked until device work finished — explicit synchronizes, synchronous copies and memsets,
// copies from pageable memory, and allocation and free calls — and, per op, the blocking call its launch followed. With them the
// schedule can let a host thread run ahead when the device finishes sooner: a training step that
// synchronizes is released as soon as the previous step's work would have ended.
//
// A blocking call B [s, r) on thread T waited for W, the ops it depends on (its own op for a copy
// or memset; the last op issued before s on the synchronized stream, on every stream of the
// process for a device synchronize or an allocation or free call — none for a pinned host
// allocation, cudaMallocHost, which pins pages without waiting for GPU work, nor for a device
// allocation, cudaMalloc — on the recorded
// stream for an event synchronize). In the trace W ended at w. The part of B not spent waiting, own = r - w when W was in flight (w > s, the
// wake-up latency), else r - s. A call that returned before W ended (w > r: a pageable HtoD
// cudaMemcpy returns once the host has staged the data) waited for none of it: W is dropped and
// own = r - s; but a staged copy that began while its thread's previous staged copy of its stream the same way was held, and
// returned after that ended, waited for it (W is that copy: the driver stages a stream's copies one after another); one whose
// own copy a stream wait held when it began, released before it returned, waited for that copy (W, own 0). In a what-if schedule B returns at max(s', end of W') + own, where
// s' = the return of T's previous blocking call + (s - its recorded return): host work between
// calls keeps its length. An op launched by T after B returned is released at B's what-if return
// plus (its recorded release - r). Ops launched before T's first blocking call keep their release.
// A thread with no blocking call of its own (PyTorch's autograd thread, which launches backward
// while the main thread waits in backward()) is driven by the others: its launches follow the
// process's last blocking call that returned before them.
// Without calls (nsys exports without API data) the timeline is empty and the schedule as before.
#pragma once

#include <cstdint>
#include <vector>

#include "diagnosis/device_view.h"

namespace cuoverlap::diagnosis {

struct HostBarrier {
  std::size_t call = 0;                  // index into Trace::runtime_calls
  Ns start = 0;
  Ns end = 0;
  Ns own = 0;                            // the part of the call not spent waiting for W
  std::vector<std::size_t> waited_for;   // W: positions in view.ops()
  std::int64_t previous = -1;            // the thread's previous barrier
  // A staged copy (pageable) that returned before its op ended: it waited for nothing the
  // schedule knows, or (W) for the stream's previous staged copy to leave the staging buffer.
  bool staged = false;
};

struct HostTimeline {
  std::vector<HostBarrier> barriers;     // per thread in start order, threads one after another
  std::vector<std::int64_t> barrier_of;  // per op position: the barrier its launch followed (its
                                         // thread's, else its process's), -1 for none
  bool empty() const { return barriers.empty(); }
};

// Builds the timeline of the view's ops. `pageable_copy_calls`: calls (indices into
// Trace::runtime_calls, sorted) of asynchronous copies that were synchronous to the host because
// their memory was pageable. Empty when resolving every wait would cost more than a few edges per
// op (then the schedule ignores the host, as before). `stream_held_staging`: a staged copy whose
// call waited for its own stream's previous op to run it waited for its copy (it returns as the
// copy ends), not its own time (asynchronousFixSaving's; the others keep it as the call's own).
HostTimeline buildHostTimeline(const DeviceView& view,
                               const std::vector<std::size_t>& pageable_copy_calls,
                               bool stream_held_staging = false);
// The same with the view's own pageable copy calls (every copy whose host memory is pageable):
// built on the view's first question and kept (about fifteen rules ask for it).
const HostTimeline& buildHostTimeline(const DeviceView& view);
// The launch calls of the view's copies from or to pageable memory, sorted.
std::vector<std::size_t> pageableCopyCalls(const DeviceView& view);


}  // namespace cuoverlap::diagnosis
