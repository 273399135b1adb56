// Host time a what-if gives back to the threads that issued work: a call a fix removes (the later
// pieces of a merged copy), or the part of a call that waited for another thread (calls on the
// legacy default stream behind another thread's synchronous call). The thread's later launches,
// up to its next blocking call, are released that much sooner, and that blocking call begins that
// much sooner (its host loop runs faster); ops after it follow the call as before. A call that
// no longer waits also returns sooner, so its own op is released that much sooner too.
#pragma once

#include <unordered_map>
#include <vector>

#include "diagnosis/device_view.h"
#include "diagnosis/host_timeline.h"
#include "diagnosis/schedule_estimate.h"

namespace cuoverlap::diagnosis {

// Host time a what-if gives back to a thread: `amount` of call `call` (index into
// Trace::runtime_calls) no longer spent there (a call removed, or one that no longer waits for
// another thread's call); the thread's later host work runs that much sooner. `in_call`: the
// amount was spent inside the call, waiting (the call returns that much sooner and releases its
// own op sooner), not after it (a removed call's time, or host code between two launches, which
// only the later launches get back).
struct HostTimeGiven {
  std::size_t call = 0;
  Ns amount = 0;
  bool in_call = false;
};

// Per op position: the summed amounts of `given` that its launch's thread got back in calls that
// returned before that launch, since the thread's last blocking call, plus what its launch call
// itself no longer waits (`in_call`: the op is released when its call returns) (schedule_estimate.h,
// ScheduleModel::span's `earlier`).
std::vector<Ns> hostTimeGivenBack(const DeviceView& view, const std::vector<HostTimeGiven>& given,
                                  const HostTimeline& host);
// A kernel launch is asynchronous: its op cannot run before the call submits it, so a launch
// held in the driver behind another thread's call (the in-call amounts of `given`) submitted its
// op only after that hold, even where the op shows starting before the call returned (an op
// launched onto an idle stream starts within a few µs of its submission, and the call returns
// after that; the host's and the device's clocks disagree by as much). The schedule releases such
// an op at its call's start plus the time after its stream's previous op ended, or at its recorded
// start (ScheduleModel's submitted_late), which here is the hold; hostTimeGivenBack gives the hold
// back only to ops that started after their call returned. Where the op began after the held part
// of its call, this adds the hold to its `earlier` too (lab g000286: a worker's launch held 189 µs
// behind another thread's pinned `cudaMemcpy`, its kernel starting 0.6 µs before the call
// returned; the fixed program ran that kernel 158 µs sooner; g004081, a launch held behind another
// thread's `cudaFreeHost` that hoist-alloc removes). Copies keep hostTimeGivenBack's rule: an
// asynchronous copy from pageable memory or one that stages blocks in its call.
void launchesHeldBeforeSubmitting(const DeviceView& view, const std::vector<HostTimeGiven>& given,
                                  std::vector<Ns>& earlier);
// The rule above for any calls: `held` maps a call to the hold it no longer waits; each op of such
// a call that started inside the call, after the hold, is released that much sooner.
void opsHeldInCallReleasedSooner(const DeviceView& view, const std::unordered_map<std::size_t, Ns>& held,
                                 std::vector<Ns>& earlier);
// Each blocking call of a thread that got host time back since its previous blocking call begins
// that much sooner (the host loop runs faster), as a CallChange that keeps the call's waits and
// own time; merged into `changed` (an existing change of the call keeps its waits and own time and
// takes this `earlier`).
void barriersGivenBack(const DeviceView& view, const std::vector<HostTimeGiven>& given,
                       const HostTimeline& host, std::vector<CallChange>& changed);

}  // namespace cuoverlap::diagnosis
