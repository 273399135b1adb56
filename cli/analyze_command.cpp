// `cuoverlap analyze FILE...`: read each trace, analyze it, render one report; the files of the
// ranks of one job also get the job analysis (job.h).
#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <unistd.h>

#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "commands.h"
#include "help_sections.h"
#include "judged_scope.h"
#include "terminal.h"
#include "cuoverlap/analysis.h"
#include "cuoverlap/diagnosis.h"
#include "cuoverlap/error.h"
#include "cuoverlap/html_report.h"
#include "cuoverlap/job.h"
#include "cuoverlap/json_report.h"
#include "cuoverlap/markdown_report.h"
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
  std::string window;         // START:END, absolute or +relative to the first op; empty: everything
  std::size_t instances = 0;  // with --range: instances shown in full
  std::string color = "auto";
  unsigned threads = 0;       // files analyzed at once; 0: one per core
  std::optional<std::size_t> kernels;     // rows of the top-kernels tables; unset: the format's
  std::optional<std::string> iterations;  // the NVTX range the steady state's iterations are
  bool quiet = false;                     // no progress line
};

// One row per output format; a new renderer adds one line here. `needs_traces`: the renderer
// reads the traces themselves (timelines, op names), so they stay in memory until it ran.
struct ReportFormat {
  const char* name;
  void (*render)(const Report&, std::ostream&);
  bool needs_traces;
};
const ReportFormat kFormats[] = {
    {"text", renderText, false},
    {"json", renderJson, false},
    {"markdown", renderMarkdown, true},
    {"html", renderHtml, true},
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
  cmd.add_option("files", args.files, "Traces: cuoverlap traces, Nsight Systems SQLite exports (either also gzip-compressed, .sqlite.gz) or PyTorch profiler (Kineto) JSON (.json, .json.gz)")
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
                 "Summarize every instance of the NVTX ranges named PATTERN: an exact name, a glob "
                 "(step*) or /regex/");
  cmd.add_option("--instances", args.instances,
                 "With --range: also show the N slowest instances in full (default 0)");
  cmd.add_option("--window", args.window,
                 "START:END in trace timestamps (ns or with a unit: ns, us, ms, s), or relative to "
                 "the trace's first GPU op as reports print them: +9.741ms:+20ms");
  cmd.add_option("--kernels", args.kernels,
                 "Rows of the top-kernels table per device (text 5, Markdown and HTML 10 unless "
                 "given; JSON always lists every kernel)")
      ->check(CLI::Range(std::size_t{0}, std::size_t{1} << 20));
  addIterationsOption(cmd, args.iterations);
  addColorOption(cmd, args.color);
  addQuietOption(cmd, args.quiet);
  cmd.add_option("--threads", args.threads,
                 "Files analyzed at once (default: one per core; each holds one trace in memory)")
      ->check(CLI::Range(0u, 1024u));
}

// `trace` is null when the options are checked before any trace is read.
AnalysisOptions analysisOptions(const AnalyzeArgs& args) {
  AnalysisOptions options;
  options.scope.device = args.device;
  options.scope.pid = args.pid;
  options.scope.range = args.range;
  options.range_detail = args.instances;
  options.iterations = args.iterations;
  std::vector<std::string> leaving_out;
  if (args.range) leaving_out.emplace_back("--range");
  if (!args.window.empty()) leaving_out.emplace_back("--window");
  checkIterations(args.iterations, leaving_out);
  if (!args.gap_threshold.empty()) options.gap_threshold_ns = parseDuration(args.gap_threshold);
  if (!args.window.empty()) {
    parseWindow(args.window, Ns{0});  // malformed: UserError now; resolved per trace later
    options.window = args.window;
  }
  return options;
}

void writeReport(const AnalyzeArgs& args, const Report& report, OutputFile& out) {
  const bool to_stdout = args.output.empty() || args.output == "-";
  if (args.format == "text" && to_stdout) {  // the terminal's width and colours
    renderText(report, out.stream(),
               TextStyle{useColor(args.color, STDOUT_FILENO), terminalWidth(STDOUT_FILENO)});
  } else {
    findFormat(args.format).render(report, out.stream());
  }
  out.commit();
  noteWritten(out, args.output, args.format);
}

void runAnalyze(const AnalyzeArgs& args) {
  const AnalysisOptions options = analysisOptions(args);  // bad options fail before any read
  // Before reading: a refused output (an input, an existing file) costs no analysis.
  OutputFile out(args.output, args.files, args.force);
  // Files are analyzed in parallel (the ranks of a job: job.h). Traces stay alive with the report
  // when the renderer follows TraceReport::trace.
  std::vector<std::unique_ptr<Trace>> traces;
  Report report;
  {
    ProgressLine progress(args.quiet);
    progress.stage(args.files.size() == 1 ? "reading and analyzing " + args.files.front()
                                          : fmt::format("reading and analyzing {} files", args.files.size()));
    report = analyzeFiles(args.files, options, findFormat(args.format).needs_traces, traces, args.threads);
  }
  report.kernel_rows = args.kernels;
  writeReport(args, report, out);
}

}  // namespace

void registerAnalyzeCommand(CLI::App& app, CommandResult& result) {
  auto* cmd = app.add_subcommand("analyze", "Overlap metrics, idle gaps and findings of traces");
  auto args = std::make_shared<AnalyzeArgs>();
  addAnalyzeOptions(*cmd, *args);
  setHelpSections(*cmd, {
      std::string(kTracesNote) + " Rank summaries (*.cosum, summarize) stand for their traces.",
      {{"cuoverlap analyze run.sqlite", "the report on the terminal: steady state, then the whole run"},
       {"cuoverlap analyze run.sqlite -o report.html", "an HTML page (the format follows the extension: .html, .md, .json)"},
       {"cuoverlap analyze rank*.sqlite --format json -o job.json", "the ranks of one job: per-rank table, collectives, stragglers"},
       {"cuoverlap analyze trace.json.gz --iterations 'step *'", "a PyTorch profiler trace, with the step ranges as the iterations"},
       {"cuoverlap analyze run.sqlite --range 'step*' --instances 3", "every instance of the NVTX ranges step*, the 3 slowest in full"}},
      reportExitStatus("the report was written"),
      traceEnvironment(TerminalUse::kColourAndProgress)});
  const CLI::Option* format = cmd->get_option("--format");
  cmd->callback([args, format, &result] {
    // `-o report.html` asks for HTML unless --format says otherwise.
    if (format->count() == 0) args->format = formatForOutput(args->output, args->format, formatNames());
    runAnalyze(*args);
    result.exit_code = 0;
  });
}

}  // namespace cuoverlap::cli
