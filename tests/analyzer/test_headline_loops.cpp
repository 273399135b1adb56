// The steady state a user reads first, on single-GPU loops recorded with `cuoverlap record` on an
// H100 (tests/data/headline, README there; issue 21): each program printed its own median step
// time (`median_step_ms=` in its log beside the trace), and the analyzer's iteration period (median
// GPU start to the next iteration's GPU start) must be within 5% of it, from the expected source.
#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

#include "cuoverlap/analysis.h"
#include "cuoverlap/reader.h"

using namespace cuoverlap;

namespace {

const std::string kHeadline = std::string(CUOVERLAP_TEST_DATA) + "/headline/";

// A `key=value` number from the program's own output line (e.g. "median_step_ms=1.754").
double programValue(const std::string& name, const std::string& key) {
  std::ifstream in(kHeadline + name + ".log");
  REQUIRE(in);
  std::string line;
  while (std::getline(in, line)) {
    const std::size_t at = line.find(" " + key + "=");
    if (at != std::string::npos) return std::stod(line.substr(at + key.size() + 2));
  }
  FAIL("no " << key << "= in " << name << ".log");
  return 0.0;
}

struct Loop {
  const char* name;
  const char* source;     // the iterations the steady state must take
  bool warmup_dominates;  // compile/autotune warm-up holds most of the run's GPU busy time
};

// Each program's loop and why its source is the right one: README's table "What each golden's
// steady state must say" gives the SQL behind each.
const Loop kLoops[] = {
    {"graphs", "nvtx:step N", false},      // 200 `step N` ranges, one cudaGraphLaunch each
    {"eager", "nvtx:step N", false},       // 40 `step N` ranges around eager PyTorch steps
    {"compile", "nvtx:step N", true},      // torch.compile: step 0 compiles and autotunes (9 s)
    {"dataloader", "nvtx:step N", false},  // `step N` covers the compute, not the batch wait
    {"jax", "graph-launch", true},         // no user range; XLA replays each step as a graph
};

}  // namespace

TEST_CASE("headline loops: the steady state's period is the program's own step time", "[steady][headline]") {
  for (const Loop& loop : kLoops) {
    DYNAMIC_SECTION(loop.name) {
      const TraceReport report = analyzeTrace(readTrace(kHeadline + loop.name + ".sqlite.gz"), AnalysisOptions{});
      REQUIRE(report.steady_state);
      const SteadyState& s = *report.steady_state;
      INFO(s.reason);
      REQUIRE(s.found);
      CHECK(s.source == loop.source);
      // every step of the program is an iteration, kept or dropped as warm-up
      CHECK(s.iterations + s.warmup_dropped == static_cast<std::uint64_t>(programValue(loop.name, "steps")));
      const double program_ns = programValue(loop.name, "median_step_ms") * 1e6;
      const double period_ns = static_cast<double>(s.iteration_ns.median);
      INFO("period " << period_ns << " ns, program " << program_ns << " ns");
      CHECK(std::abs(period_ns - program_ns) / program_ns < 0.05);
      CHECK(static_cast<double>(s.iterations) * period_ns ==
            Approx(static_cast<double>(s.end - s.start)).epsilon(0.1));
      // how much of the run's GPU work the window holds: most, unless warm-up took it
      CHECK((s.busy_share < 0.5) == loop.warmup_dominates);
    }
  }
}

// The period is not the host range: a graph launch returns in 53 us of a 1.05 ms step, and the
// DataLoader's `step` range (1.7 ms) leaves out the wait for the next batch.
TEST_CASE("headline loops: the host range is reported beside the period, not as it", "[steady][headline]") {
  struct Case { const char* name; double most_host_share; };
  for (const Case& c : {Case{"jax", 0.25}, Case{"dataloader", 0.5}}) {
    DYNAMIC_SECTION(c.name) {
      const TraceReport report = analyzeTrace(readTrace(kHeadline + c.name + ".sqlite.gz"), AnalysisOptions{});
      const SteadyState& s = *report.steady_state;
      REQUIRE(s.found);
      REQUIRE(s.host_range_ns);
      CHECK(static_cast<double>(s.host_range_ns->median) <
            c.most_host_share * static_cast<double>(s.iteration_ns.median));
    }
  }
}

namespace {

// One rank's `median_step_ms=` from the DDP job's log (both ranks print to one stream, so the
// lines can run together: find "rank=R " first, then its value).
double rankStepMs(int rank) {
  std::ifstream in(kHeadline + "ddp.log");
  REQUIRE(in);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::size_t line = text.find("ddp_step mode=ddp rank=" + std::to_string(rank) + " ");
  REQUIRE(line != std::string::npos);
  const std::string key = "median_step_ms=";
  const std::size_t at = text.find(key, line);
  REQUIRE(at != std::string::npos);
  return std::stod(text.substr(at + key.size()));
}

}  // namespace

// The 2-rank DDP job of issue 21 (30 steps, an NVTX range `step N` per step; NCCL's own ranges in
// the trace), recorded with `record --summary -- torchrun` on an nvidia-h200-x2 host: each rank's
// steady state comes from the user's range, holds every step, and its period is the rank's own
// median step time.
TEST_CASE("headline loops: each rank of a DDP job leads with its own step time", "[steady][headline]") {
  for (int rank : {0, 1}) {
    DYNAMIC_SECTION("rank " << rank) {
      const TraceReport report = analyzeTrace(
          readTrace(kHeadline + "ddp_rank" + std::to_string(rank) + ".sqlite.gz"), AnalysisOptions{});
      REQUIRE(report.steady_state);
      const SteadyState& s = *report.steady_state;
      INFO(s.reason);
      REQUIRE(s.found);
      CHECK(s.source == "nvtx:step N");
      CHECK(s.iterations + s.warmup_dropped == 30);
      const double program_ns = rankStepMs(rank) * 1e6;
      const double period_ns = static_cast<double>(s.iteration_ns.median);
      INFO("period " << period_ns << " ns, program " << program_ns << " ns");
      CHECK(std::abs(period_ns - program_ns) / program_ns < 0.05);
      CHECK(static_cast<double>(s.iterations) * period_ns ==
            Approx(static_cast<double>(s.end - s.start)).epsilon(0.1));
      CHECK(s.busy_share > 0.5);
    }
  }
}
