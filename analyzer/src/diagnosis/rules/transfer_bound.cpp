// transfer-bound: one copy direction's engine (HtoD, DtoH, or device-to-device and other copies)
// was busy at least 80% of the device span: the run is as long as its transfers, and overlapping
// them better cannot make it much shorter (pipeline efficiency near 100% then says the copies are
// well hidden, not that the run is fast). The finding gives the bytes moved and the achieved
// bandwidth (bytes / engine busy time) and, when some copies used pageable memory, their share.
// Cost: 0 in the cost ledger. The fix (fewer or smaller transfers) lowers the ideal itself, which
// the ledger's span - ideal cannot express; the engine's busy time is in the summary instead.
// Needs: copies with sizes.
#include <array>

#include <fmt/format.h>

#include "cuoverlap/intervals.h"
#include "cuoverlap/units.h"
#include "diagnosis/finding_builder.h"
#include "diagnosis/rules/rules.h"

namespace cuoverlap::diagnosis {
namespace {

constexpr double kMinBusyShare = 0.8;

struct CopyEngine {
  const char* name = "";
  UnionLength busy;
  std::uint64_t bytes = 0;
  std::uint64_t pageable_bytes = 0;
  std::uint64_t copies = 0;
  std::optional<ScopedOp> first;
};

std::size_t slotOf(Engine engine) {
  switch (engine) {
    case Engine::kH2D: return 0;
    case Engine::kD2H: return 1;
    default: return 2;
  }
}

}  // namespace

std::optional<Finding> findTransferBound(const DeviceView& view) {
  std::array<CopyEngine, 3> engines;
  engines[0].name = "HtoD";
  engines[1].name = "DtoH";
  engines[2].name = "device-to-device";
  for (std::size_t pos = 0; pos < view.ops().size(); ++pos) {
    if (view.kindAt(pos) != OpKind::kMemcpy) continue;
    const ScopedOp scoped = view.ops()[pos];
    const GpuOp& op = view.op(scoped);
    CopyEngine& engine = engines[slotOf(engineOf(op))];
    engine.busy.add(scoped.start, scoped.end);
    engine.bytes += op.bytes;
    ++engine.copies;
    if (op.src_kind == MemKind::kPageable || op.dst_kind == MemKind::kPageable) {
      engine.pageable_bytes += op.bytes;
    }
    if (!engine.first) engine.first = scoped;
  }
  const Ns span = view.spanLength();
  const CopyEngine* busiest = nullptr;
  for (const CopyEngine& engine : engines) {
    if (engine.copies == 0 || static_cast<double>(engine.busy.length()) < kMinBusyShare * span) continue;
    if (!busiest || engine.busy.length() > busiest->busy.length()) busiest = &engine;
  }
  if (busiest == nullptr) return std::nullopt;
  const Ns busy = busiest->busy.length();
  const double gb_per_s = static_cast<double>(busiest->bytes) / static_cast<double>(busy);  // B/ns
  FindingBuilder builder(view, "transfer-bound", Severity::kWarning);
  builder.add(Ns{0}, evidenceForOp(view, view.op(*busiest->first),
                                   fmt::format("{} copies, {} in {} of copy engine time",
                                               busiest->copies, units::formatBytes(busiest->bytes),
                                               units::formatDuration(busy))));
  const std::string pinned_hint =
      busiest->pageable_bytes > 0
          ? fmt::format("; {:.0f}% of the bytes came from or went to pageable memory: pin them "
                        "(cudaMallocHost/cudaHostRegister) for full bandwidth",
                        100.0 * busiest->pageable_bytes / busiest->bytes)
          : "";
  auto finding = builder.build(
      fmt::format("the {} copy engine was busy {:.0f}% of the span ({} in {} copies at {:.1f} GB/s): "
                  "the run is transfer-bound, so a high pipeline efficiency only means the copies "
                  "were well hidden",
                  busiest->name, 100.0 * busy / span, units::formatBytes(busiest->bytes),
                  busiest->copies, gb_per_s),
      "Move fewer bytes: keep data resident on the device between steps, transfer only what "
      "changed, use smaller types or compression, batch many small copies into few large ones" +
          pinned_hint);
  if (finding) finding->count = busiest->copies;
  return finding;
}

}  // namespace cuoverlap::diagnosis
