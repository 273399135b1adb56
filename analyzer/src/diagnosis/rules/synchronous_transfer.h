// Shared by sync-memcpy and sync-memset: which ops were issued through a synchronous API between
// other GPU work, and the device idle time that followed each.
#pragma once

#include "diagnosis/finding_builder.h"

namespace cuoverlap::diagnosis {

// Adds to `builder` every op of `kind` issued synchronously (launch call of `sync_kind`, or, with
// no runtime data, the op's async flag known and clear) that has GPU work before and after it.
// Cost of each: device idle time from its end to the start of the next op.
void addSynchronousTransfers(const DeviceView& view, OpKind kind, ApiKind sync_kind,
                             FindingBuilder& builder);

}  // namespace cuoverlap::diagnosis
