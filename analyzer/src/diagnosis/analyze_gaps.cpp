// analyzeGaps: the gaps of at least the threshold, totals per cause and the largest gaps.
// Causes are defined in idle_gaps.cpp; why 10 µs is the default threshold: docs/gaps.md.
#include <algorithm>
#include <array>

#include "cuoverlap/diagnosis.h"
#include "diagnosis/device_view.h"
#include "diagnosis/idle_gaps.h"
#include "diagnosis/rules/rules.h"

namespace cuoverlap {
namespace {

constexpr std::size_t kCauseCount = static_cast<std::size_t>(GapCause::kUnknown) + 1;

// Totals for the causes that occurred, summed from the gaps' parts (a gap counts once for each
// cause it has a part of), the largest time first (ties in enum order).
std::vector<GapCauseTotal> totalsPerCause(const std::vector<IdleGap>& gaps, Ns idle_ns) {
  std::array<GapCauseTotal, kCauseCount> totals{};
  for (std::size_t c = 0; c < kCauseCount; ++c) totals[c].cause = static_cast<GapCause>(c);
  for (const IdleGap& gap : gaps) {
    for (const GapCausePart& part : gap.causes) {
      GapCauseTotal& total = totals[static_cast<std::size_t>(part.cause)];
      ++total.count;
      total.time_ns += part.ns;
    }
  }
  std::vector<GapCauseTotal> result;
  for (GapCauseTotal& total : totals) {
    if (total.count == 0) continue;
    total.share_of_idle = idle_ns > 0 ? static_cast<double>(total.time_ns) / idle_ns : 0.0;
    result.push_back(total);
  }
  std::stable_sort(result.begin(), result.end(), [](const auto& a, const auto& b) {
    return a.time_ns > b.time_ns;
  });
  return result;
}

}  // namespace

namespace diagnosis {

GapAnalysis analyzeGapsOfView(const DeviceView& view, Ns threshold_ns) {
  GapAnalysis result;
  result.threshold_ns = threshold_ns;
  // A threshold of 0 would make every touching pair of ops a "gap"; 1 ns is the smallest gap.
  std::vector<IdleGap> gaps = attributeGaps(view, std::max<Ns>(threshold_ns, 1));
  Ns idle_ns = 0;
  for (const Interval& idle : view.idle()) idle_ns += idle.length();
  result.count = gaps.size();
  for (const IdleGap& gap : gaps) result.time_ns += gap.duration();
  result.totals = totalsPerCause(gaps, idle_ns);
  result.largest = largestInTimeOrder(
      std::move(gaps), kLargestGaps, [](const IdleGap& g) { return g.duration(); },
      [](const IdleGap& g) { return g.start; });
  return result;
}

}  // namespace diagnosis

GapAnalysis analyzeGaps(const Trace& trace, const Scope& scope, std::uint16_t device_id,
                        Ns threshold_ns) {
  return diagnosis::analyzeGapsOfView(diagnosis::DeviceView(trace, scope, device_id), threshold_ns);
}

std::vector<IdleGap> listGaps(const Trace& trace, const Scope& scope, std::uint16_t device_id,
                              Ns threshold_ns) {
  return diagnosis::attributeGaps(diagnosis::DeviceView(trace, scope, device_id),
                                  std::max<Ns>(threshold_ns, 1));
}

GapAnalysis diagnoseDevice(const Trace& trace, const Scope& scope, std::uint16_t device_id,
                           Ns threshold_ns, std::vector<Finding>& findings,
                           FindingsExplained* explained) {
  const diagnosis::DeviceView view(trace, scope, device_id);
  if (!view.empty()) {
    const FindingsExplained device_explained = diagnosis::runRules(view, findings);
    if (explained) *explained = device_explained;
  }
  return diagnosis::analyzeGapsOfView(view, threshold_ns);
}

}  // namespace cuoverlap
