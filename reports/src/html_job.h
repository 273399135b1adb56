// The job section of the HTML report: the per-rank table, the ranks on one time axis with their
// communication shaded, the largest skews and the job's findings.
#pragma once

#include <string>

#include "cuoverlap/report.h"

namespace cuoverlap::html {

void appendJob(std::string& out, const JobAnalysis& job);

}  // namespace cuoverlap::html
