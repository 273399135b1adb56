// `cuoverlap lab score CORPUS`: the counterfactual lab's score (docs/lab.md, "Scoring"): per
// finding id and per transform, how many cases, how many costs lie within ±30% of the measured
// saving, the median cost/saving ratio, false findings and missed cases. `--check` exits 1 when a
// target of issue 20 is missed (rows with at least --min-cases cases).
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "commands.h"
#include "help_sections.h"
#include "cuoverlap/gate.h"
#include "cuoverlap/lab_score.h"
#include "cuoverlap/units.h"
#include "output_file.h"

namespace cuoverlap::cli {
namespace {

struct LabScoreArgs {
  std::string corpus;
  std::string format = "text";
  std::string output;
  bool force = false;
  bool check = false;
  bool cases = false;
  std::size_t min_cases = 20;
  unsigned threads = 0;
  std::string windows = "all";
};

std::string percent(std::size_t part, std::size_t whole) {
  return whole ? fmt::format("{:.0f}%", 100.0 * static_cast<double>(part) / static_cast<double>(whole))
               : "-";
}

std::string reachablePercent(const lab::LabRow& row) {
  return row.cases ? fmt::format("{:.1f}%", 100.0 * lab::reachableShare(row)) : "-";
}

void renderTable(std::ostream& out, const char* title, const std::vector<lab::LabRow>& rows) {
  out << fmt::format("{:<28} {:>6} {:>12} {:>10} {:>18} {:>13} {:>7} {:>16}\n", title, "cases",
                     "within ±30%", "reachable", "decided: within", "median ratio", "false", "missed (of ≥5%)");
  for (const lab::LabRow& row : rows) {
    out << fmt::format("{:<28} {:>6} {:>12} {:>10} {:>18} {:>13.2f} {:>7} {:>16}\n", terminalSafe(row.key), row.cases,
                       fmt::format("{} ({})", row.within, percent(row.within, row.cases)), reachablePercent(row),
                       fmt::format("{}: {} ({})", row.decided, row.within_decided,
                                   percent(row.within_decided, row.decided)),
                       row.median_ratio, row.false_findings,
                       fmt::format("{} of {}", row.missed, row.significant));
  }
}

// Per finding id, its cases within ±30% where the reports give the program one host thread and where
// they say several wait side by side (docs/findings.md, "Several host threads").
void renderThreadsTable(std::ostream& out, const lab::LabScore& score) {
  if (score.by_finding_several_threads.empty()) return;
  out << fmt::format("\n{:<28} {:>24} {:>10} {:>24} {:>10}\n", "by host threads", "one: within ±30%",
                     "reachable", "several waiting: within", "reachable");
  std::map<std::string, std::pair<const lab::LabRow*, const lab::LabRow*>> rows;
  for (const lab::LabRow& row : score.by_finding_one_thread) rows[row.key].first = &row;
  for (const lab::LabRow& row : score.by_finding_several_threads) rows[row.key].second = &row;
  const auto cell = [](const lab::LabRow* row) {
    return row ? fmt::format("{}: {} ({})", row->cases, row->within, percent(row->within, row->cases))
               : std::string("-");
  };
  const auto reach = [](const lab::LabRow* row) { return row ? reachablePercent(*row) : std::string("-"); };
  const auto add = [](lab::LabRow& total, const lab::LabRow* row) {
    if (row == nullptr) return;
    total.cases += row->cases;
    total.within += row->within;
    total.reachable += row->reachable;
  };
  lab::LabRow one, several;
  for (const auto& [key, pair] : rows) {
    out << fmt::format("{:<28} {:>24} {:>10} {:>24} {:>10}\n", terminalSafe(key), cell(pair.first),
                       reach(pair.first), cell(pair.second), reach(pair.second));
    add(one, pair.first);
    add(several, pair.second);
  }
  out << fmt::format("{:<28} {:>24} {:>10} {:>24} {:>10}\n", "all", cell(&one), reach(&one), cell(&several),
                     reach(&several));
}

std::string renderText(const lab::LabScore& score, const LabScoreArgs& args,
                       const std::vector<std::string>& misses) {
  std::ostringstream out;
  // The corpus's path and its manifest's strings are the user's: printed inert.
  out << fmt::format("lab corpus {}: {} programs ({} failed runs left out), {} cases", terminalSafe(score.corpus),
                     score.programs, score.failed_programs, score.cases.size());
  if (score.stale_variants > 0) {
    out << fmt::format(" ({} stale variants left out: recorded before their transform changed)",
                       score.stale_variants);
  }
  if (!score.machine.empty()) out << fmt::format(", recorded on {}", terminalSafe(score.machine));
  if (!score.date.empty()) out << fmt::format(" ({})", terminalSafe(score.date));
  out << "\n\n";
  renderTable(out, "finding", score.by_finding);
  out << "\n";
  renderTable(out, "transform", score.by_transform);
  renderThreadsTable(out, score);
  if (!score.untested.empty()) {
    out << "\nfindings claiming >= 5% of a span where no transform tests them:\n";
    for (const lab::UntestedFinding& u : score.untested) {
      out << fmt::format("  {:<28} {} programs\n", terminalSafe(u.finding), u.programs);
    }
  }
  const std::size_t drifted = static_cast<std::size_t>(
      std::count_if(score.cases.begin(), score.cases.end(), [](const lab::LabCase& c) { return c.drifted; }));
  if (drifted > 0) {
    const std::size_t within = static_cast<std::size_t>(std::count_if(
        score.cases.begin(), score.cases.end(), [](const lab::LabCase& c) { return c.drifted && c.within; }));
    out << fmt::format(
        "\n{} cases ({} within) measured against a later recording's baseline runs whose median is more "
        "than {:.0f}% from the analyzed recording's: their claim is priced on another run of the program\n",
        drifted, within, 100.0 * lab::kBaselineDriftShare);
  }
  if (args.cases) {
    out << "\ncases (program variant finding span saving ±uncertainty cost verdict):\n";
    for (const lab::LabCase& c : score.cases) {
      out << fmt::format("  {} {} {} {} {} ±{} {} {}{}\n", terminalSafe(c.program), terminalSafe(c.variant),
                         terminalSafe(c.finding),
                         units::formatDuration(c.span_ns), units::formatDuration(c.saving_ns),
                         units::formatDuration(c.uncertainty_ns), units::formatDuration(c.cost_ns),
                         c.false_finding ? "FALSE" : c.missed ? "MISSED" : c.within ? "ok" : "off",
                         c.decided ? "" : " (undecided)");
    }
  }
  out << "\n";
  if (misses.empty()) out << "targets met (rows with >= " << args.min_cases << " cases)\n";
  for (const std::string& miss : misses) out << "target missed: " << terminalSafe(miss) << "\n";
  return out.str();
}

nlohmann::ordered_json rowsJson(const std::vector<lab::LabRow>& rows) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const lab::LabRow& row : rows) {
    out.push_back({{"key", row.key}, {"cases", row.cases}, {"within", row.within},
                   {"reachable", row.reachable}, {"decided", row.decided},
                   {"within_decided", row.within_decided}, {"median_ratio", row.median_ratio}, {"false_findings", row.false_findings},
                   {"significant", row.significant}, {"missed", row.missed}});
  }
  return out;
}

