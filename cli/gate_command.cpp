// `cuoverlap gate FILE... [checks] [--junit OUT.xml]`: the CI gate. One line per check, exit 0
// when every check passes, 1 when any fails, 2 on bad input or usage (a UserError).
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "commands.h"
#include "cuoverlap/analysis.h"
#include "cuoverlap/error.h"
#include "cuoverlap/gate.h"
#include "cuoverlap/reader.h"

namespace cuoverlap::cli {
namespace {

struct GateArgs {
  std::vector<std::string> files;
  std::optional<std::string> min_overlap;
  std::optional<std::string> min_copy_hidden;
  std::optional<std::string> max_idle_fraction;
  std::optional<std::string> min_pipeline_efficiency;
  std::vector<std::string> fail_on;
  std::optional<std::uint16_t> device;
  std::optional<std::string> range;
  std::string scope = "auto";  // auto | steady | whole
  std::string junit;
};

void addGateOptions(CLI::App& cmd, GateArgs& args) {
  cmd.add_option("files", args.files, "Traces: cuoverlap traces or Nsight Systems SQLite exports")
      ->required();
  cmd.add_option("--min-overlap", args.min_overlap, "Fail when overlap_ratio is below X (0.3 or 30%)");
  cmd.add_option("--min-copy-hidden", args.min_copy_hidden,
                 "Fail when copy_hidden_fraction is below X");
  cmd.add_option("--max-idle-fraction", args.max_idle_fraction,
                 "Fail when idle time / span is above X");
  cmd.add_option("--min-pipeline-efficiency", args.min_pipeline_efficiency,
                 "Fail when pipeline_efficiency is below X");
  cmd.add_option("--fail-on", args.fail_on, "Fail when any of these findings appears (ID[,ID...])")
      ->delimiter(',');
  cmd.add_option("--device", args.device, "Check only this device id");
  cmd.add_option("--range", args.range, "Check only the instances of this NVTX range");
  cmd.add_option("--scope", args.scope,
                 "What the checks judge: steady (the steady state), whole (the whole run) or auto "
                 "(the steady state when one is found, else the whole run)")
      ->check(CLI::IsMember({"auto", "steady", "whole"}))
      ->capture_default_str();
  cmd.add_option("--junit", args.junit, "Also write the checks as JUnit XML to this file");
}

GateThresholds thresholdsOf(const GateArgs& args) {
  GateThresholds thresholds;
  const auto fraction = [](const std::optional<std::string>& text, const char* option) {
    return text ? std::optional<double>(parseFraction(*text, option)) : std::nullopt;
  };
  thresholds.min_overlap = fraction(args.min_overlap, "--min-overlap");
  thresholds.min_copy_hidden = fraction(args.min_copy_hidden, "--min-copy-hidden");
  thresholds.max_idle_fraction = fraction(args.max_idle_fraction, "--max-idle-fraction");
  thresholds.min_pipeline_efficiency = fraction(args.min_pipeline_efficiency, "--min-pipeline-efficiency");
  const auto& known = knownFindingIds();
  for (const std::string& id : args.fail_on) {
    if (std::find(known.begin(), known.end(), id) == known.end()) {
      throw UserError(fmt::format("--fail-on: unknown finding id '{}' (known: {})", id,
                                  fmt::join(known, ", ")));
    }
    thresholds.fail_on.push_back(id);
  }
  if (thresholds.empty()) {
    throw UserError("gate: no checks given (use --min-overlap, --min-copy-hidden, "
                    "--max-idle-fraction, --min-pipeline-efficiency or --fail-on)");
  }
  return thresholds;
}

// A trace without GPU work in scope cannot pass a metric check: that is bad input, not a pass.
void requireDevices(const TraceReport& report, const GateArgs& args) {
  if (!report.devices.empty()) return;
  std::string scope;
  if (args.device) scope += fmt::format(" on device {}", *args.device);
  if (args.range) scope += fmt::format(" in NVTX range '{}'", *args.range);
  throw UserError(fmt::format("{}: no GPU activity{}", report.path, scope));
}

void writeJunit(const std::string& path, const std::vector<GateCheck>& checks) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << gateJunitXml(checks);
  if (!out.flush()) throw UserError(fmt::format("{}: cannot write the JUnit file", path));
}

// Narrows the report to the scope the checks judge and says which one it judged.
void applyScope(TraceReport& report, const GateArgs& args) {
  if (args.range) {
    fmt::print("gate: {}: scope NVTX range '{}' ({} instances)\n", report.path, *args.range,
               report.range_summary ? report.range_summary->count : 0);
    return;
  }
  const bool found = report.steady_state && report.steady_state->found;
  if (args.scope == "steady" && !found) {
    throw UserError(fmt::format("{}: --scope steady: no steady state ({})", report.path,
                                report.steady_state ? report.steady_state->reason : "not analyzed"));
  }
  if (args.scope == "whole" || !found) {
    fmt::print("gate: {}: scope whole run{}\n", report.path,
               args.scope == "auto" ? " (no steady state found)" : "");
    return;
  }
  const SteadyState& s = *report.steady_state;
  fmt::print("gate: {}: scope steady state ({} iterations from {}, {} warm-up dropped)\n",
             report.path, s.iterations, s.source, s.warmup_dropped);
  report.devices = s.devices;
  report.findings = s.findings;
}

int runGate(const GateArgs& args) {
  const GateThresholds thresholds = thresholdsOf(args);
  AnalysisOptions options;
  options.scope.device = args.device;
  options.scope.range = args.range;
  std::vector<std::unique_ptr<Trace>> traces;  // outlive the report, which points into them
  Report report;
  for (const std::string& file : args.files) {
    traces.push_back(std::make_unique<Trace>(readTrace(file)));
    report.traces.push_back(analyzeTrace(*traces.back(), options));
    requireDevices(report.traces.back(), args);
    applyScope(report.traces.back(), args);
  }
  const std::vector<GateCheck> checks = evaluateGate(report, thresholds);
  std::size_t failed = 0;
  for (const GateCheck& check : checks) {
    fmt::print("{}\n", formatGateCheck(check));
    failed += check.passed ? 0 : 1;
  }
  fmt::print("gate: {} of {} checks failed\n", failed, checks.size());
  if (!args.junit.empty()) writeJunit(args.junit, checks);
  return failed == 0 ? 0 : 1;
}

}  // namespace

void registerGateCommand(CLI::App& app, CommandResult& result) {
  auto* cmd = app.add_subcommand("gate", "Fail a CI job when overlap regresses (exit 0 pass, 1 fail, 2 bad input)");
  auto args = std::make_shared<GateArgs>();
  addGateOptions(*cmd, *args);
  cmd->callback([args, &result] { result.exit_code = runGate(*args); });
}

}  // namespace cuoverlap::cli
