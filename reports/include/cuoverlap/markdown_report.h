// Markdown rendering of a Report: the content of the text report (metrics per device, idle gaps
// by cause, the largest gaps, findings with evidence and fixes, NVTX range instances) as GitHub
// flavoured Markdown for pull-request comments and CI job summaries.
#pragma once

#include <ostream>
#include <string>
#include <string_view>

#include "cuoverlap/report.h"

namespace cuoverlap {

std::string renderMarkdown(const Report& report);
void renderMarkdown(const Report& report, std::ostream& out);

// Text from a trace made inert in Markdown: punctuation that GitHub would read as markup, HTML or
// a table cell boundary is backslash-escaped, line breaks become spaces.
std::string escapeMarkdown(std::string_view text);

}  // namespace cuoverlap
