// The timeline of one trace in the HTML report: per host thread its NVTX levels and CUDA API
// calls, per device one lane per busy engine and one per stream, the largest idle gaps shaded by
// cause, on one time axis. The page embeds the items (html_timeline_data.h) and its script draws
// the visible window on a canvas (html_assets.cpp), so zooming in shows every op.
#pragma once

#include <string>
#include <vector>

#include "cuoverlap/html_report.h"
#include "cuoverlap/report.h"

namespace cuoverlap::html {

// CSS class of an engine's ops and of a gap cause's shading ("e-compute", "g-sync-wait").
std::string engineClass(Engine engine);
std::string gapClass(GapCause cause);

// The time axis of a trace's timeline. Traces recorded on one clock (not Nsight exports, whose
// times start at their own session; the same host when known; overlapping in time, such as the
// ranks of one distributed job) share one axis and `group`, so their timelines line up and zoom
// together. start == end: the trace has no GPU activity to draw.
struct TimelineAxis {
  Ns start = 0;
  Ns end = 0;
  int group = 0;
};
std::vector<TimelineAxis> timelineAxes(const Report& report);  // one per trace, in report order

// Appends the timeline of `trace` over `axis`, as the element `id` (the tables' links jump to it).
// It opens on the trace's steady state when one was found.
void appendTimeline(std::string& out, const TraceReport& trace, const TimelineAxis& axis,
                    const HtmlOptions& options, const std::string& id);

}  // namespace cuoverlap::html