std::string renderJson(const lab::LabScore& score, const std::vector<std::string>& misses) {
  nlohmann::ordered_json out;
  out["corpus"] = score.corpus;
  out["machine"] = score.machine;
  out["date"] = score.date;
  out["programs"] = score.programs;
  out["failed_programs"] = score.failed_programs;
  out["stale_variants"] = score.stale_variants;
  out["by_finding"] = rowsJson(score.by_finding);
  out["by_transform"] = rowsJson(score.by_transform);
  out["by_finding_one_thread"] = rowsJson(score.by_finding_one_thread);
  out["by_finding_several_threads"] = rowsJson(score.by_finding_several_threads);
  out["cases"] = nlohmann::ordered_json::array();
  for (const lab::LabCase& c : score.cases) {
    out["cases"].push_back({{"program", c.program}, {"transform", c.transform}, {"variant", c.variant},
                            {"finding", c.finding}, {"span_ns", c.span_ns},
                            {"saving_ns", c.saving_ns}, {"uncertainty_ns", c.uncertainty_ns},
                            {"cost_ns", c.cost_ns}, {"within", c.within}, {"reachable", c.reachable},
                            {"decided", c.decided}, {"false_finding", c.false_finding},
                            {"missed", c.missed}, {"baseline_drift", c.baseline_drift},
                            {"drifted", c.drifted}, {"waiting_threads", c.waiting_threads}});
    if (!c.claims_ns.empty()) {
      nlohmann::ordered_json& claims = out["cases"].back()["claims_ns"];
      claims = nlohmann::ordered_json::array();
      for (const auto& claim : c.claims_ns) claims.push_back(claim ? nlohmann::ordered_json(*claim) : nullptr);
    }
  }
  out["target_misses"] = misses;
  // The corpus path may be any bytes: invalid UTF-8 is replaced, not an internal error.
  return out.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

}  // namespace

