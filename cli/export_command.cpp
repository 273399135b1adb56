// `cuoverlap export FILE --format perfetto|kineto -o trace.json`: the trace as Chrome trace-event
// JSON for ui.perfetto.dev and chrome://tracing (layout: reports/include/cuoverlap/perfetto_export.h),
// or in the PyTorch profiler's layout for HolisticTraceAnalysis and the PyTorch trace viewers
// (reports/include/cuoverlap/kineto_export.h). --device, --window and --range select what a
// Perfetto export holds; an output name ending in .gz is gzipped. A Kineto export is one rank:
// `-o rank%r.json` writes one file per rank of a multi-process trace.
#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <unistd.h>

#include <memory>
#include <optional>
#include <set>
#include <vector>
#include <string>
#include <string_view>
#include <tuple>

#include "commands.h"
#include "help_sections.h"
#include "judged_scope.h"
#include "cuoverlap/analysis.h"
#include "cuoverlap/diagnosis.h"
#include "cuoverlap/error.h"
#include "cuoverlap/gzip_ostream.h"
#include "cuoverlap/kineto_export.h"
#include "cuoverlap/perfetto_export.h"
#include "cuoverlap/reader.h"
#include "cuoverlap/trace_slice.h"
#include "output_file.h"
#include "terminal.h"

namespace cuoverlap::cli {
namespace {

struct ExportArgs {
  std::optional<std::uint16_t> device;
  std::string window;  // START:END as analyze --window; empty: everything
  std::optional<std::string> range;
  std::string file;
  std::string format = "perfetto";
  std::string output;   // empty: stdout, unless stdout is a terminal
  bool force = false;  // replace an existing output file
  bool steady_state = false;  // kineto: only the steady state's window
  std::optional<std::string> iterations;  // kineto: the steady state's iterations (analyze --iterations)
  bool quiet = false;         // no progress line
};

// Bad selections fail before the trace is read.
void checkSelection(const ExportArgs& args) {
  if (args.format == "kineto" && (args.device || args.range || !args.window.empty())) {
    throw UserError("--device, --window and --range apply to --format perfetto only");
  }
  if (args.format != "kineto" && args.steady_state) throw UserError("--steady-state applies to --format kineto only");
  // A Perfetto export shows the whole trace (or what --device, --window and --range select).
  if (args.format != "kineto") checkIterations(args.iterations, {"--format " + args.format});
  if (!args.window.empty()) parseWindow(args.window, Ns{0});  // malformed: UserError now
}

// "+TIME" sides count from the trace's first GPU op, as in analyze and every report.
PerfettoExportOptions perfettoOptions(const ExportArgs& args, const Trace& trace) {
  PerfettoExportOptions options;
  options.analysis.scope.device = args.device;
  options.analysis.scope.range = args.range;
  if (!args.window.empty()) {
    std::tie(options.analysis.scope.window_start, options.analysis.scope.window_end) =
        parseWindow(args.window, firstOpStart(trace));
  }
  return options;
}

bool endsWith(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

// The steady state's iterations, as ProfilerStep#N for HTA (none when no steady state is found);
// `iterations`: the NVTX range they are (--iterations), else the one the analysis chooses.
KinetoSteps kinetoSteps(const Trace& trace, const std::optional<std::string>& iterations) {
  AnalysisOptions options;
  options.iterations = iterations;
  const TraceReport report = analyzeTrace(trace, options);
  KinetoSteps steps;
  if (report.steady_state && report.steady_state->found) {
    steps.starts = report.steady_state->iteration_starts;
    steps.end = report.steady_state->end;
    steps.first_number = report.steady_state->warmup_dropped;
  }
  return steps;
}

// Writes the export in the chosen format; returns the summary line for stderr.
std::string writeFormat(const ExportArgs& args, const Trace& trace, std::ostream& out) {
  if (args.format == "kineto") {
    const KinetoSteps steps = kinetoSteps(trace, args.iterations);
    if (args.steady_state && steps.starts.empty()) {
      throw UserError(fmt::format("{}: no steady state found for --steady-state", args.file));
    }
    // As torch.profiler with a schedule that skips start-up and warm-up would have recorded it.
    const KinetoExportStats stats =
        args.steady_state ? writeKinetoTrace(sliceTime(trace, steps.starts.front(), steps.end), out, steps)
                          : writeKinetoTrace(trace, out, steps);
    return fmt::format("{} GPU ops, {} API calls, {} ac2g flows, {} annotations, {} ProfilerStep{}",
                       stats.ops, stats.calls, stats.flows, stats.ranges, stats.steps,
                       stats.names_cut == 0 ? std::string()
                                            : fmt::format("; {} names cut to {} bytes", stats.names_cut,
                                                          kKinetoNameBytes));
  }
  const PerfettoExportStats stats = writePerfettoTrace(trace, out, perfettoOptions(args, trace));
  return fmt::format("{} GPU ops, {} API calls, {} launch arrows, {} NVTX, {} idle gaps, {} finding marks",
                     stats.ops, stats.calls, stats.flows, stats.nvtx, stats.gaps, stats.findings);
}

// writeFormat, gzipped when the output name ends in .gz.
std::string writeExport(const ExportArgs& args, const Trace& trace, std::ostream& out) {
  if (!endsWith(args.output, ".gz")) return writeFormat(args, trace, out);
  GzipOStream gzipped(out);
  std::string summary = writeFormat(args, trace, gzipped);
  if (!gzipped.finish()) throw UserError(fmt::format("{}: cannot write the export", args.output));
  return summary;
}

std::string withRank(const std::string& pattern, std::int32_t rank) {
  std::string path;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '%' && i + 1 < pattern.size() && pattern[i + 1] == 'r') {
      path += std::to_string(rank);
      ++i;
    } else {
      path += pattern[i];
    }
  }
  return path;
}

// `-o rank%r.json`: one Kineto file per rank (HTA reads a folder of them), each holding that rank's
// processes with times relative to its own first event and distributedInfo from its recorded rank.
void exportKinetoRanks(const ExportArgs& args, const Trace& trace) {
  const auto ranks = processesByRank(trace);
  if (ranks.empty()) {
    throw UserError(fmt::format("{}: no process has a rank (RANK, OMPI_COMM_WORLD_RANK, ...): give -o "
                                "without %r", args.file));
  }
  std::set<std::uint32_t> ranked;
  for (const auto& entry : ranks) ranked.insert(entry.second.begin(), entry.second.end());
  std::set<std::uint32_t> left_out;
  for (const GpuOp& op : trace.ops) {
    if (ranked.count(op.pid) == 0) left_out.insert(op.pid);
  }
  for (std::uint32_t pid : left_out) {
    fmt::print(stderr, "cuoverlap: note: process {} has GPU ops but no rank; it is in no rank's file\n", pid);
  }
  for (const auto& entry : ranks) {
    const std::string path = withRank(args.output, entry.first);
    ExportArgs one = args;
    one.output = path;
    std::vector<std::string> others = {args.file};
    OutputFile out(path, others, args.force);
    const Trace slice = sliceProcesses(trace, entry.second);
    const std::string summary = writeExport(one, slice, out.stream());
    out.commit();
    fmt::print(stderr, "cuoverlap: wrote {} (rank {}: {})\n", stderrText(path), entry.first, summary);
  }
}

void runExport(const ExportArgs& args) {
  if (args.format == "kineto" && args.output.find("%r") != std::string::npos) {
    const Trace trace = [&args] {
      ProgressLine progress(args.quiet);
      return readTrace(args.file);
    }();
    return exportKinetoRanks(args, trace);
  }
  if (args.output.empty() && isatty(STDOUT_FILENO)) {
    throw UserError("the export is JSON for a viewer, not for a terminal: give -o FILE (or -o - to "
                    "write it to the terminal anyway)");
  }
  OutputFile out(args.output, {args.file}, args.force);
  std::string summary;
  {
    ProgressLine progress(args.quiet);  // reading, the analysis behind the tracks, writing
    const Trace trace = readTrace(args.file);
    if (args.format == "kineto") {
      const auto ranks = processesByRank(trace);
      if (ranks.size() > 1) {
        throw UserError(fmt::format("{} holds {} ranks; a Kineto file is one rank (HTA reads one per rank): "
                                    "give -o with %r for one file each, e.g. -o 'rank%r.json.gz'",
                                    args.file, ranks.size()));
      }
    }
    summary = writeExport(args, trace, out.stream());
  }
  out.commit();
  if (out.displayName() == "stdout") return;
  fmt::print(stderr, "cuoverlap: wrote {} ({})\n", stderrText(args.output), summary);
}

}  // namespace

