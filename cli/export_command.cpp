// `cuoverlap export FILE --format perfetto -o trace.json`: the trace as Chrome trace-event JSON
// for ui.perfetto.dev and chrome://tracing (layout: reports/include/cuoverlap/perfetto_export.h).
#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <unistd.h>

#include <fstream>
#include <iostream>
#include <memory>
#include <string>

#include "commands.h"
#include "cuoverlap/error.h"
#include "cuoverlap/perfetto_export.h"
#include "cuoverlap/reader.h"

namespace cuoverlap::cli {
namespace {

struct ExportArgs {
  std::string file;
  std::string format = "perfetto";
  std::string output;  // empty: stdout, unless stdout is a terminal
};

void runExport(const ExportArgs& args) {
  if (args.output.empty() && isatty(STDOUT_FILENO)) {
    throw UserError("the export is JSON for a viewer, not for a terminal: give -o FILE (or -o - to "
                    "write it to the terminal anyway)");
  }
  const Trace trace = readTrace(args.file);
  if (args.output.empty() || args.output == "-") {
    writePerfettoTrace(trace, std::cout);
    std::cout.flush();
    return;
  }
  std::ofstream out(args.output, std::ios::binary | std::ios::trunc);
  if (!out) throw UserError(fmt::format("{}: cannot write the export", args.output));
  const PerfettoExportStats stats = writePerfettoTrace(trace, out);
  if (!out.flush()) throw UserError(fmt::format("{}: cannot write the export", args.output));
  fmt::print(stderr, "cuoverlap: wrote {} ({} GPU ops, {} API calls, {} launch arrows, {} NVTX)\n",
             args.output, stats.ops, stats.calls, stats.flows, stats.nvtx);
}

}  // namespace

void registerExportCommand(CLI::App& app, CommandResult& result) {
  auto* cmd = app.add_subcommand("export", "Export a trace for ui.perfetto.dev / chrome://tracing");
  auto args = std::make_shared<ExportArgs>();
  cmd->add_option("file", args->file, "A cuoverlap trace or Nsight Systems SQLite export")->required();
  cmd->add_option("--format", args->format, "Export format (Chrome/Perfetto trace JSON)")
      ->check(CLI::IsMember({"perfetto"}))
      ->capture_default_str();
  cmd->add_option("-o,--output", args->output,
                  "Output file ('-' for stdout; without -o, stdout unless it is a terminal)");
  cmd->callback([args, &result] {
    runExport(*args);
    result.exit_code = 0;
  });
}

}  // namespace cuoverlap::cli
