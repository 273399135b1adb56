// Which explicit synchronizes deliver something the host needs, so that no finding advises
// removing them (the lab's transform remove-sync keeps them; defer-read moves them later):
//   - the thread issued an asynchronous DtoH copy since its previous blocking call: the host is
//     about to read what the copy brings back (PyTorch's .item(), CuPy's get(), a loss printed);
//   - the thread's next call that issues work is a synchronous copy or memset (cudaMemcpy,
//     cudaMemset): those run on
//     the legacy stream and do not wait for non-blocking streams, so the synchronize is what
//     orders them after the work they read.
// A synchronize before the host reads managed memory is not visible in a trace and counts as
// removable.
#pragma once

#include <vector>

#include "diagnosis/device_view.h"
#include "diagnosis/host_timeline.h"

namespace cuoverlap::diagnosis {

// Per barrier of `host`: true when it is an explicit synchronize the host needs.
std::vector<bool> neededSyncs(const DeviceView& view, const HostTimeline& host);

}  // namespace cuoverlap::diagnosis
