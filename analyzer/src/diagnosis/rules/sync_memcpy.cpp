// sync-memcpy: copies issued with a synchronous API (cudaMemcpy, cudaMemcpy2D, cuMemcpyHtoD, ...;
// any copy API without "Async") that have GPU work before and after them. The host blocks until
// the copy (and all earlier work of the legacy stream) is done, so it cannot queue further work.
// Cost: as a host-blocking call (synchronous_transfer.h, host_blocking_cost.cpp).
// Needs: the launch call, or the collector's async flag.
#include <fmt/format.h>

#include "diagnosis/rules/rules.h"
#include "diagnosis/rules/synchronous_transfer.h"

namespace cuoverlap::diagnosis {

std::optional<Finding> findSyncMemcpy(const DeviceView& view) {
  FindingBuilder builder(view, "sync-memcpy", Severity::kWarning);
  addSynchronousTransfers(view, OpKind::kMemcpy, ApiKind::kMemcpySync, builder);
  return builder.build(
      fmt::format("{} synchronous copies between GPU work blocked the host", builder.count()),
      "Use cudaMemcpyAsync on a created stream with pinned host memory, and synchronize only "
      "where the host needs the data (cudaEventSynchronize on an event recorded after the copy)");
}

}  // namespace cuoverlap::diagnosis
