// `cuoverlap analyze FILE...`: read each trace, analyze it, render one report.
#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "commands.h"
#include "cuoverlap/analysis.h"
#include "cuoverlap/diagnosis.h"
#include "cuoverlap/error.h"
#include "cuoverlap/html_report.h"
#include "cuoverlap/json_report.h"
#include "cuoverlap/markdown_report.h"
#include "cuoverlap/reader.h"
#include "cuoverlap/text_report.h"
#include "output_file.h"

namespace cuoverlap::cli {

namespace {

struct AnalyzeArgs {
  std::vector<std::string> files;
  std::string format = "text";
  std::string output;  // empty: stdout
  bool force = false;  // replace an existing output file
  std::optional<std::uint16_t> device;
  std::optional<std::uint32_t> pid;
  std::string gap_threshold;  // duration with unit; empty: the default
  std::optional<std::string> range;
  std::string window;         // START:END in trace timestamps; empty: everything
};

// One row per output format; a new renderer adds one line here.
struct ReportFormat {
  const char* name;
  void (*render)(const Report&, std::ostream&);
};
const ReportFormat kFormats[] = {
    {"text", renderText},
    {"json", renderJson},
    {"markdown", renderMarkdown},
    {"html", renderHtml},
};

const ReportFormat& findFormat(const std::string& name) {
  for (const ReportFormat& format : kFormats) {
    if (name == format.name) return format;
  }
  throw UserError(fmt::format("unknown format '{}'", name));
}

std::vector<std::string> formatNames() {
  std::vector<std::string> names;
  for (const ReportFormat& format : kFormats) names.emplace_back(format.name);
  return names;
}

// Options that select what is analyzed; later options (--gap-threshold, --range, --window) go here.
void addAnalyzeOptions(CLI::App& cmd, AnalyzeArgs& args) {
  cmd.add_option("files", args.files, "Traces: cuoverlap traces or Nsight Systems SQLite exports")
      ->required();
  cmd.add_option("--format", args.format, "Output format")
      ->check(CLI::IsMember(formatNames()))
      ->capture_default_str();
  cmd.add_option("-o,--output", args.output, "Write the report to this file instead of stdout");
  cmd.add_flag("--force", args.force, "Replace an existing output file");
  cmd.add_option("--device", args.device, "Analyze only this device id");
  cmd.add_option("--pid", args.pid, "Analyze only this process id");
  cmd.add_option("--gap-threshold", args.gap_threshold,
                 "Shortest idle gap attributed to a cause, e.g. 10us (default 10us)");
  cmd.add_option("--range", args.range,
                 "Analyze each instance of this NVTX range, and their sum");
  cmd.add_option("--window", args.window,
                 "START:END in trace timestamps, in ns or with a unit (ns, us, ms, s)");
}

AnalysisOptions analysisOptions(const AnalyzeArgs& args) {
  AnalysisOptions options;
  options.scope.device = args.device;
  options.scope.pid = args.pid;
  options.scope.range = args.range;
  if (!args.gap_threshold.empty()) options.gap_threshold_ns = parseDuration(args.gap_threshold);
  if (!args.window.empty()) {
    std::tie(options.scope.window_start, options.scope.window_end) = parseWindow(args.window);
  }
  return options;
}

void writeReport(const AnalyzeArgs& args, const Report& report, OutputFile& out) {
  findFormat(args.format).render(report, out.stream());
  out.commit();
}

void runAnalyze(const AnalyzeArgs& args) {
  AnalysisOptions options = analysisOptions(args);
  // Before reading: a refused output (an input, an existing file) costs no analysis.
  OutputFile out(args.output, args.files, args.force);
  // Traces stay alive with the report: renderers that draw timelines follow TraceReport::trace.
  std::vector<std::unique_ptr<Trace>> traces;
  Report report;
  for (const std::string& file : args.files) {
    traces.push_back(std::make_unique<Trace>(readTrace(file)));
    report.traces.push_back(analyzeTrace(*traces.back(), options));
  }
  writeReport(args, report, out);
}

}  // namespace

void registerAnalyzeCommand(CLI::App& app, CommandResult& result) {
  auto* cmd = app.add_subcommand("analyze", "Overlap metrics, idle gaps and findings of traces");
  auto args = std::make_shared<AnalyzeArgs>();
  addAnalyzeOptions(*cmd, *args);
  cmd->callback([args, &result] {
    runAnalyze(*args);
    result.exit_code = 0;
  });
}

}  // namespace cuoverlap::cli
