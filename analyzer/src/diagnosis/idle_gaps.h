// Idle gaps of a device and their causes (definition: idle_gaps.cpp and docs/gaps.md).
#pragma once

#include <vector>

#include "cuoverlap/report.h"
#include "diagnosis/device_view.h"

namespace cuoverlap::diagnosis {

// Every idle interval of the view at least `min_ns` long, in time order, each with its cause,
// neighbours and the call involved.
std::vector<IdleGap> attributeGaps(const DeviceView& view, Ns min_ns);

// The public analyzeGaps over a prepared view: gaps of at least threshold_ns, totals per cause
// and the largest gaps.
GapAnalysis analyzeGapsOfView(const DeviceView& view, Ns threshold_ns);

}  // namespace cuoverlap::diagnosis
