// `cuoverlap gate FILE... [checks] [--junit OUT.xml]`: the CI gate. One line per check, exit 0
// when every check passes, 1 when any fails, 2 on bad input or usage (a UserError).
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "commands.h"
#include "help_sections.h"
#include "judged_scope.h"
#include "terminal.h"
#include "cuoverlap/analysis.h"
#include "cuoverlap/error.h"
#include "cuoverlap/diagnosis.h"
#include "cuoverlap/gate.h"
#include "cuoverlap/job.h"
#include "cuoverlap/reader.h"
#include "cuoverlap/units.h"
#include "output_file.h"

namespace cuoverlap::cli {
namespace {

struct GateArgs {
  std::vector<std::string> files;
  std::optional<std::string> min_overlap;
  std::optional<std::string> min_copy_hidden;
  std::optional<std::string> max_idle_fraction;
  std::optional<std::string> min_pipeline_efficiency;
  std::optional<std::string> min_comm_hidden;
  std::optional<std::string> max_rank_skew;
  std::vector<std::string> fail_on;
  std::optional<std::uint16_t> device;
  std::optional<std::string> range;
  std::string scope = "auto";  // auto | steady | whole
  std::optional<std::string> iterations;  // the steady state's iterations (analyze --iterations)
  std::string junit;
  std::string color = "auto";
  bool force = false;  // replace an existing --junit file
};

void addGateOptions(CLI::App& cmd, GateArgs& args) {
  cmd.add_option("files", args.files, "Traces: cuoverlap traces, Nsight Systems SQLite exports (either also gzip-compressed, .sqlite.gz) or PyTorch profiler (Kineto) JSON (.json, .json.gz)")
      ->required();
  cmd.add_option("--min-overlap", args.min_overlap, "Fail when overlap_ratio is below X (0.3 or 30%)");
  cmd.add_option("--min-copy-hidden", args.min_copy_hidden,
                 "Fail when copy_hidden_fraction is below X");
  cmd.add_option("--max-idle-fraction", args.max_idle_fraction,
                 "Fail when idle time / span is above X");
  cmd.add_option("--min-pipeline-efficiency", args.min_pipeline_efficiency,
                 "Fail when pipeline_efficiency is below X");
  cmd.add_option("--min-comm-hidden", args.min_comm_hidden,
                 "Fail when communication.hidden_fraction is below X (devices with NCCL kernels)");
  cmd.add_option("--max-rank-skew", args.max_rank_skew,
                 "Fail when a collective's skew across ranks exceeds DURATION (e.g. 500us)");
  cmd.add_option("--fail-on", args.fail_on, "Fail when any of these findings appears (ID[,ID...])")
      ->delimiter(',');
  cmd.add_option("--device", args.device, "Check only this device id");
  cmd.add_option("--range", args.range, "Check only the instances of this NVTX range");
  cmd.add_option("--scope", args.scope,
                 "What the checks judge: steady (the steady state), whole (the whole run) or auto "
                 "(the steady state when one is found, else the whole run)")
      ->check(CLI::IsMember({"auto", "steady", "whole"}))
      ->capture_default_str();
  addIterationsOption(cmd, args.iterations);
  cmd.add_option("--junit", args.junit, "Also write the checks as JUnit XML to this file");
  addColorOption(cmd, args.color);
  cmd.add_flag("--force", args.force, "Replace an existing --junit file");
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
  thresholds.min_comm_hidden = fraction(args.min_comm_hidden, "--min-comm-hidden");
  if (args.max_rank_skew) thresholds.max_rank_skew_ns = parseDuration(*args.max_rank_skew);
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
                    "--max-idle-fraction, --min-pipeline-efficiency, --min-comm-hidden, "
                    "--max-rank-skew or --fail-on)");
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

JunitRun startJunitRun() {
  JunitRun run;
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &utc);
  run.timestamp = stamp;
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) == 0) run.hostname = host;
  return run;
}

// Narrows the report to the scope the checks judge; says which one, its window and the share of
// the run's GPU busy time it covers. `line` is "gate: PATH: scope ...".
struct GateScope {
  std::string line;
  JudgedScope judged;
};

GateScope applyScope(TraceReport& report, const GateArgs& args) {
  const std::string path = terminalSafe(report.path);
  if (args.range) {
    const std::string name = fmt::format("NVTX range '{}' ({} instances)", terminalSafe(*args.range),
                                         report.range_summary ? report.range_summary->count : 0);
    return {fmt::format("gate: {}: scope {}\n", path, name), {name, name, std::nullopt}};
  }
  JudgedScope judged = judgeScope(report, args.scope);
  std::string line = fmt::format("gate: {}: scope {}\n", path, judged.description);
  return {std::move(line), std::move(judged)};
}