void registerExportCommand(CLI::App& app, CommandResult& result) {
  auto* cmd = app.add_subcommand("export", "Export a trace for ui.perfetto.dev / chrome://tracing, or for PyTorch profiler tools (HTA); -o NAME.gz gzips");
  auto args = std::make_shared<ExportArgs>();
  cmd->add_option("file", args->file,
                  "A cuoverlap trace, Nsight Systems SQLite export or PyTorch profiler JSON")->required();
  cmd->add_option("--device", args->device, "Export only this device id (and the processes using it)");
  cmd->add_option("--window", args->window,
                  "Export only what intersects START:END (as analyze --window)");
  cmd->add_option("--range", args->range,
                  "Export only what intersects the instances of this NVTX range (as analyze --range)");
  cmd->add_option("--format", args->format,
                  "perfetto: Chrome/Perfetto trace JSON; kineto: PyTorch profiler layout (HTA)")
      ->check(CLI::IsMember({"perfetto", "kineto"}))
      ->capture_default_str();
  cmd->add_option("-o,--output", args->output,
                  "Output file ('-' for stdout; without -o, stdout unless it is a terminal); "
                  "kineto: %r in it writes one file per rank (rank%r.json.gz)");
  cmd->add_flag("--force", args->force, "Replace an existing output file");
  cmd->add_flag("--steady-state", args->steady_state,
                "kineto: only the steady state's iterations (each rank's own), as a torch.profiler "
                "schedule that skips start-up and warm-up records them");
  addIterationsOption(*cmd, args->iterations);
  addQuietOption(*cmd, args->quiet);
  setHelpSections(*cmd, {
      kTracesNote,
      {{"cuoverlap export run.sqlite -o trace.json.gz", "for ui.perfetto.dev or chrome://tracing, gzipped"},
       {"cuoverlap export run.sqlite --window +10ms:+20ms -o part.json", "only what intersects those 10 ms"},
       {"cuoverlap export job.sqlite --format kineto -o 'rank%r.json.gz'", "one PyTorch profiler file per rank, for HolisticTraceAnalysis"},
       {"cuoverlap export run.sqlite --format kineto --steady-state -o steps.json", "the steady state's iterations only, as ProfilerStep#N"}},
      reportExitStatus("the export was written"),
      traceEnvironment(TerminalUse::kProgress)});
  cmd->callback([args, &result] {
    checkSelection(*args);
    runExport(*args);
    result.exit_code = 0;
  });
}

}  // namespace cuoverlap::cli
