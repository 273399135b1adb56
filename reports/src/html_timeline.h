// The SVG timeline of one device in the HTML report: NVTX lanes, one lane per stream with ops
// coloured by engine, idle gaps shaded by cause behind them, a time axis and zoom controls.
#pragma once

#include <string>

#include "cuoverlap/html_report.h"
#include "cuoverlap/report.h"

namespace cuoverlap::html {

// CSS class of an engine's ops and of a gap cause's shading ("e-compute", "g-sync-wait").
std::string engineClass(Engine engine);
std::string gapClass(GapCause cause);

// Appends the timeline of `device` over [start, end) drawn from `trace`.
void appendTimeline(std::string& out, const Trace& trace, const DeviceReport& device, Ns start,
                    Ns end, const HtmlOptions& options);

}  // namespace cuoverlap::html
