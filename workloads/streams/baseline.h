// The serial baseline each scenario compares itself with, measured in a child process so that the
// scenario's own trace holds only the scenario: the child runs with CUDA_INJECTION64_PATH unset.
#pragma once

#include <optional>
#include <string>

#include "scenario.h"

namespace cuoverlap {

// The machine-readable last line a scenario prints under --result-line, and its parser.
std::string resultLine(const ScenarioResult& result);
std::optional<ScenarioResult> parseResultLine(const std::string& line);

// Runs `/proc/self/exe <scenario> <options> --result-line --no-baseline`; nullopt if it failed.
std::optional<ScenarioResult> measureBaseline(const std::string& scenario, const ScenarioOptions& options,
                                              bool serialize);

}  // namespace cuoverlap
