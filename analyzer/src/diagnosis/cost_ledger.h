// The cost ledger: every finding of a device is charged through it, so that no nanosecond of lost
// time is charged to two findings and the findings never claim more than the device could save.
//
// Each rule states where its cost lies (Finding::cost_region: the idle stretches a host-side wait
// caused, the stretches serialized ops were held back, the copies that could be hidden) and how
// much a fix would save (Finding::estimated_ns). The ledger visits the device's findings in a
// fixed order, the most specific cause first (ledgerRank), and charges each
//   estimate x |region not yet held| / |region|
// (a finding whose region was explained by an earlier one keeps only the share still unexplained),
// capped by what is left of the device's explainable time, span - ledger ideal, so the sum of
// finding costs never exceeds it. A finding then holds its region. A charge larger than the part
// of its region not yet held (a what-if saving that lies partly beyond the stretches the rule
// names, as when removing synchronizes also lets the host's own work after them overlap; or a
// bare amount, with no region) is placed for the rest in device time no finding holds, its idle
// time first, and holds that too; what no free time can hold is not charged
// (Finding::beyond_region_ns). So no nanosecond of the device is charged to two findings.
// Severities are then recomputed from the charged cost. A fix that makes ops faster (pinned
// instead of pageable copies) also lowers the ideal: that part of a finding's cost is stated
// apart (Finding::ideal_reduction_ns) and added after the cap.
// Definitions: docs/findings.md, "The cost ledger".
#pragma once

#include <string_view>
#include <vector>

#include "cuoverlap/report.h"
#include "diagnosis/device_view.h"
#include "diagnosis/schedule_estimate.h"

namespace cuoverlap::diagnosis {

// Position of a finding id in the charging order (lower is charged first).
int ledgerRank(std::string_view id);

// The shortest the device's span could be: the metrics' ideal (the busiest engine, back to back),
// except that kernels that leave SMs idle may share them: the compute bound is
// min(|union of kernels|, max(longest kernel, sum of duration x SM share)). With `faster` (sorted
// by position), those ops take their durations after the fix: the ideal after such a fix.
Ns ledgerIdeal(const DeviceView& view, const std::vector<FasterOp>& faster = {});

// Charges the device's findings (all of `findings` must belong to the view's device): sets each
// time_ns and severity, and returns how much of span - ledger ideal they explain. A finding's
// ideal_reduction_ns (a fix that makes ops faster lowers the ideal itself) is added to its time_ns
// outside the cap, and summed in FindingsExplained::ideal_reduction_ns.
FindingsExplained chargeFindings(const DeviceView& view, std::vector<Finding>& findings);

}  // namespace cuoverlap::diagnosis
