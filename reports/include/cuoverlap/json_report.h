// The JSON report, schema "cuoverlap.report/1" (docs/metrics.md lists the keys). The value
// builders are public so that other renderers, `gate` and `diff` reuse one definition of the keys.
// Keys keep their documented order (ordered_json); later issues add keys, these stay.
#pragma once

#include <nlohmann/json.hpp>

#include <ostream>
#include <string>

#include "cuoverlap/report.h"

namespace cuoverlap {

inline constexpr const char* kReportSchemaId = "cuoverlap.report/1";

nlohmann::ordered_json reportToJson(const Report& report);
nlohmann::ordered_json traceReportToJson(const TraceReport& trace);
nlohmann::ordered_json deviceReportToJson(const DeviceReport& device);
nlohmann::ordered_json findingToJson(const Finding& finding);

// Pretty-printed (2-space indent), ending in a newline.
void renderJson(const Report& report, std::ostream& out);
std::string renderJsonString(const Report& report);

}  // namespace cuoverlap
