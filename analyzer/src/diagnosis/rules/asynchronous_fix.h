// The fix of sync-memcpy and sync-memset (lab transforms async-copy and async-memset): each op
// issued through a synchronous API (cudaMemcpy, cudaMemset) issued asynchronously on the stream
// of the op that uses it, with a synchronize only where the host reads the result. Its what-if
// saving in the schedule with the host (schedule_estimate.h; event waits kept):
//   - each op moves to the stream of the op that uses it: an HtoD or DtoD copy or a memset to its
//     consumer, the first op its thread launched after it that is not itself moved; a DtoH copy to
//     its producer, the last one before it. That stream still orders it.
//   - both schedules have the legacy stream's implicit barriers (legacy_barriers.h) of the
//     streams their ops run on: on the legacy stream the op waited for every blocking stream's
//     earlier work and held back their later work; on a created stream it no longer does.
//   - a call that waited for its op (or, a pageable upload, for its stream's previous op before
//     staging) no longer waits and returns after an asynchronous call's time, an upload from
//     pageable memory after its staging (its time after what it waited for ended, at least an
//     asynchronous call's), a DtoH copy's too where it lands in pinned memory: the host reads that data only
//     where it synchronizes, which a trace does not show, and the what-if takes the next
//     synchronize that orders the copy (cudaMemcpyAsync into pageable memory returns only once
//     the copy is done: that call still waits, for its stream only); where the thread runs code
//     of its own right after the call (a stretch host-busy counts: at least 10 µs in no CUDA
//     call) or launches a kernel next (a result read back between kernels of a step), it reads
//     the data there, the synchronize sits right after the copy, and the call still waits for it
//     (it still releases the legacy stream, to other threads' legacy calls too); a stream synchronize waits
//     for the last op launched before it on its stream, a moved op included, and a device
//     synchronize for every moved op that is the last launched before it on its stream.
//   - while the call waited on the legacy stream the driver held the context: other threads'
//     calls that overlapped it and took longer than their kind alone get that time back, staged
//     pageable copies included (legacy_threads.h). Ops whose fix takes them off the legacy stream
//     release it, and so do those kept on it whose call returns at once (the host then waits in
//     a synchronize, which other threads' calls do not queue behind), for other threads' calls
//     to other streams: a call to the legacy stream keeps its wait behind a kept op, as the fixed
//     schedule keeps the legacy stream's work in the order the trace submitted it, unless its
//     thread reads it right after. A call given back 50 µs or more no longer holds other
//     threads' calls in turn: those that overlapped it and took longer than their kind alone get
//     that time back too.
#pragma once

#include <optional>

#include "diagnosis/device_view.h"
#include "diagnosis/finding_builder.h"

namespace cuoverlap::diagnosis {

// The saving of issuing the view's ops launched through `sync_kind` (ApiKind::kMemcpySync or
// kMemsetSync) asynchronously (0 when the what-if finds none); nothing when there are no such ops
// or the host timeline is empty (no what-if to run).
std::optional<Ns> asynchronousFixSaving(const DeviceView& view, ApiKind sync_kind);

// The cost of a finding whose occurrences `builder` holds (nothing when it holds none): the
// what-if's saving where it finds one; else their charges (the calls still blocked the host while
// the device idled), and where the what-if finds that the fix saves nothing, what the fix alone
// saves (Finding::fix_alone_ns) is nothing.
void estimateAsynchronousFix(const DeviceView& view, ApiKind sync_kind, FindingBuilder& builder);
// The same with the what-if's saving already known (asynchronousFixSaving's answer).
void estimateAsynchronousFix(const std::optional<Ns>& what_if, FindingBuilder& builder);

}  // namespace cuoverlap::diagnosis
