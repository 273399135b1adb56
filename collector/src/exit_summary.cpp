#include "exit_summary.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <string_view>

#include "summarizer_process.h"
#include "summary_path.h"

namespace cuoverlap::collector {
namespace {

std::string absolutePath(const std::string& path) {
  if (path.empty() || path[0] == '/') return path;
  char cwd[PATH_MAX] = {};
  return ::getcwd(cwd, sizeof cwd) == nullptr ? path : std::string(cwd) + "/" + path;
}

// The summarizer's own error line without its "cuoverlap: error: " prefix.
std::string summarizerSays(const std::string& line) {
  constexpr std::string_view kPrefix = "cuoverlap: error: ";
  return line.rfind(kPrefix, 0) == 0 ? line.substr(kPrefix.size()) : line;
}

std::string whyNoSummary(const SummarizerRun& run, std::chrono::seconds timeout) {
  using Outcome = SummarizerRun::Outcome;
  switch (run.outcome) {
    case Outcome::kNotStarted:
      return run.detail;
    case Outcome::kTimedOut:
      return "summarizing took more than " + std::to_string(timeout.count()) + " s (" +
             schema::kEnvSummaryTimeout + "); stopped it";
    case Outcome::kFailed: {
      std::string why = run.exit_status >= 0 ? "the summarizer exited with " + std::to_string(run.exit_status)
                                              : std::string("the summarizer wrote nothing");
      return run.detail.empty() ? why : why + ": " + summarizerSays(run.detail);
    }
    case Outcome::kWritten:
      break;
  }
  return "";
}

bool regularFile(const std::string& path) {
  struct stat info {};
  return ::lstat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode);
}

}  // namespace

ExitSummary planExitSummary(const CollectorOptions& options, const std::string& library_path) {
  ExitSummary plan;
  if (!options.summary_at_exit || !options.run_dir.empty()) return plan;
  plan.trace = absolutePath(options.output_path);
  plan.output = schema::summaryPathFor(plan.trace);
  plan.timeout = options.summary_timeout;
  plan.quiet = options.quiet;
  std::string reason;
  plan.summarizer = findSummarizer(options.summarizer, library_path, reason);
  if (plan.summarizer.empty()) {
    std::fprintf(stderr, "cuoverlap: warning: no summary will be written at exit (%s=1): %s\n",
                 schema::kEnvSummary, printableForLog(reason).c_str());
    return plan;
  }
  plan.active = true;
  return plan;
}

void writeExitSummary(const ExitSummary& plan) {
  if (!plan.active) return;
  const int saved_errno = errno;
  try {
    // A trace that held no activity was removed at close: nothing to summarize, nothing to say.
    if (regularFile(plan.trace)) {
      const SummarizerRun run = runSummarizer(
          plan.summarizer, plan.trace, plan.output,
          std::chrono::duration_cast<std::chrono::milliseconds>(plan.timeout));
      if (run.outcome == SummarizerRun::Outcome::kWritten) {
        if (!plan.quiet) std::fprintf(stderr, "cuoverlap: summary %s\n", printableForLog(plan.output).c_str());
      } else {
        std::fprintf(stderr, "cuoverlap: warning: no summary of %s: %s; `cuoverlap summarize` makes it later\n",
                     printableForLog(plan.trace).c_str(), printableForLog(whyNoSummary(run, plan.timeout)).c_str());
      }
    }
  } catch (...) {
    std::fprintf(stderr, "cuoverlap: warning: no summary of the trace: internal error\n");
  }
  errno = saved_errno;
}

}  // namespace cuoverlap::collector
