// sync-memset: memsets issued with a synchronous API (cudaMemset, cudaMemset2D, cuMemsetD8, ...;
// any memset API without "Async") that have GPU work before and after them. They are ordered on
// the legacy default stream and may block the host.
// Cost: what the fix (lab transform async-memset: cudaMemsetAsync on the stream of the op that
// uses the buffer) saves in the what-if schedule with the host, as sync-memcpy's
// (asynchronous_fix.h), at most the union of the memsets' calls (synchronousCallsNs); without
// runtime data, or where the what-if finds it saves nothing, as a host-blocking call
// (synchronous_transfer.h, host_blocking_cost.cpp). Memsets that left the device busy (charged
// nothing) are still reported where the what-if finds their calls held other threads'
// (addHeldSynchronousTransfers).
// Needs: the launch call, or the collector's async flag.
#include <fmt/format.h>

#include <algorithm>
#include <optional>

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
  } else if (builder.count() != 0) {
    // Charged memsets are priced by the what-if too, but no higher than the memsets' calls (their
    // own time and their ops' waits behind the legacy barrier, synchronousCallsNs): what the fix
    // takes off the host and the legacy stream. The what-if can give other threads' held calls back
    // past a call's return (a launch held 96 µs beside a 36 µs cudaMemset); that is what the held
    // memsets' gate (addHeldSynchronousTransfers) refuses, and the lab's fixed programs do not
    // show it either (g000360: 282-392 µs claimed for calls of 83-273, nothing saved).
    std::optional<Ns> what_if = asynchronousFixSaving(view, ApiKind::kMemsetSync);
    const Ns calls = synchronousCallsNs(view, OpKind::kMemset);
    if (what_if && calls > 0) what_if = std::min(*what_if, calls);
    estimateAsynchronousFix(what_if, builder);
  }
  return builder.build(
      fmt::format("{} synchronous memsets between GPU work", builder.count()),
      "Use cudaMemsetAsync on the stream that uses the buffer");
}

}  // namespace cuoverlap::diagnosis
