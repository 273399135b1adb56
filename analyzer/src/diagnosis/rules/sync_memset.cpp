// sync-memset: memsets issued with a synchronous API (cudaMemset, cudaMemset2D, cuMemsetD8, ...;
// any memset API without "Async") that have GPU work before and after them. They are ordered on
// the legacy default stream and may block the host.
// Cost: what the fix (lab transform async-memset: cudaMemsetAsync on the stream of the op that
// uses the buffer) saves in the what-if schedule with the host, as sync-memcpy's
// (asynchronous_fix.h); without runtime data, or where the what-if finds it saves nothing, as a
// host-blocking call (synchronous_transfer.h, host_blocking_cost.cpp). Memsets that left the
// device busy (charged nothing) are still reported where the what-if finds their calls held
// other threads' (addHeldSynchronousTransfers).
// Needs: the launch call, or the collector's async flag.
#include <fmt/format.h>

#include "diagnosis/rules/asynchronous_fix.h"
#include "diagnosis/rules/rules.h"
#include "diagnosis/rules/synchronous_transfer.h"

namespace cuoverlap::diagnosis {

std::optional<Finding> findSyncMemset(const DeviceView& view) {
  FindingBuilder builder(view, "sync-memset", Severity::kInfo);
  addSynchronousTransfers(view, OpKind::kMemset, builder);
  // The what-if runs once: where the held memsets' check ran it, its answer prices them.
  if (const auto what_if = addHeldSynchronousTransfers(view, OpKind::kMemset, ApiKind::kMemsetSync, builder)) {
    estimateAsynchronousFix(what_if, builder);
  } else {
    estimateAsynchronousFix(view, ApiKind::kMemsetSync, builder);
  }
  return builder.build(
      fmt::format("{} synchronous memsets between GPU work", builder.count()),
      "Use cudaMemsetAsync on the stream that uses the buffer");
}

}  // namespace cuoverlap::diagnosis
