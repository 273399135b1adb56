// What the host needs of each explicit synchronize, so that a finding advises the fix that fits:
//   - kDeferrable: the thread issued an asynchronous DtoH copy since its previous blocking call
//     that the synchronize waits for (the program orders it before what the synchronize waited
//     for: stream order, recorded stream waits, the legacy stream's barriers; a synchronize of
//     another stream leaves the copy in flight, so the host cannot rely on it to read the result):
//     the host may be about to read what the copy brings back (PyTorch's .item(), CuPy's get(), a
//     loss printed), unless the synchronize also waits for work the thread queued behind the copy
//     on its stream (the next step's copy or kernel: the wait is for that work, and the
//     synchronize is removable). Whether it reads it before the next step a trace cannot show, so the fix
//     assumed is the one that holds either way (the lab's defer-read): wait for the previous
//     step's result instead of this one's (double-buffered), which lets the host issue step i + 1
//     while the device runs step i;
//   - kKept: the thread's next call that issues work is a synchronous copy or memset (cudaMemcpy,
//     cudaMemset): those run on the legacy stream and do not wait for non-blocking streams, so the
//     synchronize is what orders them after the work they read (unless the call's op ran on the
//     legacy stream and all the synchronize waited for ran on the legacy stream or blocking
//     streams of its context: the legacy stream's implicit barrier orders the call by itself, and
//     the synchronize is removable; and unless the call only writes — a memset, a copy from host
//     memory — for work on other streams than the synchronize waited for: the thread's next
//     asynchronous work after it goes to none of them, so the call prepares a buffer of that
//     work's own, not one the waited-for work used); or the host touches managed
//     memory before that call (a CPU page fault of the process, or a migration to the host): it
//     reads what the GPU wrote, which the synchronize protects; or the thread's previous blocking
//     call was an asynchronous DtoH copy into pageable memory and its next work a synchronous call
//     on the legacy stream. After such a copy (which waited for its copy only because the memory
//     is pageable) the synchronize is what the program relies on to read the result (and what
//     orders the read once the memory is pinned): never removable, and otherwise kDeferrable with
//     that copy as the result it brings back;
//   - kRemovable: every other synchronize, and one whose every op the thread's earlier blocking
//     calls already waited for (a second synchronize of the same work): it orders nothing.
#pragma once

#include <vector>

#include "diagnosis/device_view.h"
#include "diagnosis/host_timeline.h"

namespace cuoverlap::diagnosis {

enum class SyncNeed { kNotASync, kRemovable, kDeferrable, kKept };

// Per barrier of `host`: what the host needs of it (kNotASync for blocking calls that are no
// explicit synchronize).
// `read_copies` (optional): per barrier, the position in view.ops() of the last asynchronous DtoH
// copy it brings back (-1 for none).
std::vector<SyncNeed> syncNeeds(const DeviceView& view, const HostTimeline& host,
                                std::vector<std::int64_t>* read_copies = nullptr);

// Whether work on the legacy default stream issued after synchronize `sync` would wait for all of
// `waited` anyway (its op `legacy_op`): each op ran on the legacy stream or on a blocking stream of
// the same context (legacy-stream work waits for those implicitly), so the synchronize orders
// nothing it does not. Work other host threads issued is left out: nothing but timing orders it
// before this thread's call, so a correct program cannot rely on the synchronize for it (a device
// synchronize waits for it by chance).
bool legacyStreamOrders(const DeviceView& view, const GpuOp& legacy_op, const RuntimeCall& sync,
                        const std::vector<std::size_t>& waited);

// `host` with each deferrable synchronize waiting for what the same thread's previous deferrable
// synchronize waited for (nothing for the first): the schedule of the double-buffered program.
// A deferred synchronize waits on the event recorded after the previous step's copy
// (`read_copies`, syncNeeds's): for that copy, and through the schedule's order for what the
// program ordered before it, not for the rest of what the previous synchronize waited for (a
// device synchronize's other streams and other threads' work). Without a copy known: as before.
HostTimeline deferredTimeline(const DeviceView& view, const HostTimeline& host,
                              const std::vector<SyncNeed>& needs,
                              const std::vector<std::int64_t>& read_copies = {});

}  // namespace cuoverlap::diagnosis
