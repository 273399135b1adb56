// The part of a run that `gate` and `diff` judge (`--scope auto|steady|whole`; docs/metrics.md,
// "gate scope"): the steady state, or the whole run. Each command prints the scope it chose, and
// every check or comparison reads the report narrowed to it. Also `--iterations NAME`, the user's
// choice of the steady state's iterations, one option for analyze, gate, diff, export and
// summarize.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cuoverlap/report.h"

namespace CLI { class App; }

namespace cuoverlap::cli {

// `--iterations NAME` on `cmd`, stored in `iterations` (AnalysisOptions::iterations).
void addIterationsOption(CLI::App& cmd, std::optional<std::string>& iterations);

// --iterations given beside options that leave the steady state out (`leaving_out`: those given,
// as the user wrote them, e.g. "--range", "--scope whole") is a UserError, one wording for every
// command: "--iterations chooses the steady state's iterations, which --range leaves out".
void checkIterations(const std::optional<std::string>& iterations, const std::vector<std::string>& leaving_out);

// The share of the run's GPU busy time below which `--scope auto` does not judge the steady state.
inline constexpr double kMinJudgedShare = 0.5;

struct JudgedScope {
  std::string description;  // "steady state +1.2 ms to +9.8 ms (38 iterations ...), 87.1% of the
                            // GPU busy time" or "whole run, 100% of the GPU busy time (why)"
  std::string name;         // "steady state +1.2 ms to +9.8 ms" or "whole run"
  std::optional<std::pair<Ns, Ns>> window;  // the steady state's [start, end), trace clock
};

// Why `--scope auto` judges this trace's whole run (" (no steady state found)", " (the steady
// state ... covers only 8.3% of the GPU busy time: less than half, so the whole run is judged)"),
// or "" when it judges the steady state.
std::string autoWholeRunReason(const TraceReport& report);

// Narrows `report` (devices, findings) to `scope` ("auto", "steady", "whole") and says which part
// it judges. `why_whole` replaces the reason printed when the whole run is judged (diff: the other
// trace's steady state did not qualify). --scope steady without a steady state is a UserError.
JudgedScope judgeScope(TraceReport& report, const std::string& scope, const std::string& why_whole = "");

}  // namespace cuoverlap::cli
