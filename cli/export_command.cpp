// `cuoverlap export FILE --format perfetto|kineto -o trace.json`: the trace as Chrome trace-event
// JSON for ui.perfetto.dev and chrome://tracing (layout: reports/include/cuoverlap/perfetto_export.h),
// or in the PyTorch profiler's layout for HolisticTraceAnalysis and the PyTorch trace viewers
// (reports/include/cuoverlap/kineto_export.h).
#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <unistd.h>

#include <memory>
#include <string>

#include "commands.h"
#include "cuoverlap/error.h"
#include "cuoverlap/kineto_export.h"
#include "cuoverlap/perfetto_export.h"
#include "cuoverlap/reader.h"
#include "output_file.h"

namespace cuoverlap::cli {
namespace {

struct ExportArgs {
  std::string file;
  std::string format = "perfetto";
  std::string output;   // empty: stdout, unless stdout is a terminal
  bool force = false;  // replace an existing output file
};

// Writes the export in the chosen format; returns the summary line for stderr.
std::string writeExport(const ExportArgs& args, const Trace& trace, std::ostream& out) {
  if (args.format == "kineto") {
    const KinetoExportStats stats = writeKinetoTrace(trace, out);
    return fmt::format("{} GPU ops, {} API calls, {} ac2g flows, {} annotations", stats.ops,
                       stats.calls, stats.flows, stats.ranges);
  }
  const PerfettoExportStats stats = writePerfettoTrace(trace, out);
  return fmt::format("{} GPU ops, {} API calls, {} launch arrows, {} NVTX", stats.ops, stats.calls,
                     stats.flows, stats.nvtx);
}

void runExport(const ExportArgs& args) {
  if (args.output.empty() && isatty(STDOUT_FILENO)) {
    throw UserError("the export is JSON for a viewer, not for a terminal: give -o FILE (or -o - to "
                    "write it to the terminal anyway)");
  }
  OutputFile out(args.output, {args.file}, args.force);
  const Trace trace = readTrace(args.file);
  const std::string summary = writeExport(args, trace, out.stream());
  out.commit();
  if (out.displayName() == "stdout") return;
  fmt::print(stderr, "cuoverlap: wrote {} ({})\n", args.output, summary);
}

}  // namespace

void registerExportCommand(CLI::App& app, CommandResult& result) {
  auto* cmd = app.add_subcommand("export", "Export a trace for ui.perfetto.dev / chrome://tracing, or for PyTorch profiler tools (HTA)");
  auto args = std::make_shared<ExportArgs>();
  cmd->add_option("file", args->file,
                  "A cuoverlap trace, Nsight Systems SQLite export or PyTorch profiler JSON")->required();
  cmd->add_option("--format", args->format,
                  "perfetto: Chrome/Perfetto trace JSON; kineto: PyTorch profiler layout (HTA)")
      ->check(CLI::IsMember({"perfetto", "kineto"}))
      ->capture_default_str();
  cmd->add_option("-o,--output", args->output,
                  "Output file ('-' for stdout; without -o, stdout unless it is a terminal)");
  cmd->add_flag("--force", args->force, "Replace an existing output file");
  cmd->callback([args, &result] {
    runExport(*args);
    result.exit_code = 0;
  });
}

}  // namespace cuoverlap::cli
