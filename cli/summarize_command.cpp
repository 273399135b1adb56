// `cuoverlap summarize TRACE... [-o OUT]`: the rank summary of each trace (summary.h,
// docs/summaries.md), for analyzing a job whose traces stay on the nodes that recorded them.
#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "help_sections.h"
#include "judged_scope.h"
#include "cuoverlap/diagnosis.h"
#include "cuoverlap/error.h"
#include "cuoverlap/summary.h"
#include "output_file.h"
#include "terminal.h"

namespace cuoverlap::cli {
namespace {

struct SummarizeArgs {
  std::vector<std::string> traces;
  std::string output;  // empty: beside each trace
  bool force = false;
  std::optional<std::uint16_t> device;
  std::optional<std::uint32_t> pid;
  std::string gap_threshold;
  std::string window;
  std::optional<std::string> iterations;  // the steady state's iterations (analyze --iterations)
  bool quiet = false;
};

AnalysisOptions summaryOptions(const SummarizeArgs& args) {
  AnalysisOptions options;
  options.scope.device = args.device;
  options.scope.pid = args.pid;
  if (!args.gap_threshold.empty()) options.gap_threshold_ns = parseDuration(args.gap_threshold);
  checkIterations(args.iterations, args.window.empty() ? std::vector<std::string>{}
                                                       : std::vector<std::string>{"--window"});
  options.iterations = args.iterations;
  if (!args.window.empty()) {
    parseWindow(args.window, Ns{0});  // malformed: UserError now; resolved per trace
    options.window = args.window;
  }
  return options;
}

void runSummarize(const SummarizeArgs& args) {
  if (!args.output.empty() && args.traces.size() != 1) {
    throw UserError("-o names one summary: give one trace, or leave -o out to write each "
                    "summary beside its trace");
  }
  const AnalysisOptions options = summaryOptions(args);
  for (const std::string& trace : args.traces) {
    const std::string path = args.output.empty() ? summaryPathFor(trace) : args.output;
    OutputFile out(path, {trace}, args.force);  // refused before the trace is read
    out.stream() << summarizeTrace(trace, options);
    out.commit();
    if (!args.quiet) fmt::print(stderr, "cuoverlap: {} -> {}\n", stderrText(trace), stderrText(out.displayName()));
  }
}

}  // namespace

void registerSummarizeCommand(CLI::App& app, CommandResult& result) {
  auto* cmd = app.add_subcommand(
      "summarize", "Write the rank summary (.cosum) of traces, to analyze a job without its traces");
  auto args = std::make_shared<SummarizeArgs>();
  cmd->add_option("traces", args->traces, "Traces: cuoverlap traces, Nsight Systems SQLite exports "
                                          "or PyTorch profiler JSON")->required();
  cmd->add_option("-o,--output", args->output,
                  "The summary's path (one trace; default: beside each trace, as NAME.cosum)");
  cmd->add_flag("--force", args->force, "Replace existing summaries");
  cmd->add_option("--device", args->device, "Summarize only this device id");
  cmd->add_option("--pid", args->pid, "Summarize only this process id");
  cmd->add_option("--gap-threshold", args->gap_threshold,
                  "Shortest idle gap attributed to a cause, e.g. 10us (default 10us); analyze "
                  "the summaries with the same value");
  cmd->add_option("--window", args->window, "START:END, as for analyze");
  addIterationsOption(*cmd, args->iterations);
  cmd->add_flag("-q,--quiet", args->quiet, "Print nothing on success");
  setHelpSections(*cmd, {
      std::string(kTracesNote) + " The summary holds the trace's report and every collective of its ranks; "
      "`cuoverlap analyze *.cosum` merges them into the job report (docs/summaries.md).",
      {{"cuoverlap summarize /scratch/run/rank3.sqlite", "writes /scratch/run/rank3.cosum beside the trace"},
       {"cuoverlap analyze gathered/*.cosum", "then, anywhere: the job's report from the summaries alone"}},
      reportExitStatus("every summary was written"),
      traceEnvironment(TerminalUse::kNone)});
  cmd->callback([args, &result] {
    runSummarize(*args);
    result.exit_code = 0;
  });
}

}  // namespace cuoverlap::cli
