// Idle gaps of a device and their causes (definition: idle_gaps.cpp and docs/gaps.md).
#pragma once

#include <vector>

#include "cuoverlap/report.h"
#include "diagnosis/device_view.h"
#include "diagnosis/host_state.h"

namespace cuoverlap::diagnosis {

// Every idle interval of the view at least `min_ns` long, in time order, each with its cause,
// neighbours and the call involved.
std::vector<IdleGap> attributeGaps(const DeviceView& view, Ns min_ns);

// What the thread that made `launch` (the launch call of the op that ends the idle interval
// `gap`) was doing during the gap before that call took over: its host parts from the gap's start
// to the call's start, then the lazy-loading head of the call (module loading) if it has one.
// Empty when the call returned before the gap began (the op was queued: a dependency).
std::vector<HostPart> hostPartsOfGap(const DeviceView& view, Interval gap, std::size_t launch);

// Calls fn(gap, part, launch) for every part of hostPartsOfGap of every idle interval of the view
// whose next op has a launch call.
template <typename Fn>
void forEachGapHostPart(const DeviceView& view, Fn fn) {
  if (!view.hasRuntimeData()) return;
  for (const Interval& gap : view.idle()) {
    const auto next = view.firstOpStartingAtOrAfter(gap.end);
    if (!next) continue;
    const auto launch = view.launchCall(view.op(view.ops()[*next]));
    if (!launch) continue;
    for (const HostPart& part : hostPartsOfGap(view, gap, *launch)) fn(gap, part, *launch);
  }
}

// The public analyzeGaps over a prepared view: gaps of at least threshold_ns, totals per cause
// and the largest gaps.
GapAnalysis analyzeGapsOfView(const DeviceView& view, Ns threshold_ns);

}  // namespace cuoverlap::diagnosis
