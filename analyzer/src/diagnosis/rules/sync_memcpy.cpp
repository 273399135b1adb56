// sync-memcpy: copies issued with a synchronous API (cudaMemcpy, cudaMemcpy2D, cuMemcpyHtoD, ...;
// any copy API without "Async") that have GPU work before and after them. The host blocks until
// the copy (and all earlier work of the legacy stream) is done, so it cannot queue further work.
// Cost: as a host-blocking call (synchronous_transfer.h, host_blocking_cost.cpp): at most its lead
// plus the drain it caused; the stretches go through the cost ledger.
// Needs: the launch call, or the collector's async flag.
#include <fmt/format.h>

#include "diagnosis/rules/rules.h"
#include "diagnosis/rules/synchronous_transfer.h"

namespace cuoverlap::diagnosis {
namespace {

bool synchronousCopy(const DeviceView& view, const GpuOp& op) {
  if (op.kind != OpKind::kMemcpy) return false;
  if (auto call = view.launchCall(op)) return view.callKind(*call) == ApiKind::kMemcpySync;
  return (op.flags & op_flag::kAsyncKnown) != 0 && (op.flags & op_flag::kAsync) == 0;
}

// The ledger's place for the finding: from each synchronous copy's end to the next op's start.
void addCopyStretches(const DeviceView& view, FindingBuilder& builder) {
  const auto& ops = view.ops();
  for (std::size_t pos = 1; pos < ops.size(); ++pos) {
    if (!synchronousCopy(view, view.op(ops[pos]))) continue;
    const auto next = view.firstOpStartingAtOrAfter(ops[pos].end);
    if (!next) continue;
    if (ops[*next].start > ops[pos].end) builder.addRegion(Interval{ops[pos].end, ops[*next].start});
  }
}

}  // namespace

std::optional<Finding> findSyncMemcpy(const DeviceView& view) {
  FindingBuilder builder(view, "sync-memcpy", Severity::kWarning);
  addSynchronousTransfers(view, OpKind::kMemcpy, ApiKind::kMemcpySync, builder);
  if (builder.count() > 0) {
    const Ns cost = builder.time();
    addCopyStretches(view, builder);
    builder.estimateSaving(cost);
  }
  return builder.build(
      fmt::format("{} synchronous copies between GPU work blocked the host", builder.count()),
      "Use cudaMemcpyAsync on a created stream with pinned host memory, and synchronize only "
      "where the host needs the data (cudaEventSynchronize on an event recorded after the copy)");
}

}  // namespace cuoverlap::diagnosis
