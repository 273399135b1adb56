// Several ranks as one job (job.h, docs/metrics.md "Several ranks as one job"): rank files written
// in our schema, read back and analyzed as one job, in parallel and not.
#include <catch2/catch.hpp>

#include "cuoverlap/job.h"
#include "cuoverlap/json_report.h"
#include "synthetic_trace.h"

using namespace cuoverlap;
using cuoverlap::testing::SyntheticOp;
using cuoverlap::testing::SyntheticTrace;

namespace {

constexpr const char* kAllReduce = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)";
constexpr Ns kUs = 1000;

SyntheticOp op(Ns start_us, Ns end_us, const std::string& name, std::uint32_t stream,
               std::uint32_t pid, std::uint16_t device) {
  SyntheticOp o{OpKind::kKernel, start_us * kUs, end_us * kUs};
  o.name = name;
  o.stream = stream;
  o.pid = pid;
  o.device = device;
  return o;
}

// Four steps of 1000 µs: compute, then an all-reduce. The rank starts each all-reduce `late_us`
// later than a punctual rank, after an idle GPU (its host was busy) when `idle_before` is set,
// else after longer compute.
void writeRank(SyntheticTrace& trace, std::uint32_t pid, std::uint16_t device, Ns late_us,
               bool idle_before) {
  for (Ns step = 0; step < 4; ++step) {
    const Ns t0 = 1000 + step * 1000;
    const Ns compute_end = t0 + 600 + (idle_before ? 0 : late_us);
    trace.addOp(op(t0, compute_end, "gemm", 13, pid, device));
    // The all-reduce ends together on every rank (at t0 + 900); it starts when the rank arrives.
    trace.addOp(op(t0 + 600 + late_us, t0 + 900, kAllReduce, 20, pid, device));
  }
}

std::string writeJobFile(const std::string& name, std::uint32_t pid, Ns late_us, bool idle_before) {
  const std::string path = cuoverlap::testing::tempTracePath(name);
  SyntheticTrace trace(path);
  writeRank(trace, pid, 0, late_us, idle_before);
  return path;
}

Report analyzeJobFiles(const std::vector<std::string>& files, unsigned threads) {
  std::vector<std::unique_ptr<Trace>> traces;
  return analyzeFiles(files, AnalysisOptions{}, false, traces, threads);
}

}  // namespace

TEST_CASE("two rank files: skew, the late rank and a host-busy straggler", "[job]") {
  const std::vector<std::string> files = {writeJobFile("job_r0.sqlite", 100, 0, false),
                                          writeJobFile("job_r1.sqlite", 200, 150, true),
                                          writeJobFile("job_r2.sqlite", 300, 20, false)};
  const Report report = analyzeJobFiles(files, 2);
  REQUIRE(report.job);
  const JobAnalysis& job = *report.job;
  REQUIRE(job.ranks.size() == 3);
  CHECK(job.ranks[0].pid == 100);  // numbered by file order: no launcher ranks in these files
  CHECK(job.ranks[1].pid == 200);
  CHECK_FALSE(job.ranks[0].rank_from_launcher);
  CHECK(job.matched == 4);
  CHECK(job.max_skew_ns == 150 * kUs);
  CHECK(job.mean_skew_ns == 150 * kUs);
  CHECK(job.type_mismatches == 0);
  CHECK(job.ranks[1].arrived_last == 4);
  CHECK(job.ranks[0].arrived_last == 0);
  CHECK(job.ranks[1].comm_busy_ns == 4 * 150 * kUs);
  CHECK(job.largest_skews.at(0).last_rank == 1);
  CHECK(job.largest_skews.at(0).first_rank == 0);
  CHECK(job.clock.find("one clock") != std::string::npos);
  REQUIRE(job.findings.size() == 1);
  const Finding& straggler = job.findings[0];
  CHECK(straggler.id == "rank-straggler");
  CHECK(straggler.count == 4);
  CHECK(straggler.time_ns == 4 * 150 * kUs);
  CHECK(straggler.summary.find("rank 1") != std::string::npos);
  CHECK(straggler.summary.find("idle 150") != std::string::npos);  // its GPU idle 150 µs longer
  // The same report whatever the thread count.
  CHECK(renderJsonString(analyzeJobFiles(files, 1)) == renderJsonString(report));
}

