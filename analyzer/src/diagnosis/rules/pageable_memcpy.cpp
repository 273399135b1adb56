// pageable-memcpy: host<->device copies from or to pageable host memory (source or destination
// memory kind "pageable"). The driver stages them through a pinned buffer: they run at reduced
// bandwidth and are synchronous to the host even when issued with cudaMemcpyAsync, so they cannot
// overlap kernels of the same thread's work.
// Cost: the copies' durations (time that pinned copies could have hidden under compute).
// Needs: memory kinds (exports without srcKind/dstKind do not fire).
#include <fmt/format.h>

#include "diagnosis/finding_builder.h"
#include "diagnosis/rules/rules.h"

namespace cuoverlap::diagnosis {

std::optional<Finding> findPageableMemcpy(const DeviceView& view) {
  FindingBuilder builder(view, "pageable-memcpy", Severity::kWarning);
  std::uint64_t bytes = 0;
  for (const ScopedOp& scoped : view.ops()) {
    const GpuOp& op = view.op(scoped);
    if (op.kind != OpKind::kMemcpy) continue;
    if (op.src_kind != MemKind::kPageable && op.dst_kind != MemKind::kPageable) continue;
    bytes += op.bytes;
    builder.add(scoped.end - scoped.start,
                evidenceForOp(view, op, describeOp(view, op) + " with pageable host memory"));
  }
  return builder.build(
      fmt::format("{} copies ({} bytes) used pageable host memory: staged by the driver and "
                  "synchronous to the host",
                  builder.count(), bytes),
      "Allocate the host buffers with cudaMallocHost/cudaHostAlloc, or pin existing ones with "
      "cudaHostRegister, then copy with cudaMemcpyAsync on a created stream");
}

}  // namespace cuoverlap::diagnosis
