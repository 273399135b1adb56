// TraceReport and DeviceMetrics to JSON text and back, for rank summaries (report_codec.cpp says
// what is kept). Decoding throws nlohmann::json::exception on malformed text; the summary reader
// turns that into a UserError naming the file.
#pragma once

#include <string>

#include "cuoverlap/report.h"

namespace cuoverlap::summary {

std::string encodeReport(const TraceReport& report);
TraceReport decodeReport(const std::string& text);
std::string encodeMetrics(const DeviceMetrics& metrics);
DeviceMetrics decodeMetrics(const std::string& text);

}  // namespace cuoverlap::summary
