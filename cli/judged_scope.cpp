#include "judged_scope.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cuoverlap/error.h"
#include "cuoverlap/units.h"
#include "cuoverlap/gate.h"

namespace cuoverlap::cli {
namespace {

std::string relative(const TraceReport& report, Ns t) {
  const Ns offset = t - report.first_op_start;
  return (offset >= 0 ? "+" : "-") + units::formatDuration(offset >= 0 ? offset : -offset);
}

}  // namespace

void addIterationsOption(CLI::App& cmd, std::optional<std::string>& iterations) {
  cmd.add_option("--iterations", iterations,
                 "The NVTX range whose instances are the steady state's iterations: a name (step 7), "
                 "its pattern (step N) or the glob `cuoverlap ranges` prints (step *)");
}

void checkIterations(const std::optional<std::string>& iterations, const std::vector<std::string>& leaving_out) {
  if (!iterations || leaving_out.empty()) return;
  throw UserError(fmt::format("--iterations chooses the steady state's iterations, which {} {} out",
                              fmt::join(leaving_out, " and "), leaving_out.size() == 1 ? "leaves" : "leave"));
}

std::string autoWholeRunReason(const TraceReport& report) {
  if (!report.steady_state || !report.steady_state->found) return " (no steady state found)";
  const SteadyState& s = *report.steady_state;
  if (s.busy_share >= kMinJudgedShare) return "";
  // A credible steady state holds most of the GPU work from its start on (docs/metrics.md): what it
  // misses is mostly the work before it (warm-up, compilation, autotuning), which auto keeps
  // judging; --scope steady leaves it out on purpose.
  return fmt::format(" (the steady state, {} to {}, covers only {} of the GPU busy time: less than "
                     "half, so the whole run is judged; --scope steady judges the loop alone)",
                     relative(report, s.start), relative(report, s.end),
                     units::formatPercent(s.busy_share));
}

JudgedScope judgeScope(TraceReport& report, const std::string& scope, const std::string& why_whole) {
  const bool found = report.steady_state && report.steady_state->found;
  if (scope == "steady" && !found) {
    throw UserError(fmt::format("{}: --scope steady: no steady state ({})", report.path,
                                report.steady_state ? report.steady_state->reason : "not analyzed"));
  }
  std::string reason = why_whole;
  if (reason.empty() && scope == "auto") reason = autoWholeRunReason(report);
  if (scope == "whole" || !reason.empty()) {
    return {fmt::format("whole run, 100% of the GPU busy time{}", reason), "whole run", std::nullopt};
  }
  const SteadyState& s = *report.steady_state;
  report.devices = s.devices;
  report.findings = s.findings;
  const std::string name = fmt::format("steady state {} to {}", relative(report, s.start), relative(report, s.end));
  return {fmt::format("{} ({} iterations from {}, {} warm-up dropped), {} of the GPU busy time", name,
                      s.iterations, terminalSafe(s.source), s.warmup_dropped, units::formatPercent(s.busy_share)),
          name, std::pair<Ns, Ns>{s.start, s.end}};
}

}  // namespace cuoverlap::cli