// --max-rank-skew judges the collectives of the scope it printed: with steady-state windows, those
// that start inside the union of the ranks' windows, put on the job's axis (JobAnalysis::clock).
void scopeRankSkews(Report& report, const std::vector<std::pair<std::string, std::pair<Ns, Ns>>>& windows) {
  if (!report.job || windows.empty()) return;
  JobAnalysis& job = *report.job;
  std::optional<std::pair<Ns, Ns>> axis;
  for (std::size_t i = 0; i < job.ranks.size(); ++i) {
    for (const auto& [path, window] : windows) {
      if (path != job.ranks[i].path) continue;
      const Ns offset = i < job.clock_offsets.size() ? job.clock_offsets[i] : 0;
      const std::pair<Ns, Ns> on_axis{window.first - offset, window.second - offset};
      axis = axis ? std::pair<Ns, Ns>{std::min(axis->first, on_axis.first), std::max(axis->second, on_axis.second)}
                  : on_axis;
    }
  }
  if (!axis) return;
  job.matched = 0;
  job.max_skew_ns = 0;
  for (const auto& [start, skew] : job.skews) {
    if (start < axis->first || start >= axis->second) continue;
    ++job.matched;
    job.max_skew_ns = std::max(job.max_skew_ns, skew);
  }
}

int judge(const GateArgs& args, JunitRun& run, OutputFile* junit) {
  const GateThresholds thresholds = thresholdsOf(args);
  std::vector<std::string> leaving_out;
  if (args.range) leaving_out.emplace_back("--range");
  if (args.scope == "whole") leaving_out.emplace_back("--scope whole");
  checkIterations(args.iterations, leaving_out);
  AnalysisOptions options;
  options.scope.device = args.device;
  options.scope.range = args.range;
  options.iterations = args.iterations;
  std::vector<std::unique_ptr<Trace>> traces;  // none kept: the checks read only the report
  Report report = analyzeFiles(args.files, options, false, traces);
  std::string lines;
  std::vector<std::pair<std::string, std::pair<Ns, Ns>>> windows;
  for (TraceReport& trace : report.traces) {
    requireDevices(trace, args);
    GateScope scope = applyScope(trace, args);
    lines += scope.line;
    if (scope.judged.window) windows.emplace_back(trace.path, *scope.judged.window);
    run.trace_seconds.emplace_back(trace.path, trace.analysis_seconds);
    run.trace_scopes.emplace_back(trace.path, scope.judged.name);
  }
  scopeRankSkews(report, windows);
  const std::vector<GateCheck> checks = evaluateGate(report, thresholds);
  std::size_t failed = 0;
  const bool color = useColor(args.color, STDOUT_FILENO);
  for (const GateCheck& check : checks) {
    const std::string line = formatGateCheck(check);  // "PASS  ..." / "FAIL  ..."
    lines += color ? fmt::format("\x1b[{}m{}\x1b[0m{}\n", check.passed ? "32" : "1;31",
                                 line.substr(0, 4), line.substr(4))
                   : line + "\n";
    failed += check.passed ? 0 : 1;
  }
  lines += fmt::format("gate: {} of {} checks failed\n", failed, checks.size());
  writeOutput("-", {}, false, lines);
  if (junit) {
    junit->stream() << gateJunitXml(checks, run);
    junit->commit();
    noteWritten(*junit, args.junit, "JUnit XML");
  }
  return failed == 0 ? 0 : 1;
}

// Bad input still leaves a JUnit file (one errored case with the reason) when one was asked for.
// The JUnit path is checked first (a refused path — an input, an existing file without --force —
// costs no analysis and gets no file).
int runGate(const GateArgs& args) {
  JunitRun run = startJunitRun();
  std::unique_ptr<OutputFile> junit;
  if (!args.junit.empty()) junit = std::make_unique<OutputFile>(args.junit, args.files, args.force);
  try {
    return judge(args, run, junit.get());
  } catch (const UserError& error) {
    if (junit) {
      junit->stream() << gateJunitErrorXml(error.what(), run);
      junit->commit();
    }
    throw;
  }
}

}  // namespace

void registerGateCommand(CLI::App& app, CommandResult& result) {
  auto* cmd = app.add_subcommand("gate", "Fail a CI job when overlap regresses (exit 0 pass, 1 fail, 2 bad input)");
  auto args = std::make_shared<GateArgs>();
  addGateOptions(*cmd, *args);
  std::vector<HelpRow> exit_status = reportExitStatus("every check passed");
  exit_status.insert(exit_status.begin() + 1, HelpRow{"1", "a check failed (its FAIL line says which)"});
  setHelpSections(*cmd, {
      std::string(kTracesNote) + " Rank summaries (*.cosum, summarize) stand for their traces.",
      {{"cuoverlap gate run.sqlite --min-overlap 0.3 --fail-on pageable-memcpy", "overlap ratio at least 0.3 and no pageable copies"},
       {"cuoverlap gate rank*.sqlite --min-comm-hidden 80% --max-rank-skew 500us --junit gate.xml", "a job's communication hidden under compute, its ranks in step; JUnit XML for CI"},
       {"cuoverlap gate run.sqlite --scope steady --iterations 'step *' --max-idle-fraction 0.1", "the steady state of the step ranges idle at most 10%"}},
      exit_status,
      traceEnvironment(TerminalUse::kColour)});
  cmd->callback([args, &result] { result.exit_code = runGate(*args); });
}

}  // namespace cuoverlap::cli
