// `cuoverlap export FILE --format perfetto|kineto -o trace.json`: the trace as Chrome trace-event
// JSON for ui.perfetto.dev and chrome://tracing (layout: reports/include/cuoverlap/perfetto_export.h),
// or in the PyTorch profiler's layout for HolisticTraceAnalysis and the PyTorch trace viewers
// (reports/include/cuoverlap/kineto_export.h). --device, --window and --range select what a
// Perfetto export holds; an output name ending in .gz is gzipped.
#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <unistd.h>

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>

#include "commands.h"
#include "cuoverlap/diagnosis.h"
#include "cuoverlap/error.h"
#include "cuoverlap/gzip_ostream.h"
#include "cuoverlap/inert_text.h"
#include "cuoverlap/kineto_export.h"
#include "cuoverlap/perfetto_export.h"
#include "cuoverlap/reader.h"
#include "output_file.h"

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
};

// Bad selections fail before the trace is read.
void checkSelection(const ExportArgs& args) {
  if (args.format == "kineto" && (args.device || args.range || !args.window.empty())) {
    throw UserError("--device, --window and --range apply to --format perfetto only");
  }
  if (!args.window.empty()) parseWindow(args.window);
}

PerfettoExportOptions perfettoOptions(const ExportArgs& args) {
  PerfettoExportOptions options;
  options.analysis.scope.device = args.device;
  options.analysis.scope.range = args.range;
  if (!args.window.empty()) {
    std::tie(options.analysis.scope.window_start, options.analysis.scope.window_end) = parseWindow(args.window);
  }
  return options;
}

bool endsWith(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

// Writes the export in the chosen format; returns the summary line for stderr.
std::string writeFormat(const ExportArgs& args, const Trace& trace, std::ostream& out) {
  if (args.format == "kineto") {
    const KinetoExportStats stats = writeKinetoTrace(trace, out);
    return fmt::format("{} GPU ops, {} API calls, {} ac2g flows, {} annotations{}", stats.ops,
                       stats.calls, stats.flows, stats.ranges,
                       stats.names_cut == 0 ? std::string()
                                            : fmt::format("; {} names cut to {} bytes", stats.names_cut,
                                                          kKinetoNameBytes));
  }
  const PerfettoExportStats stats = writePerfettoTrace(trace, out, perfettoOptions(args));
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
  fmt::print(stderr, "cuoverlap: wrote {} ({})\n", inertLine(args.output, kMaxErrorLineBytes), summary);
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
                  "Output file ('-' for stdout; without -o, stdout unless it is a terminal)");
  cmd->add_flag("--force", args->force, "Replace an existing output file");
  cmd->callback([args, &result] {
    checkSelection(*args);
    runExport(*args);
    result.exit_code = 0;
  });
}

}  // namespace cuoverlap::cli
