// pageable-memcpy: host<->device copies from or to pageable host memory (source or destination
// memory kind "pageable"). The driver stages them through a pinned buffer: they run at reduced
// bandwidth and are synchronous to the host even when issued with cudaMemcpyAsync, so they cannot
// overlap kernels of the same thread's work.
// Cost, in two parts (docs/findings.md):
//   - the copies' durations: time that pinned, asynchronous copies could hide under compute
//     (charged through the ledger, within span - ideal);
//   - the copies getting faster: each copy at the pinned rate of its direction plus a pinned
//     copy's fixed cost (pinned_rate.h: pinnedDuration) where that is shorter than it took, and
//     the ledger ideal computed again with those durations; the drop is
//     Finding::ideal_reduction_ns (0 when the rate is unknown, or when the copies do not bound
//     the ideal).
// Needs: memory kinds (exports without srcKind/dstKind do not fire); for the second part, large
// pinned copies in the trace or the PCIe link our collector records.
#include <fmt/format.h>

#include "cuoverlap/units.h"
#include "diagnosis/cost_ledger.h"
#include "diagnosis/finding_builder.h"
#include "diagnosis/pinned_rate.h"
#include "diagnosis/rules/rules.h"

namespace cuoverlap::diagnosis {
namespace {

bool pageable(const GpuOp& op) {
  return op.kind == OpKind::kMemcpy &&
         (op.src_kind == MemKind::kPageable || op.dst_kind == MemKind::kPageable);
}

// The copies' bytes and time per direction, and their durations at the pinned rate.
struct PageableCopies {
  std::uint64_t bytes[2] = {0, 0};  // [0] HtoD, [1] DtoH
  Ns time[2] = {0, 0};
  std::uint64_t count[2] = {0, 0};
  PinnedRate rate[2];
  std::vector<FasterOp> faster;
};

int slotOf(Engine engine) { return engine == Engine::kH2D ? 0 : engine == Engine::kD2H ? 1 : -1; }

// "HtoD at 7.1 GB/s, pinned about 52.3 GB/s (this trace's pinned HtoD copies)"; a direction whose
// copies average under 64 KiB is left out (their time is latency, a rate says nothing).
std::string rates(const PageableCopies& copies) {
  constexpr std::uint64_t kMinMeanBytes = 64 << 10;
  std::string text;
  const char* names[] = {"HtoD", "DtoH"};
  for (int d = 0; d < 2; ++d) {
    if (copies.time[d] <= 0 || copies.bytes[d] < kMinMeanBytes * copies.count[d]) continue;
    text += fmt::format("{}{} at {:.1f} GB/s", text.empty() ? "" : "; ", names[d],
                        static_cast<double>(copies.bytes[d]) / copies.time[d]);
    if (copies.rate[d].bytes_per_ns > 0) {
      text += fmt::format(", pinned about {:.1f} GB/s ({})", copies.rate[d].bytes_per_ns,
                          copies.rate[d].source);
    }
  }
  return text;
}

}  // namespace

std::optional<Finding> findPageableMemcpy(const DeviceView& view) {
  FindingBuilder builder(view, "pageable-memcpy", Severity::kWarning);
  PageableCopies copies;
  copies.rate[0] = pinnedRate(view, Engine::kH2D);
  copies.rate[1] = pinnedRate(view, Engine::kD2H);
  std::uint64_t bytes = 0;
  std::size_t position = 0;
  for (const ScopedOp& scoped : view.ops()) {
    const GpuOp& op = view.op(scoped);
    const std::size_t at = position++;
    if (!pageable(op)) continue;
    bytes += op.bytes;
    const Ns duration = scoped.end - scoped.start;
    builder.add(duration, evidenceForOp(view, op, describeOp(view, op) + " with pageable host memory"));
    const int d = slotOf(engineOf(op));
    if (d < 0) continue;
    copies.bytes[d] += op.bytes;
    copies.time[d] += duration;
    ++copies.count[d];
    const Ns pinned = pinnedDuration(copies.rate[d], op.bytes);
    if (pinned > 0 && pinned < duration) copies.faster.push_back({at, pinned});
  }
  if (builder.count() > 0 && !copies.faster.empty()) {
    builder.lowerIdeal(std::max<Ns>(0, ledgerIdeal(view) - ledgerIdeal(view, copies.faster)));
  }
  const bool known = copies.rate[0].bytes_per_ns > 0 || copies.rate[1].bytes_per_ns > 0;
  return builder.build(
      fmt::format("{} copies ({} bytes) used pageable host memory: staged by the driver and "
                  "synchronous to the host{}{}",
                  builder.count(), bytes, rates(copies).empty() ? "" : " (" + rates(copies) + ")",
                  known ? "" : "; no pinned rate known (no large pinned copy in the trace, no "
                               "recorded PCIe link), so the cost leaves out the copies getting faster"),
      "Allocate the host buffers with cudaMallocHost/cudaHostAlloc, or pin existing ones with "
      "cudaHostRegister, then copy with cudaMemcpyAsync on a created stream");
}

}  // namespace cuoverlap::diagnosis
