// The two fixes single-stream prices for one stream's loop, each as a what-if schedule of the
// device (schedule_estimate.h) with the host modelled (host_timeline.h), minus the schedule as
// recorded:
//   - the split (the lab's multi-stream): the stream's chunks issued round-robin to three
//     streams, right where the chunks are independent;
//   - the copy-ahead (the lab's copy-ahead): the stream's input copies on a stream of their own,
//     double-buffered, the kernels kept in order on their stream: right for any loop, an
//     accumulator's too.
// Cost: one schedule each, O((n + e) log n) over the device's n ops.
#pragma once

#include <cstdint>
#include <vector>

#include "diagnosis/device_view.h"
#include "diagnosis/host_timeline.h"
#include "diagnosis/schedule_estimate.h"

namespace cuoverlap::diagnosis {

struct StagingHold;  // staging_holds.h

// A copy between host and device (HtoD or DtoH), from pinned, pageable or unknown host memory:
// the split's advice pins pageable buffers (its what-if runs such copies at the pinned rate,
// pinnedCopies in single_stream_advice.h).
bool hostDeviceTransfer(const GpuOp& op);

// `keys` (per position in view.ops()) say which stream's work each op is (workStreams,
// single_stream_advice.h: a thread's synchronous copies count with its kernels' stream).

// The stream's chunks: a chunk starts at each host-to-device copy that follows a kernel or a
// device-to-host copy (ops before the first chunk go with it). Per position in view.ops(), the
// chunk of an op of the stream (-1 for other streams' ops); empty when the stream holds fewer
// than two chunks: then no loop shows how to cut.
std::vector<std::int64_t> chunksOf(const DeviceView& view, const std::vector<std::uint64_t>& keys,
                                   std::uint64_t stream);

// The split's lanes: chunk c of the stream's last loop on stream c % 3 (lanes above every stream
// key in use); where a loop of other steps came before it on the stream, those chunks stay on the
// stream (the fix splits one loop: lastLoopFirstChunk), other streams' ops on theirs. Empty without
// two chunks.
std::vector<std::uint64_t> chunkLanes(const DeviceView& view, const std::vector<std::uint64_t>& keys,
                                      std::uint64_t stream);

// What splitting `stream`'s chunks over three streams saves (0 without two chunks). `model` is
// the recorded schedule with `host` and `order`, the program's order (programOrderEdges: `waits`
// and the legacy stream's barriers), which the schedule before the split keeps; `waits` the event
// waits the split keeps, besides the legacy stream's barriers as its lanes have them
// (splitBarriers). Each lane has its own device buffers: the kernels of a lane's first run of a
// step of the loop take the step's first run's durations where those were longer (its buffers not
// in the caches yet). `pin`: with the advice's pinned buffers; without, its pageable copies as they
// ran (the part of the saving that is not pinning's, pageable-memcpy's fix). `kernels_in_order`:
// the stream's kernels keep their order across the lanes (a stream that ran beside other
// streams' work: the SMs its lanes' kernels would share are the other work's already).
// The lanes have the legacy stream's barriers as the split leaves them (splitBarriers).
// `others_freed`: other threads' calls the split's copies and legacy calls held get their time
// back (heldBySplitCopies, heldBySplitLegacyCalls); without, the split's own loop alone moves (its
// lanes, its calls asynchronous, its copies pinned): the rule prices the split with them, tests
// take the two apart.
// `holds`: the legacy-stream calls held behind other threads' staging (stagingHolds of `order`),
// which both schedules keep except where the split issues the held call asynchronously itself.
Ns splitSaving(const DeviceView& view, const std::vector<std::uint64_t>& keys, const HostTimeline& host,
               const ScheduleModel& model, const std::vector<OrderEdge>& waits,
               const std::vector<OrderEdge>& order, const std::vector<StagingHold>& holds,
               std::uint64_t stream, bool pin = true,
               bool kernels_in_order = false, bool others_freed = true);

// What copying `stream`'s input one chunk ahead saves (0 without two chunks). `pin`: its pageable
// input copies pinned, as the advice has them (pinnedCopies); without, as they ran (the part of
// the saving that is not pinning's, pageable-memcpy's fix).
Ns copyAheadSaving(const DeviceView& view, const std::vector<std::uint64_t>& keys, const HostTimeline& host,
                   const ScheduleModel& model, const std::vector<OrderEdge>& waits, std::uint64_t stream,
                   bool pin = true);

}  // namespace cuoverlap::diagnosis