void registerLabCommand(CLI::App& app, CommandResult& result) {
  auto* lab = app.add_subcommand("lab", "The counterfactual lab: score findings against measured fixes");
  lab->require_subcommand(1);
  auto* score = lab->add_subcommand("score", "Score a recorded lab corpus (docs/lab.md)");
  auto args = std::make_shared<LabScoreArgs>();
  score->add_option("corpus", args->corpus, "Corpus folder holding manifest.json and its traces")
      ->required();
  score->add_option("--format", args->format, "text or json")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  score->add_option("-o,--output", args->output, "Write the score to this file (default: stdout)");
  score->add_flag("--force", args->force, "Replace an existing output file");
  score->add_flag("--check", args->check, "Exit 1 when a target is missed");
  score->add_flag("--cases", args->cases, "List every case (text)");
  score->add_option("--min-cases", args->min_cases, "Rows with fewer cases are not checked")
      ->capture_default_str();
  score->add_option("--threads", args->threads, "Windows analyzed at once (0: one per core)");
  score->add_option("--windows", args->windows,
                    "Where a program keeps several baseline runs (windows_ns): judge each case by the "
                    "median of their claims (all), or by the kept run's (first)")
      ->check(CLI::IsMember({"all", "first"}))
      ->capture_default_str();
  std::vector<HelpRow> exit_status = reportExitStatus("the score was written");
  exit_status.insert(exit_status.begin() + 1, HelpRow{"1", "with --check: a finding missed its target"});
  const HelpSections sections{
      "",
      {{"cuoverlap lab score tests/data/lab", "each finding's predicted saving against the measured one, per finding"},
       {"cuoverlap lab score tests/data/lab --check --format json -o score.json", "for CI: exit 1 when a target is missed"}},
      exit_status,
      traceEnvironment(TerminalUse::kNone)};
  setHelpSections(*lab, sections);
  setHelpSections(*score, sections);
  score->callback([args, &result] {
    const lab::LabScore scored = lab::scoreCorpus(
        args->corpus, args->threads, args->windows == "first" ? lab::LabWindows::kFirst : lab::LabWindows::kAll);
    const std::vector<std::string> misses = lab::targetMisses(scored, args->min_cases);
    const std::string text = args->format == "json" ? renderJson(scored, misses)
                                                    : renderText(scored, *args, misses);
    writeOutput(args->output, {args->corpus + "/manifest.json"}, args->force, text);
    result.exit_code = args->check && !misses.empty() ? 1 : 0;
  });
}

}  // namespace cuoverlap::cli
