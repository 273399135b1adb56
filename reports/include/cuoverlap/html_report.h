// HTML rendering of a Report: one self-contained page (inline CSS and script, no fonts, images or
// network access) with, per trace, a timeline (host threads' NVTX and CUDA API lanes, per device
// its engines and streams, idle gaps shaded by cause; zoom, pan and hover drawn by the inline
// script from the embedded items), then per device metric cards, the largest gaps, and findings.
//
// Every string that comes from a trace goes through escapeHtml(); the inline script reads names
// with textContent and only numbers from data attributes, so names cannot inject markup or script.
#pragma once

#include <ostream>
#include <string>
#include <string_view>

#include "cuoverlap/report.h"

namespace cuoverlap {

struct HtmlOptions {
  int max_nvtx_depth = 3;  // NVTX nesting levels drawn as lanes
};

std::string renderHtml(const Report& report, const HtmlOptions& options = {});
void renderHtml(const Report& report, const HtmlOptions& options, std::ostream& out);
void renderHtml(const Report& report, std::ostream& out);  // default options

// & < > " ' as character references: safe in element content and quoted attributes.
std::string escapeHtml(std::string_view text);

}  // namespace cuoverlap
