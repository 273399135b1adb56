// Scoring a counterfactual-lab corpus (docs/lab.md): each generated program's baseline run is
// analyzed, and each finding's cost is compared with what the transform that carries out its fix
// measurably saved. A case is one (program, transform); its finding is the id the transform fixes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cuoverlap/report.h"
#include "cuoverlap/units.h"

namespace cuoverlap::lab {

// The score's targets (issue 20): a cost is right within ±30% of the measured saving, or within
// 20 µs of it when the saving is under 70 µs (timer and launch noise); a finding is false when it
// claims ≥ 5% of the span where its fix saves < 2%; a case is missed when its fix saves ≥ 5% of the
// span and the finding is absent. A fix that made the program slower saved nothing: its saving
// counts as 0 (a cost is never negative, so 0 is the best claim there is).
//
// A case is decided when the measurement can tell a right cost from a wrong one: the saving's
// uncertainty (twice the standard error of the difference of the two medians, each estimated from
// its runs' interquartile range) is at most the tolerance. Undecided cases are scored like the
// others and counted apart, so that a low share within can be read as the model's error or the
// measurement's.
inline constexpr double kRelativeTolerance = 0.30;
inline constexpr Ns kSmallSavingNs = 70'000;
inline constexpr Ns kAbsoluteToleranceNs = 20'000;
inline constexpr double kFalseCostShare = 0.05;
inline constexpr double kFalseSavingShare = 0.02;
inline constexpr double kMissedSavingShare = 0.05;
// A variant recorded later (with baseline runs of its own) is measured against those runs, while
// its claim is priced on the analyzed recording's: where the two baselines' medians differ by more
// than this share, the case compares two runs of the program that may not behave alike (drifted).
inline constexpr double kBaselineDriftShare = 0.05;

struct LabCase {
  std::string program;
  std::string transform;    // the transform's id
  std::string variant;      // the variant's name: the id, or ID@PLACE for a transform applied at
                            // one of several places (multi-stream@s3: the split of stream s3)
  std::string finding;      // the finding id the transform tests
  Ns span_ns = 0;           // median baseline span
  Ns saving_ns = 0;         // median of the reps' paired differences baseline - variant (the
                            // difference of the medians when runs are missing; may be negative)
  Ns cost_ns = 0;           // the finding's cost on the analyzed baseline run; 0 when absent.
                            // With several windows: the median of claims_ns' claims
  // Where the program keeps several baseline runs (baseline.windows_ns) and all are scored: the
  // claim in each window (0 where the finding did not fire there), nothing where the window is left
  // out (the variant's stream is not named in it). Empty otherwise.
  std::vector<std::optional<Ns>> claims_ns;
  Ns uncertainty_ns = 0;    // twice the standard error of saving_ns, from the runs' spread
  bool fired = false;
  bool within = false;
  bool decided = false;     // uncertainty_ns <= the tolerance the case is judged with
  // The chance that a claim equal to the fix's true saving is within (reachableWithin): how far the
  // measurement lets any model go on this case.
  double reachable = 0.0;
  bool false_finding = false;
  bool missed = false;
  bool significant = false; // saving >= kMissedSavingShare of the span
  // A variant recorded later: its own baseline runs' median over the analyzed recording's, minus
  // 1 (0 when measured against the analyzed recording's runs). drifted: |drift| > kBaselineDriftShare.
  double baseline_drift = 0.0;
  bool drifted = false;
  // The kept baseline run's FindingsExplained::waiting_threads: 2 or more where the reports say
  // the savings are rough (host threads each issuing GPU work and waiting for it side by side).
  std::uint32_t waiting_threads = 0;
};

// One row of a table: the cases of one finding id (or of one transform).
struct LabRow {
  std::string key;
  std::size_t cases = 0;
  std::size_t within = 0;
  std::size_t decided = 0;
  std::size_t within_decided = 0;
  double reachable = 0.0;        // the cases' reachable chances summed: the within count no model
                                 // is expected to pass on this recording
  double median_ratio = 0.0;     // median cost / saving over cases with saving >= 70 µs
  std::size_t false_findings = 0;
  std::size_t significant = 0;   // cases whose fix saved >= 5% of the span
  std::size_t missed = 0;
};

// The chance that a claim equal to a fix's true saving `saving_ns` is judged within when the
// measured saving is drawn around it with the standard error `sigma_ns` (half a case's
// uncertainty): the true saving is taken as the measured one (a negative one as 0), and a draw is
// within as a case is (±30% of it, 20 µs under 70 µs, a negative draw counting as 0). About 0.94
// or more for a decided case; an undecided one's can be far lower. No model change passes the sum
// over a finding's cases (scripts/lab_ceiling.py computes the same from a score's JSON).
double reachableWithin(Ns saving_ns, double sigma_ns);

// A row's reachable share of its cases (0 for a row without cases).
inline double reachableShare(const LabRow& row) {
  return row.cases ? row.reachable / static_cast<double>(row.cases) : 0.0;
}

// A finding that fired with cost >= 5% of the span in a program where no transform tests it.
struct UntestedFinding {
  std::string finding;
  std::size_t programs = 0;
};

struct LabScore {
  std::string corpus;
  std::string machine;
  std::string date;
  std::size_t programs = 0;
  std::size_t failed_programs = 0;   // listed as failed in the manifest, or without a window
  // Variants recorded before their transform changed (the manifest's `stale`), not judged.
  std::size_t stale_variants = 0;
  std::vector<LabCase> cases;
  std::vector<LabRow> by_finding;    // sorted by key
  std::vector<LabRow> by_transform;
  // by_finding over the cases whose programs the reports give one thread (waiting_threads < 2),
  // and over those they say have several (the savings rough: docs/findings.md, "Several host
  // threads").
  std::vector<LabRow> by_finding_one_thread;
  std::vector<LabRow> by_finding_several_threads;
  std::vector<UntestedFinding> untested;
};

// The claim a case (a finding id, the transform that tests it) checks, summed over the findings of
// that id (one per device): the saving the finding lists for the fix of that transform
// (Finding::fixes) where it lists one, else what its fix alone saves (fixSavingNs). Nothing when no
// finding of that id fired. Where the transform acted on one stream (`stream`: multi-stream's
// split), a finding whose fix acts on another stream (Finding::fix_stream) claims nothing for it,
// and one that lists that transform's fix per stream (FixSaving::stream) claims the fix of `stream`.
// Where the transform split one thread's loop on a stream several threads shared (`thread`, its
// tid) and the finding lists that transform's fixes per thread (FixSaving::thread), it claims that
// thread's fix, and nothing where it lists none for that thread.
std::optional<Ns> claimedSaving(const std::vector<Finding>& findings, const std::string& finding_id,
                                const std::string& transform,
                                std::optional<std::uint32_t> stream = std::nullopt,
                                std::optional<std::uint32_t> thread = std::nullopt);

// Which baseline runs of a program are analyzed where the manifest keeps several
// (baseline.windows_ns, scripts/lab_collect.py --windows): all of them, each case judged by the
// median of their claims, or the first only (the kept run: the score of a one-window corpus).
enum class LabWindows { kAll, kFirst };

// Reads DIR/manifest.json and the traces it names, analyzes each program's baseline windows on
// `threads` threads (0: one per core). Throws UserError on a missing or malformed corpus.
LabScore scoreCorpus(const std::string& dir, unsigned threads = 0, LabWindows windows = LabWindows::kAll);

// The targets, checked per row with at least `min_cases` cases; one line per miss.
std::vector<std::string> targetMisses(const LabScore& score, std::size_t min_cases = 20);

}  // namespace cuoverlap::lab
