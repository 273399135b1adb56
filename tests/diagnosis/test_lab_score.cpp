// The lab's score (cuoverlap/lab_score.h) on a corpus made here: one bundled trace as the baseline
// run of a "program", and variants whose measured medians put the pageable-memcpy cost within,
// beyond, and far from their savings, so that each verdict (within, off, false, missed) is reached.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <unistd.h>
#include <string>

#include <nlohmann/json.hpp>

#include "cuoverlap/analysis.h"
#include "cuoverlap/error.h"
#include "cuoverlap/lab_score.h"
#include "cuoverlap/reader.h"
#include "diagnosis/schedule_unrun.h"

namespace cuoverlap {
namespace {

namespace fs = std::filesystem;

struct Corpus {
  fs::path dir;
  Corpus() {
    dir = fs::temp_directory_path() / ("cuoverlap-lab-score-" + std::to_string(::getpid()));
    fs::create_directories(dir);
    fs::copy_file(std::string(CUOVERLAP_TEST_DATA) + "/streams_pageable.sqlite.gz",
                  dir / "batch000.sqlite.gz", fs::copy_options::overwrite_existing);
  }
  ~Corpus() { fs::remove_all(dir); }
  void write(const nlohmann::json& manifest) const {
    std::ofstream(dir / "manifest.json") << manifest.dump();
  }
};

Ns pageableCost(const std::string& path) {
  const Trace trace = readTrace(path);
  AnalysisOptions options;
  options.steady_state = false;
  const TraceReport report = analyzeTrace(trace, options);
  // What the lab claims for the pin-host fix: the finding's fix saving (its headline time comes
  // from another schedule and may differ by a few µs).
  return lab::claimedSaving(report.findings, "pageable-memcpy", "pin-host", std::nullopt, std::nullopt)
      .value_or(0);
}

}  // namespace

TEST_CASE("lab score: each case is judged against its transform's measured saving") {
  const Corpus corpus;
  const Ns cost = pageableCost((corpus.dir / "batch000.sqlite.gz").string());
  REQUIRE(cost > 100'000'000);  // 140 ms on the bundled H100 recording
  const Ns span = 4 * cost;
  auto variant = [&](const char* finding, Ns saving) {
    return nlohmann::json{{"finding", finding}, {"spans_ns", {span - saving}},
                          {"median_ns", span - saving}};
  };
  corpus.write({{"schema", "cuoverlap-lab-corpus/1"},
                {"machine", "test"},
                {"programs",
                 {{{"id", "p1"},
                   {"trace", "batch000.sqlite.gz"},
                   {"baseline",
                    {{"window_ns", {std::numeric_limits<Ns>::min(), std::numeric_limits<Ns>::max()}},
                     {"median_ns", span}}},
                   {"variants",
                    {{"pin-host", variant("pageable-memcpy", cost + cost / 5)},      // within
                     {"pin-host-far", variant("pageable-memcpy", cost * 2)},         // off
                     {"pin-host-nothing", variant("pageable-memcpy", span / 100)},   // false
                     {"hoist-alloc", variant("slow-allocation", span / 10)}}}}}}});  // missed
  const lab::LabScore score = lab::scoreCorpus(corpus.dir.string(), 2);
  REQUIRE(score.cases.size() == 4);
  std::map<std::string, lab::LabCase> by;
  for (const lab::LabCase& c : score.cases) by[c.transform] = c;
  CHECK(by["pin-host"].within);
  CHECK(by["pin-host"].cost_ns == cost);
  CHECK_FALSE(by["pin-host"].drifted);  // measured against the analyzed recording's own runs
  CHECK(by["pin-host"].baseline_drift == 0.0);
  CHECK_FALSE(by["pin-host-far"].within);
  CHECK(by["pin-host-nothing"].false_finding);
  CHECK(by["hoist-alloc"].missed);
  CHECK_FALSE(by["hoist-alloc"].fired);
  REQUIRE(score.by_finding.size() == 2);
  CHECK(score.by_finding[0].key == "pageable-memcpy");
  CHECK(score.by_finding[0].cases == 3);
  CHECK(score.by_finding[0].within == 1);
  CHECK(score.by_finding[0].false_findings == 1);
  // One run each: no spread, so a claim equal to each saving would be within every time.
  CHECK(by["pin-host"].uncertainty_ns == 0);
  CHECK(score.by_finding[0].reachable == Approx(3.0));
  CHECK(score.by_finding_one_thread[0].reachable == Approx(3.0));  // the shape rows carry it too
  CHECK_FALSE(lab::targetMisses(score, 1).empty());
  CHECK(lab::targetMisses(score, 20).size() == 1);  // the false findings exceed 2% of 4 cases
  // One host thread: every case in the one-thread rows.
  CHECK(by["pin-host"].waiting_threads == 0);
  CHECK(score.by_finding_one_thread.size() == score.by_finding.size());
  CHECK(score.by_finding_several_threads.empty());
}

TEST_CASE("lab score: how far the measurement lets a claim go (reachableWithin)") {
  // Without spread a claim equal to the saving is within, a fix that slowed the program included
  // (its saving counts as 0, and so does the best claim).
  CHECK(lab::reachableWithin(1'000'000, 0.0) == 1.0);
  CHECK(lab::reachableWithin(-50'000, 0.0) == 1.0);
  // A decided case (uncertainty, two standard errors, at its tolerance): 300 µs of 1 ms. The draws
  // within ±30% of themselves run from 769 µs to 1.43 ms, -1.54 to +2.86 standard errors: 0.94.
  const double decided = lab::reachableWithin(1'000'000, 150'000.0);
  CHECK(decided == Approx(0.936).margin(0.005));
  // An undecided small saving: 30 µs measured with a 60 µs standard error. A draw counts within when
  // its saving (a negative one as 0) is within 20 µs of 30: only draws from 10 to 50 µs (and none
  // of the negative ones, whose 0 is 30 µs away).
  const double undecided = lab::reachableWithin(30'000, 60'000.0);
  CHECK(undecided == Approx(0.26).margin(0.01));
  // More spread never makes the best claim likelier to be judged within.
  CHECK(lab::reachableWithin(1'000'000, 300'000.0) < decided);
}

TEST_CASE("lab score: a variant recorded later is compared with the baseline runs recorded with it") {
  // A transform that newly applies to a program is recorded with baseline runs of its own, in
  // another process (scripts/lab_merge.py --variants-only): its saving comes from those runs,
  // paired rep by rep; the program's own baseline runs, recorded before, are not touched.
  const Corpus corpus;
  const Ns cost = pageableCost((corpus.dir / "batch000.sqlite.gz").string());
  const Ns span = 4 * cost;
  const Ns drift = span / 10;  // the later recording ran 10% slower, baseline and variant alike
  auto spans = [](Ns first, Ns step) {
    return nlohmann::json{first, first + step, first + 2 * step};
  };
  corpus.write(
      {{"schema", "cuoverlap-lab-corpus/1"},
       {"programs",
        {{{"id", "p1"},
          {"trace", "batch000.sqlite.gz"},
          {"baseline",
           {{"window_ns", {std::numeric_limits<Ns>::min(), std::numeric_limits<Ns>::max()}},
            {"median_ns", span + 1'000},
            {"spans_ns", spans(span, 1'000)}}},
          {"variants",
           {{"pin-host",
             {{"finding", "pageable-memcpy"},
              {"median_ns", span + drift - cost + 1'000},
              {"spans_ns", spans(span + drift - cost, 1'000)},
              {"baseline_spans_ns", spans(span + drift, 1'000)}}}}}}}}});
  const lab::LabScore score = lab::scoreCorpus(corpus.dir.string(), 1);
  REQUIRE(score.cases.size() == 1);
  CHECK(score.cases[0].saving_ns == cost);  // not cost - drift, from the program's own runs
  CHECK(score.cases[0].span_ns == span + 1'000);
  CHECK(score.cases[0].within);
  // Its own baseline ran 10% slower than the analyzed recording's: the case is marked drifted (its
  // claim was priced on a run of the program that may not behave like the runs it is measured on).
  CHECK(score.cases[0].baseline_drift ==
        Approx(static_cast<double>(span + drift + 1'000) / static_cast<double>(span + 1'000) - 1.0));
  CHECK(score.cases[0].drifted);
}

TEST_CASE("lab score: a missing or malformed corpus is a UserError") {
  const Corpus corpus;
  CHECK_THROWS_AS(lab::scoreCorpus((corpus.dir / "nowhere").string()), UserError);
  corpus.write({{"schema", "something-else"}});
  CHECK_THROWS_AS(lab::scoreCorpus(corpus.dir.string()), UserError);
  corpus.write({{"schema", "cuoverlap-lab-corpus/1"}, {"programs", {{{"id", "p1"}}}}});
  CHECK_THROWS_WITH(lab::scoreCorpus(corpus.dir.string()),
                    Catch::Contains("programs[0]"));
}

TEST_CASE("lab score: a program with several baseline runs is judged by the median of their claims") {
  // Three kept runs (baseline.windows_ns, scripts/lab_collect.py --windows 3): in the first
  // (the kept run, [0, 1]: nothing ran) the finding is absent, in the other two it claims `cost`.
  // The median claim is `cost`; the first window's alone (--windows first) is a miss.
  const Corpus corpus;
  const Ns cost = pageableCost((corpus.dir / "batch000.sqlite.gz").string());
  const Ns span = 4 * cost;
  const nlohmann::json all = {std::numeric_limits<Ns>::min(), std::numeric_limits<Ns>::max()};
  auto variant = [&](const char* finding, Ns saving) {
    return nlohmann::json{{"finding", finding}, {"spans_ns", {span - saving}}, {"median_ns", span - saving}};
  };
  nlohmann::json leftOut = variant("pageable-memcpy", cost);
  leftOut["stream_id"] = 7;
  leftOut["stream_ids"] = {7, nullptr, nullptr};  // the stream is named in the first run only
  auto program = [&](const char* id, const nlohmann::json& windows) {
    return nlohmann::json{{"id", id},
                          {"trace", "batch000.sqlite.gz"},
                          {"baseline", {{"window_ns", {0, 1}}, {"windows_ns", windows}, {"median_ns", span}}},
                          {"variants", {{"pin-host", variant("pageable-memcpy", cost)},
                                        {"multi-stream", leftOut}}}};
  };
  nlohmann::json two = program("p2", {{0, 1}, all});
  two["variants"].erase("multi-stream");
  nlohmann::json manifest = {{"schema", "cuoverlap-lab-corpus/1"},
                             {"programs", {program("p3", {{0, 1}, all, all}), two}}};
  corpus.write(manifest);
  std::map<std::string, lab::LabCase> by;
  for (const lab::LabCase& c : lab::scoreCorpus(corpus.dir.string(), 2).cases) by[c.program + " " + c.variant] = c;
  const lab::LabCase& median = by["p3 pin-host"];
  CHECK(median.fired);
  CHECK(median.cost_ns == cost);
  CHECK(median.within);
  CHECK(median.claims_ns == std::vector<std::optional<Ns>>{Ns{0}, cost, cost});
  // Windows whose streams are not named are left out: the first run's claim alone remains.
  const lab::LabCase& named = by["p3 multi-stream"];
  CHECK(named.claims_ns == std::vector<std::optional<Ns>>{Ns{0}, std::nullopt, std::nullopt});
  CHECK_FALSE(named.fired);
  CHECK(named.cost_ns == 0);
  // Two runs: the mean of the two claims, fired where the upper one fired.
  CHECK(by["p2 pin-host"].fired);
  CHECK(by["p2 pin-host"].cost_ns == cost / 2);

  by.clear();
  for (const lab::LabCase& c : lab::scoreCorpus(corpus.dir.string(), 2, lab::LabWindows::kFirst).cases) {
    by[c.program + " " + c.variant] = c;
  }
  CHECK_FALSE(by["p3 pin-host"].fired);
  CHECK(by["p3 pin-host"].missed);
  CHECK(by["p3 pin-host"].claims_ns.empty());
  CHECK(by["p3 multi-stream"].cost_ns == 0);

  manifest["programs"][0]["baseline"]["windows_ns"] = {{0, 1, 2}};
  corpus.write(manifest);
  CHECK_THROWS_WITH(lab::scoreCorpus(corpus.dir.string()),
                    Catch::Contains("programs[0]") && Catch::Contains("windows_ns is not a list of [start, end] pairs"));
  manifest["programs"][0]["baseline"]["windows_ns"] = {{0, 1}, all, all};
  manifest["programs"][0]["variants"]["multi-stream"]["stream_ids"] = {7};
  corpus.write(manifest);
  CHECK_THROWS_WITH(lab::scoreCorpus(corpus.dir.string()), Catch::Contains("stream_ids is not one id"));
}

TEST_CASE("no what-if schedule of the committed lab corpus breaks one of its edges", "[lab]") {
  // Every window of every program of tests/data/lab analyzed, each rule's schedules checked: an op
  // or call begins no sooner than each edge into it allows (diagnosis/schedule_unrun.h). An op
  // ending twice broke 190 edges by more than 1 µs there (docs/findings.md, forty-fourth session).
  const diagnosis::ScheduleEdgeCheck check;
  const std::uint64_t broken = diagnosis::brokenEdgeSchedules();
  const lab::LabScore score = lab::scoreCorpus(std::string(CUOVERLAP_TEST_DATA) + "/lab");
  CHECK(score.cases.size() >= 1000);
  CHECK(diagnosis::brokenEdgeSchedules() == broken);
  // Its programs of several host threads, each waiting for its own work, are where the reports say
  // the savings are rough: each case in one of the two split rows of its finding id.
  std::map<std::string, std::size_t> cases, within;
  for (const auto* rows : {&score.by_finding_one_thread, &score.by_finding_several_threads}) {
    for (const lab::LabRow& row : *rows) cases[row.key] += row.cases, within[row.key] += row.within;
  }
  for (const lab::LabRow& row : score.by_finding) {
    CHECK(cases[row.key] == row.cases);
    CHECK(within[row.key] == row.within);
  }
  const auto several = std::count_if(score.cases.begin(), score.cases.end(),
                                     [](const lab::LabCase& c) { return c.waiting_threads >= 2; });
  CHECK(several > 600);  // 669 of 1707: all but one of the 90 `threads` programs
}

}  // namespace cuoverlap

namespace cuoverlap {

TEST_CASE("lab score: a case checks the saving of its transform's fix where the finding prices it") {
  // legacy-default-stream advises two fixes that save differently (own streams per thread 700 µs,
  // non-blocking created streams 50 µs): each transform's case checks its own fix's saving; a
  // transform the finding does not price checks what its recommended fix saves.
  Finding legacy;
  legacy.id = "legacy-default-stream";
  legacy.estimated_ns = 700'000;
  legacy.fixes = {{"own-streams", 700'000}, {"nonblocking-streams", 50'000}};
  Finding copies;
  copies.id = "pageable-memcpy";
  copies.estimated_ns = 30'000;
  copies.ideal_reduction_ns = 10'000;
  const std::vector<Finding> findings{legacy, copies, copies};
  CHECK(lab::claimedSaving(findings, "legacy-default-stream", "own-streams") == 700'000);
  CHECK(lab::claimedSaving(findings, "legacy-default-stream", "nonblocking-streams") == 50'000);
  CHECK(lab::claimedSaving(findings, "legacy-default-stream", "another-fix") == 700'000);
  CHECK(lab::claimedSaving(findings, "pageable-memcpy", "pin-host") == 80'000);  // two devices
  CHECK_FALSE(lab::claimedSaving(findings, "sync-memcpy", "async-copy").has_value());
}

TEST_CASE("lab score: a claim about splitting one stream is not checked against a split of another") {
  // single-stream names the stream to split; a multi-stream variant that split another stream
  // carries out none of that advice, so the finding claims nothing for it (a saving there with no
  // finding is a missed case, and the finding's own claim stays untested).
  Finding single;
  single.id = "single-stream";
  single.estimated_ns = 900'000;
  single.fix_stream = 21;
  const std::vector<Finding> findings{single};
  CHECK(lab::claimedSaving(findings, "single-stream", "multi-stream", 21) == 900'000);
  CHECK_FALSE(lab::claimedSaving(findings, "single-stream", "multi-stream", 14).has_value());
  CHECK(lab::claimedSaving(findings, "single-stream", "multi-stream") == 900'000);  // not named
  Finding unnamed = single;
  unnamed.fix_stream.reset();
  CHECK(lab::claimedSaving({unnamed}, "single-stream", "multi-stream", 14) == 900'000);
}

TEST_CASE("lab score: a finding that prices each stream's split claims the split of the variant's stream") {
  Finding single;
  single.id = "single-stream";
  single.estimated_ns = 900'000;
  single.fix_stream = 21;
  single.fixes = {{"multi-stream", 900'000, 21}, {"multi-stream", 300'000, 14}};
  const std::vector<Finding> findings{single};
  CHECK(lab::claimedSaving(findings, "single-stream", "multi-stream", 21) == 900'000);
  CHECK(lab::claimedSaving(findings, "single-stream", "multi-stream", 14) == 300'000);
  CHECK_FALSE(lab::claimedSaving(findings, "single-stream", "multi-stream", 7).has_value());
  CHECK(lab::claimedSaving(findings, "single-stream", "multi-stream") == 900'000);  // not named
}

TEST_CASE("lab score: where threads shared the stream, a split of one thread's loop checks that thread's fix") {
  // Two threads' loops on the legacy stream 7: the finding recommends splitting thread 11's loop
  // and lists thread 12's; a variant that split thread 12's loop tests that fix only.
  Finding single;
  single.id = "single-stream";
  single.estimated_ns = 900'000;
  single.fix_stream = 7;
  single.fixes = {{"multi-stream", 900'000, 7, 11}, {"multi-stream", 40'000, 7, 12}};
  const std::vector<Finding> findings{single};
  CHECK(lab::claimedSaving(findings, "single-stream", "multi-stream", 7, 11) == 900'000);
  CHECK(lab::claimedSaving(findings, "single-stream", "multi-stream", 7, 12) == 40'000);
  CHECK_FALSE(lab::claimedSaving(findings, "single-stream", "multi-stream", 7, 13).has_value());  // not priced
  CHECK(lab::claimedSaving(findings, "single-stream", "multi-stream", 7) == 900'000);  // thread not named
}

}  // namespace cuoverlap
