#include "diagnosis/cost_ledger.h"

#include <algorithm>
#include <array>
#include <string>

#include "cuoverlap/communication.h"
#include "cuoverlap/intervals.h"
#include "diagnosis/finding_builder.h"
#include "diagnosis/schedule_estimate.h"

namespace cuoverlap::diagnosis {
namespace {

// The charging order (docs/findings.md): a call or copy that blocked the host is the most specific
// cause of the idle time after it (pinning first: of a pageable cudaMemcpy it is the bigger fix);
// then host-side causes found in idle time; then serialization of
// named ops; then patterns over many launches; then the structure of the whole run; the summary
// (low-overlap) gets only what nothing else explained. Unknown ids go before the structural ones.
constexpr std::array<std::string_view, 18> kOrder = {
    "many-small-copies",    "pageable-memcpy",      "sync-memcpy",          "sync-memset",
    "blocking-sync-call",   "early-result-wait",    "implicit-sync-call",   "module-load",
    "managed-page-faults",
    "host-busy",            "legacy-default-stream", "event-wait-serialization",
    "cross-stream-kernel-wait", "device-saturating-kernel", "host-launch-bound",
    "single-stream",        "low-overlap",          "transfer-bound"};
constexpr int kUnknownRank = 2 * 15 - 1;  // just before single-stream

std::vector<Interval> regionOf(const Finding& finding) {
  std::vector<Interval> region;
  region.reserve(finding.cost_region.size());
  for (const auto& [start, end] : finding.cost_region) region.push_back({start, end});
  return region;
}

// Severity follows what the finding costs after the ledger: one that is charged nothing (its time
// went to an earlier finding, or it estimates no saving) is an observation, `info`.
Severity severityFor(const Finding& finding, Ns charged, Ns span) {
  if (charged <= 0) return Severity::kInfo;
  if (finding.base_severity != Severity::kWarning) return finding.base_severity;
  return span > 0 && static_cast<double>(charged) >= kErrorShareOfSpan * static_cast<double>(span)
             ? Severity::kError
             : Severity::kWarning;
}

// `amount` of the time `free` (sorted, disjoint), taken where lost time lies first: the device's
// idle time in it, then its busy time (overlap a fix would add), each stretch of a kind giving the
// same share of its length (from its start). A fix gains time first where the device waited:
// work that starts earlier fills the idle stretch in front of it before it can run beside busy work.
std::vector<Interval> placeCharge(const DeviceView& view, const std::vector<Interval>& free, Ns amount) {
  std::vector<Interval> idle = intersectionOf(free, view.idle());
  std::vector<Interval> busy = differenceOf(free, idle);
  std::vector<Interval> placed;
  for (const std::vector<Interval>* kind : {&idle, &busy}) {
    const Ns length = totalLength(*kind);
    if (amount <= 0 || length <= 0) continue;
    const Ns wanted = std::min(amount, length);
    const long double share = static_cast<long double>(wanted) / length;
    std::vector<Ns> parts;
    Ns taken = 0;
    for (const Interval& stretch : *kind) {
      parts.push_back(std::min(stretch.length(), static_cast<Ns>(share * stretch.length())));
      taken += parts.back();
    }
    // The nanoseconds the shares rounded down, from the first stretch with room.
    for (std::size_t i = 0; i < parts.size() && taken < wanted; ++i) {
      const Ns more = std::min(wanted - taken, (*kind)[i].length() - parts[i]);
      parts[i] += more;
      taken += more;
    }
    for (std::size_t i = 0; i < parts.size(); ++i) {
      if (parts[i] > 0) placed.push_back({(*kind)[i].start, (*kind)[i].start + parts[i]});
    }
    amount -= taken;
  }
  return unionOf(std::move(placed));
}

}  // namespace

int ledgerRank(std::string_view id) {
  for (std::size_t i = 0; i < kOrder.size(); ++i) {
    if (kOrder[i] == id) return 2 * static_cast<int>(i);
  }
  return kUnknownRank;
}

Ns ledgerIdeal(const DeviceView& view, const std::vector<FasterOp>& faster) {
  UnionLength compute, h2d, d2h, other, comm;
  Ns longest_kernel = 0;
  double packed_kernels = 0.0;
  const Device* device = view.device();
  const CommunicationKernels communication(view.trace());  // NCCL kernels: their own engine
  std::size_t position = 0;
  auto next_faster = faster.begin();
  for (ScopedOp scoped : view.ops()) {
    const GpuOp& op = view.op(scoped);
    if (next_faster != faster.end() && next_faster->position == position) {
      scoped.end = scoped.start + next_faster->duration;
      ++next_faster;
    }
    ++position;
    switch (communication.engineOf(op)) {
      case Engine::kCompute:
        compute.add(scoped.start, scoped.end);
        longest_kernel = std::max(longest_kernel, scoped.end - scoped.start);
        packed_kernels += static_cast<double>(scoped.end - scoped.start) * smShare(device, op);
        break;
      case Engine::kH2D: h2d.add(scoped.start, scoped.end); break;
      case Engine::kD2H: d2h.add(scoped.start, scoped.end); break;
      case Engine::kD2D:
      case Engine::kOtherCopy: other.add(scoped.start, scoped.end); break;
      case Engine::kComm: comm.add(scoped.start, scoped.end); break;  // its own engine, as ideal_ns
      case Engine::kMemset: break;
    }
  }
  const Ns kernels = std::min(compute.length(),
                              std::max(longest_kernel, static_cast<Ns>(packed_kernels)));
  return std::max({kernels, h2d.length(), d2h.length(), other.length(), comm.length()});
}

FindingsExplained chargeFindings(const DeviceView& view, std::vector<Finding>& findings) {
  FindingsExplained explained;
  const Ns span = view.spanLength();
  explained.explainable_ns = std::max<Ns>(0, span - ledgerIdeal(view));
  std::stable_sort(findings.begin(), findings.end(), [](const Finding& a, const Finding& b) {
    return ledgerRank(a.id) < ledgerRank(b.id);
  });
  Ns left = explained.explainable_ns;
  // The device time held so far: earlier findings' regions, and where the part of an estimate
  // that its own region could not hold was placed. Each nanosecond is held by one finding.
  std::vector<Interval> held;
  std::vector<std::pair<const Finding*, std::vector<Interval>>> holders;  // for charged_to
  const std::vector<Interval> whole_span = {{view.spanStart(), view.spanEnd()}};
  for (Finding& finding : findings) {
    Ns charge = finding.estimated_ns;
    // A finding that estimates no saving explains none of its region: later ones keep it.
    if (charge <= 0) {
      finding.time_ns = finding.ideal_reduction_ns;
      finding.severity = severityFor(finding, finding.time_ns, span);
      explained.ideal_reduction_ns += finding.ideal_reduction_ns;
      continue;
    }
    const std::vector<Interval> region = regionOf(finding);
    const Ns whole = totalLength(region);
    const std::vector<Interval> open = differenceOf(region, held);
    const Ns open_length = totalLength(open);
    if (whole > 0) {
      charge = static_cast<Ns>(static_cast<long double>(charge) * open_length / whole);
      finding.charged_elsewhere_ns = finding.estimated_ns - charge;
      for (const auto& [earlier, earlier_held] : holders) {
        if (open_length < whole && totalLength(intersectionOf(region, earlier_held)) > 0 &&
            std::find(finding.charged_to.begin(), finding.charged_to.end(), earlier->id) == finding.charged_to.end()) {
          finding.charged_to.push_back(earlier->id);
        }
      }
    }
    finding.beyond_explainable_ns = std::max<Ns>(0, charge - left);
    charge = std::clamp<Ns>(charge, 0, left);
    // What its own open stretches cannot hold (a what-if saving larger than the stretches the
    // rule names, or a bare amount) is placed in device time no finding holds, idle first; what
    // even that cannot hold is not charged: it would charge some nanosecond twice.
    std::vector<Interval> taken = region;
    const Ns excess = std::max<Ns>(0, charge - open_length);
    if (excess > 0) {
      const std::vector<Interval> unheld = differenceOf(differenceOf(whole_span, held), region);
      std::vector<Interval> placed = placeCharge(view, unheld, excess);
      const Ns placed_length = totalLength(placed);
      finding.beyond_region_ns = excess - placed_length;
      charge -= finding.beyond_region_ns;
      taken.insert(taken.end(), placed.begin(), placed.end());
      taken = unionOf(std::move(taken));
    }
    left -= charge;
    held.insert(held.end(), taken.begin(), taken.end());
    held = unionOf(std::move(held));
    holders.emplace_back(&finding, std::move(taken));
    finding.time_ns = charge + finding.ideal_reduction_ns;
    finding.severity = severityFor(finding, finding.time_ns, span);
    explained.ideal_reduction_ns += finding.ideal_reduction_ns;
  }
  explained.explained_ns = explained.explainable_ns - left;
  explained.fraction = explained.explainable_ns > 0
                           ? static_cast<double>(explained.explained_ns) / explained.explainable_ns
                           : 0.0;
  return explained;
}

}  // namespace cuoverlap::diagnosis
