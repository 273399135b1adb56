// `cuoverlap export FILE --format perfetto -o trace.json`: the trace as Chrome trace-event JSON
// for ui.perfetto.dev and chrome://tracing (layout: reports/include/cuoverlap/perfetto_export.h).
#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <memory>
#include <string>

#include "commands.h"
#include "cuoverlap/perfetto_export.h"
#include "cuoverlap/reader.h"
#include "output_file.h"

namespace cuoverlap::cli {
namespace {

struct ExportArgs {
  std::string file;
  std::string format = "perfetto";
  std::string output = "-";
  bool force = false;  // replace an existing output file
};

void runExport(const ExportArgs& args) {
  OutputFile out(args.output, {args.file}, args.force);
  const Trace trace = readTrace(args.file);
  const PerfettoExportStats stats = writePerfettoTrace(trace, out.stream());
  out.commit();
  if (out.displayName() == "stdout") return;
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
  cmd->add_option("-o,--output", args->output, "Output file ('-' for stdout)")->capture_default_str();
  cmd->add_flag("--force", args->force, "Replace an existing output file");
  cmd->callback([args, &result] {
    runExport(*args);
    result.exit_code = 0;
  });
}

}  // namespace cuoverlap::cli
