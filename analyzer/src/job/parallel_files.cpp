// Many trace files (the ranks of a job) analyzed in parallel: a pool of worker threads takes the
// next file, reads it, analyzes it (analyzeTrace), extracts its rank summaries (rankTimelines)
// and, unless the caller keeps traces for a renderer that draws them, frees the trace before
// taking the next file. Peak memory: one trace per worker plus the summaries. The per-file results
// are joined in file order, so the report does not depend on the thread count; the job analysis
// (analyzeJob) then runs over the summaries alone. A rank summary (summary.h) among the files
// stands for its trace: its report and ranks are read from it, made with the same options.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <thread>

#include <fmt/format.h>

#include "cuoverlap/job.h"
#include "cuoverlap/error.h"
#include "cuoverlap/progress.h"
#include "cuoverlap/reader.h"
#include "cuoverlap/summary.h"
#include "job_internal.h"
#include "peer_wait.h"

namespace cuoverlap {
namespace {

struct FileResult {
  std::unique_ptr<Trace> trace;
  TraceReport report;
  std::vector<RankTimeline> ranks;
  std::exception_ptr error;
};

void analyzeOne(const std::string& file, std::size_t index, const AnalysisOptions& options,
                bool keep_trace, FileResult& result) {
  try {
    if (isSummaryPath(file)) {
      RankSummary summary = openSummary(file, index);
      if (summary.options != analysisOptionsKey(options)) {
        throw UserError(fmt::format("{}: summarized with other options ({}) than given here ({}): "
                                    "summarize it again with these, or analyze it with those",
                                    file, summary.options, analysisOptionsKey(options)));
      }
      result.report = std::move(summary.report);
      result.ranks = std::move(summary.ranks);
      return;
    }
    const auto started = std::chrono::steady_clock::now();
    result.trace = std::make_unique<Trace>(readTrace(file));
    // The rank summaries need the whole run's metrics only: made while the steady state runs.
    result.report = analyzeTrace(*result.trace, options, [&](const TraceReport& whole_run) {
      result.ranks = rankTimelines(*result.trace, options, index, &whole_run);
    });
    result.report.analysis_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    if (!keep_trace) {
      result.report.trace = nullptr;
      result.trace.reset();
    }
  } catch (...) {
    result.error = std::current_exception();
    result.trace.reset();
  }
}

}  // namespace

Report analyzeFiles(const std::vector<std::string>& files, const AnalysisOptions& options,
                    bool keep_traces, std::vector<std::unique_ptr<Trace>>& traces,
                    unsigned threads) {
  std::vector<FileResult> results(files.size());
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  threads = static_cast<unsigned>(std::min<std::size_t>(threads, files.size()));
  std::atomic<std::size_t> next{0};
  // Progress: one file, its own phases; several, the files done (each file's phases muted).
  std::atomic<std::size_t> finished{0};
  if (files.size() > 1) progress::phase(fmt::format("reading and analyzing {} files", files.size()), files.size());
  const auto work = [&] {
    for (std::size_t i = next++; i < files.size(); i = next++) {
      if (files.size() == 1) {
        analyzeOne(files[i], i, options, keep_traces, results[i]);
        continue;
      }
      {
        progress::MuteThisThread mute;
        analyzeOne(files[i], i, options, keep_traces, results[i]);
      }
      progress::done(++finished);
    }
  };
  if (threads <= 1) {
    work();
  } else {
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < threads; ++t) pool.emplace_back(work);
    for (std::thread& thread : pool) thread.join();
  }
  Report report;
  std::vector<RankTimeline> ranks;
  for (FileResult& result : results) {
    if (result.error) std::rethrow_exception(result.error);
    if (result.trace) traces.push_back(std::move(result.trace));
    report.traces.push_back(std::move(result.report));
    std::move(result.ranks.begin(), result.ranks.end(), std::back_inserter(ranks));
  }
  if (std::any_of(files.begin(), files.end(), [](const std::string& f) { return isSummaryPath(f); })) {
    job::checkOneJob(ranks, files);
  }
  for (RankTimeline& rank : ranks) {
    const std::optional<SteadyState>& steady = report.traces[rank.file_index].steady_state;
    if (steady && steady->found) rank.steady_window = Interval{steady->start, steady->end};
  }
  report.job = analyzeJob(std::move(ranks));
  job::discountPeerWaits(report);  // a rank's wait for late peers is skew, not communication
  return report;
}

}  // namespace cuoverlap
