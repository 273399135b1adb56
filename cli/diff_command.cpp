// `cuoverlap diff BEFORE AFTER`: metrics side by side with deltas, finding and kernel-time
// changes. With --fail-on-overlap-drop X it exits 1 when any device's overlap_ratio fell by more
// than X (absolute, e.g. 0.05), so a CI job can compare a change against its base. --scope picks
// what both sides compare, as gate's does, and the diff says which scope each side is.
#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "commands.h"
#include "help_sections.h"
#include "judged_scope.h"
#include "cuoverlap/analysis.h"
#include "cuoverlap/gate.h"
#include "cuoverlap/reader.h"
#include "cuoverlap/report_diff.h"
#include "output_file.h"

namespace cuoverlap::cli {
namespace {

struct DiffArgs {
  std::string before;
  std::string after;
  std::string format = "text";
  std::string output;  // empty: stdout
  bool force = false;  // replace an existing output file
  std::optional<std::string> fail_on_overlap_drop;
  std::optional<std::uint16_t> device;
  std::string scope = "auto";  // auto | steady | whole
  std::optional<std::string> iterations;  // both sides' steady-state iterations (analyze --iterations)
};

std::string renderDiff(const ReportDiff& diff, const std::string& format) {
  if (format == "json") return renderDiffJson(diff);
  if (format == "markdown") return renderDiffMarkdown(diff);
  return renderDiffText(diff);
}

DiffScope diffScope(const JudgedScope& judged) { return {judged.description, judged.window}; }

// Like is compared with like: under `auto` both sides are steady states when each qualifies (as
// for gate), else both are whole runs, and the side whose steady state did qualify says why not.
std::pair<DiffScope, DiffScope> judgeBoth(TraceReport& before, TraceReport& after, const std::string& scope) {
  std::string why_before, why_after;
  if (scope == "auto") {
    why_before = autoWholeRunReason(before);
    why_after = autoWholeRunReason(after);
    const auto other = [](const TraceReport& report) {
      return fmt::format(" (compared with {}, whose steady state is not judged)", report.path);
    };
    if (why_before.empty() && !why_after.empty()) why_before = other(after);
    if (why_after.empty() && !why_before.empty()) why_after = other(before);
  }
  const std::string before_mode = why_before.empty() ? scope : "whole";
  const std::string after_mode = why_after.empty() ? scope : "whole";
  return {diffScope(judgeScope(before, before_mode, why_before)), diffScope(judgeScope(after, after_mode, why_after))};
}

int runDiff(const DiffArgs& args) {
  std::optional<double> max_drop;
  if (args.fail_on_overlap_drop) {
    max_drop = parseFraction(*args.fail_on_overlap_drop, "--fail-on-overlap-drop");
  }
  checkIterations(args.iterations, args.scope == "whole" ? std::vector<std::string>{"--scope whole"}
                                                         : std::vector<std::string>{});
  AnalysisOptions options;
  options.scope.device = args.device;
  options.iterations = args.iterations;
  const Trace before_trace = readTrace(args.before);
  const Trace after_trace = readTrace(args.after);
  TraceReport before = analyzeTrace(before_trace, options);
  TraceReport after = analyzeTrace(after_trace, options);
  const auto [before_scope, after_scope] = judgeBoth(before, after, args.scope);
  const ReportDiff diff = diffReports(before, after, before_scope, after_scope);
  OutputFile out(args.output, {args.before, args.after}, args.force);
  out.stream() << renderDiff(diff, args.format);
  out.commit();
  noteWritten(out, args.output, args.format);
  const double drop = largestOverlapDrop(diff);
  if (max_drop && drop > *max_drop) {
    fmt::print(stderr, "cuoverlap: overlap_ratio dropped by {:.4f} (more than {:.4f})\n", drop, *max_drop);
    return 1;
  }
  return 0;
}

}  // namespace

void registerDiffCommand(CLI::App& app, CommandResult& result) {
  auto* cmd = app.add_subcommand("diff", "Compare two traces: metric deltas, findings, kernel time");
  auto args = std::make_shared<DiffArgs>();
  cmd->add_option("before", args->before, "The baseline trace")->required();
  cmd->add_option("after", args->after, "The trace to compare with it")->required();
  cmd->add_option("--format", args->format, "Output format")
      ->check(CLI::IsMember({"text", "json", "markdown"}))
      ->capture_default_str();
  cmd->add_option("-o,--output", args->output, "Write the diff to this file instead of stdout");
  cmd->add_flag("--force", args->force, "Replace an existing output file");
  cmd->add_option("--fail-on-overlap-drop", args->fail_on_overlap_drop,
                  "Exit 1 when a device's overlap_ratio fell by more than X (0.05 or 5%)");
  cmd->add_option("--device", args->device, "Compare only this device id");
  cmd->add_option("--scope", args->scope,
                  "What both sides compare: steady (the steady states), whole (the whole runs) or "
                  "auto (the steady states when both qualify, as for gate, else the whole runs)")
      ->check(CLI::IsMember({"auto", "steady", "whole"}))
      ->capture_default_str();
  addIterationsOption(*cmd, args->iterations);
  std::vector<HelpRow> exit_status = reportExitStatus("the diff was written");
  exit_status.insert(exit_status.begin() + 1,
                     HelpRow{"1", "with --fail-on-overlap-drop X: a device's overlap ratio fell by more than X"});
  setHelpSections(*cmd, {
      kTracesNote,
      {{"cuoverlap diff before.sqlite after.sqlite", "metrics side by side with deltas, findings and kernel time"},
       {"cuoverlap diff base.sqlite pr.sqlite -o diff.md --fail-on-overlap-drop 0.05", "a Markdown diff for a pull request; exit 1 when overlap fell by more than 0.05"}},
      exit_status,
      traceEnvironment(TerminalUse::kNone)});
  const CLI::Option* format = cmd->get_option("--format");
  cmd->callback([args, format, &result] {
    // `-o diff.md` asks for Markdown unless --format says otherwise.
    if (format->count() == 0) args->format = formatForOutput(args->output, args->format, {"text", "json", "markdown"});
    result.exit_code = runDiff(*args);
  });
}

}  // namespace cuoverlap::cli
