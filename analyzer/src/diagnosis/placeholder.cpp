// TEMPORARY placeholder until the diagnosis module lands (its owner deletes this file).
#include "cuoverlap/diagnosis.h"

namespace cuoverlap {

GapAnalysis analyzeGaps(const Trace&, const Scope&, std::uint16_t, Ns threshold_ns) {
  GapAnalysis gaps;
  gaps.threshold_ns = threshold_ns;
  return gaps;
}

std::vector<Finding> runFindings(const Trace&, const Scope&, const std::vector<DeviceReport>&) {
  return {};
}

}  // namespace cuoverlap
