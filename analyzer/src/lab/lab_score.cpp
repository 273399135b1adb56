// Scoring a lab corpus (cuoverlap/lab_score.h, docs/lab.md "Scoring"). The manifest written by
// scripts/lab_collect.py (read by lab_manifest.cpp) lists each program's trace, the window of the baseline run kept in it,
// the measured spans of every variant, and the finding id each transform tests. Each kept window
// is analyzed as `analyze --window` would (no steady state: the window is one run), and each
// (program, transform) case compares the finding's reported cost with the measured saving. Where a
// program keeps several baseline runs (baseline.windows_ns), each is analyzed and a case's cost is
// the median of their claims: one run's claims may differ from another's by more than the
// tolerance (docs/lab.md, "Twenty-first session: the kept run").
#include "cuoverlap/lab_score.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <exception>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "cuoverlap/analysis.h"
#include "cuoverlap/error.h"
#include "cuoverlap/reader.h"
#include "lab_manifest.h"

namespace cuoverlap::lab {
namespace {

using nlohmann::json;
using corpus::Program;
using corpus::Variant;
using corpus::Window;
using corpus::median;
using corpus::medianError;

// Analyzes every window of the programs of one trace file; windows are independent.
void analyzePrograms(const std::string& path, std::vector<Program*>& programs, unsigned threads) {
  const Trace trace = readTrace(path);
  buildTraceIndices(trace);
  std::vector<Window*> windows;
  for (Program* program : programs) {
    for (Window& window : program->windows) windows.push_back(&window);
  }
  std::atomic<std::size_t> next{0};
  std::exception_ptr error;
  std::mutex error_mutex;
  auto work = [&] {
    for (std::size_t k = next++; k < windows.size(); k = next++) {
      try {
        Window& window = *windows[k];
        AnalysisOptions options;
        options.steady_state = false;
        options.scope.window_start = window.start;
        options.scope.window_end = window.end;
        const TraceReport report = analyzeTrace(trace, options);
        window.findings = report.findings;
        for (const DeviceReport& device : report.devices) {
          window.waiting_threads = std::max(window.waiting_threads, device.explained.waiting_threads);
        }
      } catch (...) {
        const std::lock_guard<std::mutex> lock(error_mutex);
        if (!error) error = std::current_exception();
      }
    }
  };
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (std::thread& thread : pool) thread.join();
  if (error) std::rethrow_exception(error);
}

// What a variant's findings claim in one window, summed over its finding ids; nothing where none
// fired.
std::optional<Ns> windowClaim(const Window& window, const Variant& variant, const std::string& transform,
                              std::optional<std::uint32_t> stream, std::optional<std::uint32_t> thread) {
  std::optional<Ns> total;
  for (const std::string& finding : variant.findings) {
    if (const auto claim = claimedSaving(window.findings, finding, transform, stream, thread)) {
      total = total.value_or(0) + *claim;
    }
  }
  return total;
}

// The claim of each window (nothing where it did not fire), and whether it counts: a window in
// which the variant's stream is not named is left out, unless it is named in none (then every
// window claims for any stream, as one window does for an unnamed stream).
std::vector<std::optional<Ns>> windowClaims(const Program& program, const Variant& variant,
                                            const std::string& transform, std::vector<bool>& counted) {
  const bool some_named = std::any_of(variant.stream_ids.begin(), variant.stream_ids.end(),
                                      [](const auto& id) { return id.has_value(); });
  std::vector<std::optional<Ns>> claims;
  for (std::size_t k = 0; k < program.windows.size(); ++k) {
    std::optional<std::uint32_t> stream;
    std::optional<std::uint32_t> thread;
    bool counts = true;
    if (some_named) {
      stream = variant.stream_ids[k];
      if (!variant.thread_ids.empty()) thread = variant.thread_ids[k];
      counts = stream.has_value();
    } else if (variant.stream_ids.empty() && k == 0) {  // stream_id and thread_id: the first window's
      stream = variant.stream_id;
      thread = variant.thread_id;
    } else if (variant.stream_ids.empty() && variant.stream_id) {
      counts = false;  // the first window's stream id names nothing in another run
    }
    counted.push_back(counts);
    claims.push_back(windowClaim(program.windows[k], variant, transform, stream, thread));
  }
  return claims;
}

// The median of the counted windows' claims, one that did not fire ranking below every one that
// did: the case fires where the (upper) middle one fired, and costs the middle claim (0 where it
// did not fire), the mean of the two middle ones for an even count. One window: its claim.
void judgeClaims(const Program& program, const Variant& variant, LabCase& c) {
  std::vector<bool> counted;
  const std::vector<std::optional<Ns>> claims = windowClaims(program, variant, c.transform, counted);
  std::vector<std::pair<bool, Ns>> ranked;  // (fired, claim)
  for (std::size_t k = 0; k < claims.size(); ++k) {
    if (counted[k]) ranked.emplace_back(claims[k].has_value(), claims[k].value_or(0));
    if (program.several_windows) {
      c.claims_ns.push_back(counted[k] ? std::optional<Ns>(claims[k].value_or(0)) : std::nullopt);
    }
  }
  if (ranked.empty()) return;
  std::sort(ranked.begin(), ranked.end());
  const std::size_t mid = ranked.size() / 2;
  c.fired = ranked[mid].first;
  c.cost_ns = ranked.size() % 2 ? ranked[mid].second : (ranked[mid - 1].second + ranked[mid].second) / 2;
}

// The tolerance a saving of `saved` (not negative) is judged with: ±30%, 20 µs under 70 µs.
double toleranceOf(double saved) {
  return saved < static_cast<double>(kSmallSavingNs) ? static_cast<double>(kAbsoluteToleranceNs)
                                                     : kRelativeTolerance * saved;
}

// Whether a claim of `claim` is within the tolerance of a measured saving `measured` (a negative
// one counting as 0).
bool withinOf(double claim, double measured) {
  const double saved = std::max(0.0, measured);
  return std::abs(claim - saved) <= toleranceOf(saved);
}

LabCase judge(const Program& program, const Variant& variant) {
  LabCase c;
  c.program = program.id;
  c.variant = variant.transform;
  c.transform = c.variant.substr(0, c.variant.find('@'));
  for (std::size_t k = 0; k < variant.findings.size(); ++k) c.finding += (k ? "|" : "") + variant.findings[k];
  judgeClaims(program, variant, c);
  if (!program.windows.empty()) c.waiting_threads = program.windows.front().waiting_threads;
  c.span_ns = program.median_ns;
  // Runs are interleaved (rep k of every variant, then rep k + 1): with every run of both kept,
  // the saving is the median of the reps' paired differences, which cancels the drift the two
  // share; else the difference of the medians. A variant recorded after the program (with
  // baseline runs of its own) is compared with those runs only: the program's were recorded in
  // another process, at another time, and share none of its drift.
  const bool own_baseline = !variant.baseline_spans.empty();
  const std::vector<double>& baseline = own_baseline ? variant.baseline_spans : program.spans;
  const bool paired = baseline.size() >= 2 && baseline.size() == variant.spans.size();
  std::vector<double> differences;
  if (paired) {
    for (std::size_t k = 0; k < baseline.size(); ++k) {
      differences.push_back(baseline[k] - variant.spans[k]);
    }
  }
  const Ns baseline_median =
      own_baseline ? static_cast<Ns>(std::llround(median(baseline))) : program.median_ns;
  const double baseline_error = own_baseline ? medianError(baseline) : program.median_error_ns;
  if (own_baseline && program.median_ns > 0) {
    c.baseline_drift = static_cast<double>(baseline_median) / static_cast<double>(program.median_ns) - 1.0;
    c.drifted = std::abs(c.baseline_drift) > kBaselineDriftShare;
  }
  c.saving_ns = paired ? static_cast<Ns>(std::llround(median(differences)))
                       : baseline_median - variant.median_ns;
  const Ns saved = std::max<Ns>(c.saving_ns, 0);  // a fix that slowed the program saved nothing
  const double tolerance = toleranceOf(static_cast<double>(saved));
  c.within = withinOf(static_cast<double>(c.cost_ns), static_cast<double>(c.saving_ns));
  c.uncertainty_ns = static_cast<Ns>(
      2.0 * (paired ? medianError(differences) : std::hypot(baseline_error, variant.median_error_ns)));
  c.decided = static_cast<double>(c.uncertainty_ns) <= tolerance;
  c.reachable = reachableWithin(saved, static_cast<double>(c.uncertainty_ns) / 2.0);
  const double span = static_cast<double>(std::max<Ns>(c.span_ns, 1));
  c.significant = static_cast<double>(c.saving_ns) >= kMissedSavingShare * span;
  c.false_finding = c.fired && static_cast<double>(c.cost_ns) >= kFalseCostShare * span &&
                    static_cast<double>(c.saving_ns) < kFalseSavingShare * span;
  c.missed = c.significant && !c.fired;
  return c;
}

std::vector<LabRow> rowsBy(const std::vector<LabCase>& cases, std::string LabCase::*key) {
  std::map<std::string, LabRow> rows;
  std::map<std::string, std::vector<double>> ratios;
  for (const LabCase& c : cases) {
    LabRow& row = rows[c.*key];
    row.key = c.*key;
    ++row.cases;
    row.within += c.within;
    row.decided += c.decided;
    row.within_decided += c.decided && c.within;
    row.reachable += c.reachable;
    row.false_findings += c.false_finding;
    row.significant += c.significant;
    row.missed += c.missed;
    if (c.saving_ns >= kSmallSavingNs) {
      ratios[c.*key].push_back(static_cast<double>(c.cost_ns) / static_cast<double>(c.saving_ns));
    }
  }
  std::vector<LabRow> out;
  for (auto& [key, row] : rows) {
    row.median_ratio = median(ratios[key]);
    out.push_back(row);
  }
  return out;
}

// A finding whose fix acts on one stream claims nothing about a variant that changed another; one
// that lists a fix per stream (FixSaving::stream) claims that stream's.
bool sameFixStream(const Finding& finding, std::optional<std::uint32_t> variant_stream) {
  if (!finding.fix_stream || !variant_stream || *finding.fix_stream == *variant_stream) return true;
  return std::any_of(finding.fixes.begin(), finding.fixes.end(),
                     [&](const FixSaving& f) { return f.stream == variant_stream; });
}

// Findings that claim >= 5% of a span in programs where no variant tests them: none lists the
// finding's id, or the finding's fix acts on another stream than the variant's.
std::vector<UntestedFinding> untestedFindings(const std::vector<Program>& programs) {
  std::map<std::string, std::size_t> counts;
  for (const Program& program : programs) {
    std::map<std::string, Ns> untested;  // finding id -> what its untested fixes alone save
    for (const Finding& finding : program.windows.front().findings) {  // the kept run's
      const bool tested = std::any_of(
          program.variants.begin(), program.variants.end(), [&finding](const Variant& v) {
            return std::find(v.findings.begin(), v.findings.end(), finding.id) != v.findings.end() &&
                   sameFixStream(finding, v.stream_id);
          });
      if (!tested) untested[finding.id] += fixSavingNs(finding);
    }
    for (const auto& [id, cost] : untested) {
      if (static_cast<double>(cost) >= kFalseCostShare * static_cast<double>(program.median_ns)) {
        ++counts[id];
      }
    }
  }
  std::vector<UntestedFinding> out;
  for (const auto& [id, n] : counts) out.push_back({id, n});
  return out;
}

}  // namespace

std::optional<Ns> claimedSaving(const std::vector<Finding>& findings, const std::string& finding_id,
                                const std::string& transform, std::optional<std::uint32_t> stream,
                                std::optional<std::uint32_t> thread) {
  std::optional<Ns> claim;
  for (const Finding& finding : findings) {
    if (finding.id != finding_id || !sameFixStream(finding, stream)) continue;
    const auto ofStream = [&](const FixSaving& f) {
      return f.fix == transform && (!f.stream || !stream || f.stream == stream);
    };
    // Its fixes split one thread's loop each: a split of another thread's loop tests none of them.
    const bool per_thread = thread && std::any_of(finding.fixes.begin(), finding.fixes.end(),
                                                  [&](const FixSaving& f) { return ofStream(f) && f.thread; });
    // The fix of that transform, of the variant's stream (and thread) where the finding lists one
    // per stream (and thread).
    const auto fix = std::find_if(finding.fixes.begin(), finding.fixes.end(), [&](const FixSaving& f) {
      return ofStream(f) && (!per_thread || f.thread == thread);
    });
    if (per_thread && fix == finding.fixes.end()) continue;
    claim = claim.value_or(0) + (fix != finding.fixes.end() ? fix->saving_ns : fixSavingNs(finding));
  }
  return claim;
}

LabScore scoreCorpus(const std::string& dir, unsigned threads, LabWindows windows) {
  const json manifest = corpus::readManifest(dir);
  LabScore score;
  score.corpus = dir;
  score.machine = manifest.value("machine", "");
  score.date = manifest.value("date", "");
  if (const auto failed = manifest.find("failed"); failed != manifest.end() && failed->is_array()) {
    score.failed_programs = failed->size();
  }
  std::vector<Program> programs;
  const json& entries = manifest.at("programs");
  for (std::size_t k = 0; k < entries.size(); ++k) {
    programs.push_back(corpus::parseProgram(entries[k], dir + "/manifest.json: programs[" +
                                                    std::to_string(k) + "]", windows));
    score.stale_variants += programs.back().stale_variants;
  }
  score.programs = programs.size();
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  std::map<std::string, std::vector<Program*>> by_trace;
  for (Program& program : programs) by_trace[program.trace].push_back(&program);
  for (auto& [trace, members] : by_trace) analyzePrograms(dir + "/" + trace, members, threads);
  for (const Program& program : programs) {
    for (const Variant& variant : program.variants) score.cases.push_back(judge(program, variant));
  }
  score.by_finding = rowsBy(score.cases, &LabCase::finding);
  for (const bool several : {false, true}) {
    std::vector<LabCase> cases;
    std::copy_if(score.cases.begin(), score.cases.end(), std::back_inserter(cases),
                 [&](const LabCase& c) { return (c.waiting_threads >= 2) == several; });
    (several ? score.by_finding_several_threads : score.by_finding_one_thread) = rowsBy(cases, &LabCase::finding);
  }
  score.by_transform = rowsBy(score.cases, &LabCase::transform);
  score.untested = untestedFindings(programs);
  return score;
}

double reachableWithin(Ns saving_ns, double sigma_ns) {
  const double truth = static_cast<double>(std::max<Ns>(saving_ns, 0));
  if (!(sigma_ns > 0.0)) return withinOf(truth, truth) ? 1.0 : 0.0;
  // The normal density over ±6 standard errors in 400 steps (as lab_ceiling.py).
  constexpr int kSteps = 400;
  double total = 0.0;
  double weight = 0.0;
  for (int i = 0; i <= kSteps; ++i) {
    const double z = -6.0 + 12.0 * static_cast<double>(i) / kSteps;
    const double w = std::exp(-0.5 * z * z);
    weight += w;
    total += w * (withinOf(truth, truth + z * sigma_ns) ? 1.0 : 0.0);
  }
  return total / weight;
}

std::vector<std::string> targetMisses(const LabScore& score, std::size_t min_cases) {
  std::vector<std::string> misses;
  for (const LabRow& row : score.by_finding) {
    if (row.cases < min_cases) continue;
    if (static_cast<double>(row.within) < 0.9 * static_cast<double>(row.cases)) {
      misses.push_back(row.key + ": " + std::to_string(row.within) + " of " +
                       std::to_string(row.cases) + " cases within ±30% (target 90%; " +
                       fmt::format("{:.1f}", 100.0 * reachableShare(row)) +
                       "% reachable on this recording)");
    }
  }
  std::size_t false_findings = 0;
  for (const LabCase& c : score.cases) false_findings += c.false_finding;
  if (static_cast<double>(false_findings) > 0.02 * static_cast<double>(score.cases.size())) {
    misses.push_back("false findings: " + std::to_string(false_findings) + " of " +
                     std::to_string(score.cases.size()) + " cases (target 2%)");
  }
  for (const LabRow& row : score.by_transform) {
    if (row.significant < min_cases) continue;
    if (static_cast<double>(row.missed) > 0.05 * static_cast<double>(row.significant)) {
      misses.push_back(row.key + ": missed " + std::to_string(row.missed) + " of " +
                       std::to_string(row.significant) + " cases saving >= 5% (target 5%)");
    }
  }
  return misses;
}

}  // namespace cuoverlap::lab
