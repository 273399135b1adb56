// Kernels that ran slowed beside other streams' kernels in the trace, given back the duration the
// same kernel took where nothing ran beside it when a what-if schedule moves them away from what
// slowed them. Shared by blocking-sync-call's deferred schedule, sync-memcpy's and sync-memset's
// fixed schedule, legacy-default-stream's two fixes and pageable-memcpy's schedule with turns
// (kernelsLeftAlone) and the stream-wait rules' schedules (kernelsFreedOfSlotHolders).
#pragma once

#include <vector>

#include "diagnosis/device_view.h"
#include "diagnosis/schedule_estimate.h"
#include "diagnosis/schedule_turns.h"

namespace cuoverlap::diagnosis {

// The kernels the deferral leaves alone, with the duration they took alone. A thread that no
// longer waits for another's work at each step moves its kernels away from that thread's, which
// then run as fast as they did alone (g000061: worker 2's one-block kernel over 1.1 MiB ran 4.0 ms
// where nothing ran beside it and 6.8-7.0 ms beside worker 1's kernels, which the deferral moves
// 20 ms sooner; the fixed program saved 6.4 ms, the what-if with recorded durations 3.0). A
// kernel that ran beside other streams' kernels for at least half its time, took more than 1.25
// times the shortest run of the same kernel (name, grid, stream) that ran beside none (under 5%
// of its time: the runs of one kernel differ by run, and 1.25x is the slowdown the lab's
// neighbour-slowed kernels show), and that `deferred` (op_end per position) runs beside none
// takes that shortest run. One that took more than twice it is not the same work (the lab's
// kernels share a name, and two threads' kernels sharing the device each get at least half of
// it): it keeps its duration. The lab is not sensitive to these: 1.1-1.4x, 1.8-3x, a half of
// 0.3-0.8 and alone under 2-5% move the same cases.
std::vector<FasterOp> kernelsLeftAlone(const DeviceView& view, const ScheduledHost& deferred);

// The kernels that ran slowed beside kernels holding SM slots they needed and that `moved` (a
// schedule's host times) runs beside none of those, with the duration they took alone. A kernel
// whose SM share and another stream's kernel's add up to more than the device (a full wave beside
// a few resident blocks) cannot place all its blocks at once: its blocks that found no slot run
// a round later, so it ran longer than alone (g000182: worker 0's 1056-block kernel, 216 µs
// alone, ran 308 beside the main thread's 2-block kernels). The what-if keeps that duration and
// holds the device for all of it, so where the schedule starts the kernel before those holders
// (dropped waits let it), the holders wait behind a kernel that no longer has them beside it.
// Such a kernel (the same conditions as kernelsLeftAlone's: slowed 1.25-2x against its alone
// run, and beside holders for at least half its time) that `moved` runs beside none of the
// kernels that held its slots for over 5% of its time takes its alone run; any other kernel it
// meets there is the schedule's to share the SMs with. Kernels slowed beside kernels whose shares
// fit the device together (memory bandwidth, not slots) keep their duration: what slowed them
// (copies too) the schedule does not see.
std::vector<FasterOp> kernelsFreedOfSlotHolders(const DeviceView& view, const ScheduleModel& model,
                                                const ScheduledHost& moved);

// model.span(edges), scheduled again with the kernels that schedule frees of their slot holders
// taking their alone runs (kernelsFreedOfSlotHolders).
Ns spanFreedOfSlotHolders(const DeviceView& view, const ScheduleModel& model,
                          const std::vector<OrderEdge>& edges);

}  // namespace cuoverlap::diagnosis
