// Counterfactual pairs: a bad scenario and its fixed twin (the same work with the problem fixed),
// recorded on the same GPU. The findings the manifest expects for the bad trace must cost (after
// the cost ledger) within ±30% of the span the fix measurably saved, and the fixed twin must have
// no finding worth 5% of its span or more. Pairs come from workloads/streams/scenarios.json
// (`fixed_twin`), else from the pairs bundled before that field existed; a pair whose traces are
// not in tests/data is skipped (they are recorded on the GPU machine). docs/findings.md keeps the
// table of cost vs measured saving.
#include <catch2/catch.hpp>

#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cuoverlap/analysis.h"
#include "cuoverlap/reader.h"

namespace cuoverlap {
namespace {

constexpr double kTolerance = 0.30;
constexpr double kCleanShare = 0.05;

struct Pair {
  std::string bad;
  std::string fixed;
  std::set<std::string> responsible;
};

// Pairs whose cost the what-if schedule is known to miss, with why (docs/findings.md).
const std::set<std::string> kKnownMisses = {
    // The fixed twin ran the copy engine one stream's queue at a time (24 HtoD copies of stream
    // 13 back to back before stream 14's), which a first-come-first-served engine model does not
    // reproduce: estimate 7.5 ms, measured 4.6 ms.
    "event-dag-serialized",
};

std::vector<Pair> pairs() {
  std::vector<Pair> result;
  std::ifstream in(CUOVERLAP_SCENARIOS);
  const nlohmann::json manifest = nlohmann::json::parse(in);
  for (const auto& s : manifest.at("scenarios")) {
    std::set<std::string> expected = s.at("expected_findings").get<std::set<std::string>>();
    expected.erase("low-overlap");  // a summary: it names the responsible findings
    std::string twin = s.value("fixed_twin", "");
    if (twin.empty()) {
      static const std::map<std::string, std::string> kBundled = {
          {"serial", "pipeline3"}, {"nullstream-trap", "nonblocking"},
          {"event-dag-serialized", "event-dag"}, {"host-bound", "host-bound-graph"}};
      auto it = kBundled.find(s.at("name").get<std::string>());
      if (it != kBundled.end()) twin = it->second;
    }
    if (!twin.empty()) result.push_back({s.at("name"), twin, expected});
  }
  return result;
}

std::string tracePath(const std::string& scenario) {
  return std::string(CUOVERLAP_TEST_DATA) + "/streams_" + scenario + ".sqlite";
}

bool exists(const std::string& path) { return std::ifstream(path).good(); }

struct Analyzed {
  Trace trace;
  TraceReport report;
};

void analyze(const std::string& path, Analyzed& out) {
  out.trace = readTrace(path);
  out.report = analyzeTrace(out.trace, AnalysisOptions{});
}

void checkPair(const Pair& pair) {
  Analyzed bad, fixed;
  analyze(tracePath(pair.bad), bad);
  analyze(tracePath(pair.fixed), fixed);
  REQUIRE(bad.report.devices.size() == 1);
  REQUIRE(fixed.report.devices.size() == 1);
  const Ns saving = bad.report.devices[0].metrics.span_ns - fixed.report.devices[0].metrics.span_ns;
  Ns cost = 0;
  for (const Finding& f : bad.report.findings) {
    if (pair.responsible.count(f.id)) cost += f.time_ns;
  }
  INFO(pair.bad << " vs " << pair.fixed << ": cost " << cost << " ns, measured saving " << saving
                << " ns");
  REQUIRE(saving > 0);
  CHECK(static_cast<double>(cost) >= (1.0 - kTolerance) * static_cast<double>(saving));
  CHECK(static_cast<double>(cost) <= (1.0 + kTolerance) * static_cast<double>(saving));
  const Ns fixed_span = fixed.report.devices[0].metrics.span_ns;
  for (const Finding& f : fixed.report.findings) {
    INFO(pair.fixed << ": " << f.id << " costs " << f.time_ns << " ns of a " << fixed_span
                    << " ns span");
    CHECK(static_cast<double>(f.time_ns) < kCleanShare * static_cast<double>(fixed_span));
  }
}

void checkPairs(bool known_misses) {
  int checked = 0;
  for (const Pair& pair : pairs()) {
    if (kKnownMisses.count(pair.bad) != static_cast<std::size_t>(known_misses)) continue;
    if (!exists(tracePath(pair.bad)) || !exists(tracePath(pair.fixed))) {
      WARN("pair " << pair.bad << " / " << pair.fixed << " not recorded yet: skipped");
      continue;
    }
    checkPair(pair);
    ++checked;
  }
  if (!known_misses) CHECK(checked >= 3);  // serial, nullstream-trap and host-bound are bundled
}

TEST_CASE("counterfactual pairs: the responsible findings cost what the fix saved (±30%)") {
  checkPairs(false);
}

TEST_CASE("counterfactual pairs the what-if schedule is known to miss", "[!mayfail]") {
  checkPairs(true);
}

}  // namespace
}  // namespace cuoverlap
