// Host time a what-if gives back to the threads that issued work: a call a fix removes (the later
// pieces of a merged copy), or the part of a call that waited for another thread (calls on the
// legacy default stream behind another thread's synchronous call). The thread's later launches,
// up to its next blocking call, are released that much sooner, and that blocking call begins that
// much sooner (its host loop runs faster); ops after it follow the call as before. A call that
// no longer waits also returns sooner, so its own op is released that much sooner too.
#pragma once

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
// Each blocking call of a thread that got host time back since its previous blocking call begins
// that much sooner (the host loop runs faster), as a CallChange that keeps the call's waits and
// own time; merged into `changed` (an existing change of the call keeps its waits and own time and
// takes this `earlier`).
void barriersGivenBack(const DeviceView& view, const std::vector<HostTimeGiven>& given,
                       const HostTimeline& host, std::vector<CallChange>& changed);

}  // namespace cuoverlap::diagnosis