TEST_CASE("a straggler with longer kernels is told apart from a host-busy one", "[job]") {
  const Report report = analyzeJobFiles({writeJobFile("job_k0.sqlite", 100, 0, false),
                                         writeJobFile("job_k1.sqlite", 200, 120, false),
                                         writeJobFile("job_k2.sqlite", 300, 0, false)}, 2);
  REQUIRE(report.job);
  REQUIRE(report.job->findings.size() == 1);
  CHECK(report.job->findings[0].summary.find("kernels before each late collective ran 120") !=
        std::string::npos);
}

TEST_CASE("one file holding two processes is a job of two ranks", "[job]") {
  const std::string path = cuoverlap::testing::tempTracePath("job_one_file.sqlite");
  {
    SyntheticTrace trace(path);
    writeRank(trace, 100, 0, 0, false);
    writeRank(trace, 200, 1, 40, true);
  }
  const Report report = analyzeJobFiles({path}, 1);
  REQUIRE(report.job);
  REQUIRE(report.job->ranks.size() == 2);
  CHECK(report.job->ranks[1].device_id == 1);
  CHECK(report.job->max_skew_ns == 40 * kUs);
  CHECK(report.job->ranks[1].arrived_last == 4);
  CHECK(report.job->findings.at(0).id == "rank-straggler");
}

TEST_CASE("ranks on clocks far apart are aligned on their first collective's end", "[job]") {
  const std::string a = writeJobFile("job_clock0.sqlite", 100, 0, false);
  const std::string path = cuoverlap::testing::tempTracePath("job_clock1.sqlite");
  {
    SyntheticTrace trace(path);
    for (Ns step = 0; step < 4; ++step) {  // the same rank, its clock 5 s ahead, 30 µs late
      const Ns t0 = 5'000'000 + 1000 + step * 1000;
      trace.addOp(op(t0, t0 + 600, "gemm", 13, 200, 0));
      trace.addOp(op(t0 + 630, t0 + 900, kAllReduce, 20, 200, 0));
    }
  }
  const Report report = analyzeJobFiles({a, path}, 2);
  REQUIRE(report.job);
  CHECK(report.job->clock.find("aligned on the end of their first matched collective") != std::string::npos);
  CHECK(report.job->clock_offsets.at(1) == 5'000'000 * kUs);
  CHECK(report.job->max_skew_ns == 30 * kUs);
}

TEST_CASE("unrelated single-process traces get no job", "[job]") {
  const std::string path = cuoverlap::testing::tempTracePath("job_single.sqlite");
  {
    SyntheticTrace trace(path);
    trace.addOp(op(1000, 2000, "gemm", 13, 100, 0));
  }
  const std::string other = cuoverlap::testing::tempTracePath("job_single2.sqlite");
  {
    SyntheticTrace trace(other);
    trace.addOp(op(1000, 2000, "gemm", 13, 200, 0));
  }
  CHECK_FALSE(analyzeJobFiles({path, other}, 2).job);
}

TEST_CASE("an unreadable rank file is reported, not skipped", "[job]") {
  const std::string good = writeJobFile("job_good.sqlite", 100, 0, false);
  CHECK_THROWS(analyzeJobFiles({good, "/nonexistent/rank1.sqlite"}, 2));
}

// Issue 22: the table a reader scans for the worst collective lists it first.
TEST_CASE("largest skews are listed largest first", "[job]") {
  const Ns late_us[] = {20, 150, 60, 90};
  std::vector<std::string> files;
  for (std::uint32_t r = 0; r < 2; ++r) {
    const std::string path = cuoverlap::testing::tempTracePath("skew_order_r" + std::to_string(r) + ".sqlite");
    SyntheticTrace trace(path);
    for (Ns step = 0; step < 4; ++step) {
      const Ns t0 = 1000 + step * 1000, late = r == 1 ? late_us[step] : 0;
      trace.addOp(op(t0, t0 + 600 + late, "gemm", 13, 100 + r, 0));
      trace.addOp(op(t0 + 600 + late, t0 + 900, kAllReduce, 20, 100 + r, 0));
    }
    files.push_back(path);
  }
  const Report report = analyzeJobFiles(files, 1);
  REQUIRE(report.job);
  const std::vector<MatchedCollective>& skews = report.job->largest_skews;
  REQUIRE(skews.size() == 4);
  CHECK(skews[0].skew_ns == 150 * kUs);
  CHECK(skews[1].skew_ns == 90 * kUs);
  CHECK(skews[2].skew_ns == 60 * kUs);
  CHECK(skews[3].skew_ns == 20 * kUs);
  CHECK(skews[0].sequence == 1);  // the second all-reduce
}
