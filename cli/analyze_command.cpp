// `cuoverlap analyze FILE...`: read each trace, analyze it, render one report.
#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <fstream>
#include <iostream>
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

namespace cuoverlap::cli {

namespace {

struct AnalyzeArgs {
  std::vector<std::string> files;
  std::string format = "text";
  std::string output;  // empty: stdout
  std::optional<std::uint16_t> device;
  std::optional<std::uint32_t> pid;
  std::string gap_threshold;  // duration with unit; empty: the default
  std::optional<std::string> range;
  std::string window;         // START:END, absolute or +relative to the first op; empty: everything
  std::size_t instances = 0;  // with --range: instances shown in full
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
  cmd.add_option("--device", args.device, "Analyze only this device id");
  cmd.add_option("--pid", args.pid, "Analyze only this process id");
  cmd.add_option("--gap-threshold", args.gap_threshold,
                 "Shortest idle gap attributed to a cause, e.g. 10us (default 10us)");
  cmd.add_option("--range", args.range,
                 "Summarize every instance of the NVTX ranges named PATTERN: an exact name, a glob "
                 "(step*) or /regex/");
  cmd.add_option("--instances", args.instances,
                 "With --range: also show the N slowest instances in full (default 0)");
  cmd.add_option("--window", args.window,
                 "START:END in trace timestamps (ns or with a unit: ns, us, ms, s), or relative to "
                 "the trace's first GPU op as reports print them: +9.741ms:+20ms");
}

// `trace` is null when the options are checked before any trace is read.
AnalysisOptions analysisOptions(const AnalyzeArgs& args, const Trace* trace) {
  AnalysisOptions options;
  options.scope.device = args.device;
  options.scope.pid = args.pid;
  options.scope.range = args.range;
  options.range_detail = args.instances;
  if (!args.gap_threshold.empty()) options.gap_threshold_ns = parseDuration(args.gap_threshold);
  if (!args.window.empty()) {
    std::tie(options.scope.window_start, options.scope.window_end) =
        parseWindow(args.window, trace ? std::optional<Ns>(firstOpStart(*trace)) : Ns{0});
  }
  return options;
}

void writeReport(const AnalyzeArgs& args, const Report& report) {
  const ReportFormat& format = findFormat(args.format);
  if (args.output.empty()) {
    format.render(report, std::cout);
    std::cout.flush();
    return;
  }
  std::ofstream out(args.output, std::ios::binary | std::ios::trunc);
  if (!out) throw UserError(fmt::format("{}: cannot write the report", args.output));
  format.render(report, out);
  if (!out.flush()) throw UserError(fmt::format("{}: cannot write the report", args.output));
}

void runAnalyze(const AnalyzeArgs& args) {
  analysisOptions(args, nullptr);  // bad options fail before any trace is read
  // Traces stay alive with the report: renderers that draw timelines follow TraceReport::trace.
  std::vector<std::unique_ptr<Trace>> traces;
  Report report;
  for (const std::string& file : args.files) {
    traces.push_back(std::make_unique<Trace>(readTrace(file)));
    report.traces.push_back(analyzeTrace(*traces.back(), analysisOptions(args, traces.back().get())));
  }
  writeReport(args, report);
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
