// Shared by sync-memcpy and sync-memset: which ops were issued through a synchronous API between
// other GPU work, and what each cost.
#pragma once

#include <optional>

#include "diagnosis/api_names.h"
#include "diagnosis/finding_builder.h"

namespace cuoverlap::diagnosis {

// Adds to `builder` every op of `kind` (a copy or a memset) issued synchronously (its launch call
// a cudaMemcpy or cudaMemset, or, with no runtime data, the op's async flag known and clear:
// DeviceView::synchronousTransferPositions) that has GPU work before and after it.
// Cost of each: with its call, the call's charge as a host-blocking call (host_blocking_cost.cpp:
// idle time after the drain the next op could have been spared, capped at the call's lead plus
// drain, never charged twice); without runtime data, the idle time after the op up to the next
// op, capped at the op's own duration. Instances under 10 µs are not counted.
void addSynchronousTransfers(const DeviceView& view, OpKind kind, FindingBuilder& builder);

// The union of the calls of the ops of `kind` issued synchronously, each from its start to its
// return or, where its op began after the call returned, to the op's start (the time the op waited
// on the device behind the legacy stream's barrier: its consumer waited as long); 0 without calls.
Ns synchronousCallsNs(const DeviceView& view, OpKind kind);

// Where addSynchronousTransfers found none (no such op left the device idle after it), the same
// ops all the same, without that floor, where the fix's what-if (asynchronous_fix.h, for
// `sync_kind`) saves at least kMinimumCostNs and no more than the union of those ops' calls: a
// synchronous call on the legacy stream holds the context while it waits, so other threads'
// calls (to any stream) wait behind it even where their own work keeps the device busy, and
// the fix frees that held time; a what-if beyond the calls' own time rests on a device schedule
// these ops never left idle. Returns the what-if's saving where it ran it (for
// estimateAsynchronousFix, which would otherwise run it again).
std::optional<Ns> addHeldSynchronousTransfers(const DeviceView& view, OpKind kind, ApiKind sync_kind,
                                              FindingBuilder& builder);

// Where addSynchronousTransfers found none, the same ops without its per-op floor where their
// charges together reach kMinimumCostNs and the fix's what-if saves at least as much: a run of
// small cudaMemcpy calls leaves the device idle a host round trip (about 5 µs) after each, no
// one of them 10 µs, and one host hiccup decided whether any was counted. Returns the what-if's
// saving where it ran it.
std::optional<Ns> addRunOfSynchronousTransfers(const DeviceView& view, OpKind kind,
                                               ApiKind sync_kind, FindingBuilder& builder);

}  // namespace cuoverlap::diagnosis
