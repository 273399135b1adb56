// sync-memcpy: copies issued with a synchronous API (cudaMemcpy, cudaMemcpy2D, cuMemcpyHtoD, ...;
// any copy API without "Async") that have GPU work before and after them. The host blocks until
// the copy (and all earlier work of the legacy stream) is done, so it cannot queue further work.
// Cost: what the fix (lab transform async-copy: cudaMemcpyAsync on the stream of the op that uses
// the copy, a synchronize only where the host reads the result) saves in the what-if schedule
// with the host (asynchronous_fix.h): the copy off the legacy stream no longer waits for every
// blocking stream's earlier work nor holds back their later work (in the lab a thread's 4 KiB
// cudaMemcpy behind two other threads' blocking streams: 16 ms of a 53 ms program); an HtoD
// copy's call no longer waits, nor a DtoH copy's into pinned memory (the host waits for it at
// its next synchronize); other threads' calls no longer wait behind it (in the lab 256
// pageable copies of another thread took 120 us each instead of 8 beside the cudaMemcpy calls).
// A run of small cudaMemcpy calls pays a host round trip per piece, which the
// device idles through (in the lab, 6.5 ms of a 9.7 ms program). Without runtime data, or when
// the schedule has no host, as a host-blocking call (synchronous_transfer.h,
// host_blocking_cost.cpp): at most its lead plus the drain it caused. Where the what-if finds the
// fix saves nothing (a download into pageable memory still waits), the cost is that charge too,
// and what the fix alone saves (Finding::fix_alone_ns) is nothing. Where (ledger): those
// charged idle stretches; the ledger places a what-if saving larger than them in idle time no
// earlier finding holds (cost_ledger.h), so a copy that returned into a long gap of the host's
// own work (a JIT compile) does not hold that gap.
// Needs: the launch call, or the collector's async flag.
#include <fmt/format.h>

#include "diagnosis/rules/asynchronous_fix.h"
#include "diagnosis/rules/rules.h"
#include "diagnosis/rules/synchronous_transfer.h"

namespace cuoverlap::diagnosis {

std::optional<Finding> findSyncMemcpy(const DeviceView& view) {
  FindingBuilder builder(view, "sync-memcpy", Severity::kWarning);
  addSynchronousTransfers(view, OpKind::kMemcpy, builder);
  if (const auto what_if =
          addRunOfSynchronousTransfers(view, OpKind::kMemcpy, ApiKind::kMemcpySync, builder)) {
    estimateAsynchronousFix(what_if, builder);
  } else {
    estimateAsynchronousFix(view, ApiKind::kMemcpySync, builder);
  }
  return builder.build(
      fmt::format("{} synchronous copies between GPU work blocked the host", builder.count()),
      "Use cudaMemcpyAsync on a created stream with pinned host memory, and synchronize only "
      "where the host needs the data (cudaEventSynchronize on an event recorded after the copy)");
}

}  // namespace cuoverlap::diagnosis
