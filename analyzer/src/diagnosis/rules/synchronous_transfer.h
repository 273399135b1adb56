// Shared by sync-memcpy and sync-memset: which ops were issued through a synchronous API between
// other GPU work, and what each cost.
#pragma once

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

}  // namespace cuoverlap::diagnosis
