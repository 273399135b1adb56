// The 2-rank PyTorch DDP, DDP-with-one-bucket and FSDP steps recorded on 2 x H200 (trimmed copies in
// tests/data/ddp; tests/data/README.md says how they were recorded and what they must show):
// communication equals the independent computation of tests/data/ddp/trim_and_check.py to the
// nanosecond, the diagnosis an engineer sees on their timelines, and golden JSON reports of each
// job (tests/data/golden/ddp/, regenerated with UPDATE_GOLDEN=1 like the other goldens).
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "cuoverlap/job.h"
#include "cuoverlap/json_report.h"
#include "cuoverlap/reader.h"

namespace fs = std::filesystem;
using namespace cuoverlap;

namespace {

const fs::path kData = fs::path(CUOVERLAP_TEST_DATA) / "ddp";

Report jobReport(const std::string& variant) {
  std::vector<std::string> files = {(kData / (variant + "_rank0.sqlite.gz")).string(),
                                    (kData / (variant + "_rank1.sqlite.gz")).string()};
  std::vector<std::unique_ptr<Trace>> traces;
  Report report = analyzeFiles(files, AnalysisOptions{}, false, traces);
  // Goldens must not depend on where the checkout lives.
  for (TraceReport& trace : report.traces) trace.path = fs::path(trace.path).filename().string();
  if (report.job) {
    for (RankRow& row : report.job->ranks) row.path = fs::path(row.path).filename().string();
    for (Finding& f : report.job->findings) {
      const auto at = f.summary.find(kData.string());
      if (at != std::string::npos) f.summary.erase(at, kData.string().size() + 1);
    }
  }
  return report;
}

const CommunicationMetrics& communicationOf(const Report& report, std::size_t rank) {
  REQUIRE(report.traces.at(rank).devices.size() == 1);
  return report.traces[rank].devices[0].metrics.communication;
}

const Finding* findingOf(const std::vector<Finding>& findings, const std::string& id) {
  for (const Finding& f : findings) {
    if (f.id == id) return &f;
  }
  return nullptr;
}

// trim_and_check.py check tests/data/ddp/*.sqlite.gz
struct Expected {
  const char* variant;
  std::uint64_t kernels;
  Ns busy[2];
  Ns hidden[2];
};
constexpr Expected kExpected[] = {
    {"ddp", 40, {11306517, 11288508}, {9455590, 9442372}},
    {"ddp_onebucket", 5, {8832779, 8500392}, {0, 0}},
    {"fsdp", 81, {25143445, 48306940}, {14077151, 30128689}},
    {"ddp_ch4", 40, {39429895, 35929323}, {32758375, 29814296}},
    {"ddp_onebucket_ch4", 5, {32749955, 32627186}, {0, 0}},
    {"moe", 75, {10424438, 11505473}, {0, 0}},
};

void checkGolden(const std::string& variant, const Report& report) {
  const fs::path golden = fs::path(CUOVERLAP_TEST_DATA) / "golden" / "ddp" / (variant + "_job.json");
  const std::string actual = renderJsonString(report);
  const char* update = std::getenv("UPDATE_GOLDEN");
  if (update != nullptr && std::string(update) == "1") {
    fs::create_directories(golden.parent_path());
    std::ofstream(golden, std::ios::binary | std::ios::trunc) << actual;
    WARN("updated " << golden.string());
  }
  std::ifstream in(golden, std::ios::binary);
  const std::string expected{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  INFO("golden file " << golden.string() << " (UPDATE_GOLDEN=1 regenerates it)");
  REQUIRE(actual == expected);
}

}  // namespace

TEST_CASE("recorded DDP/FSDP ranks: communication equals the independent computation", "[ddp]") {
  for (const Expected& e : kExpected) {
    INFO(e.variant);
    const Report report = jobReport(e.variant);
    for (std::size_t rank = 0; rank < 2; ++rank) {
      const CommunicationMetrics& c = communicationOf(report, rank);
      CHECK(c.kernels == e.kernels);
      CHECK(c.busy_ns == e.busy[rank]);
      CHECK(c.hidden_ns == e.hidden[rank]);
      CHECK(c.exposed_ns == e.busy[rank] - e.hidden[rank]);
    }
    checkGolden(e.variant, report);
  }
}

TEST_CASE("DDP: all-reduces hide under backward, no communication finding", "[ddp]") {
  const Report report = jobReport("ddp");
  for (std::size_t rank = 0; rank < 2; ++rank) {
    CHECK(communicationOf(report, rank).hidden_fraction > 0.8);
    CHECK(findingOf(report.traces[rank].findings, "exposed-communication") == nullptr);
    CHECK(findingOf(report.traces[rank].findings, "communication-serialized") == nullptr);
  }
  REQUIRE(report.job);
  CHECK(report.job->matched == 40);
  CHECK(report.job->type_mismatches == 0);
  CHECK(report.job->clock == "one clock (all ranks on host vm)");
  CHECK(report.job->findings.empty());  // 2 ranks alternate arriving last: no straggler
}

TEST_CASE("DDP with one bucket: every all-reduce exposed and serialized behind backward", "[ddp]") {
  const Report report = jobReport("ddp_onebucket");
  for (std::size_t rank = 0; rank < 2; ++rank) {
    INFO("rank " << rank);
    const auto& findings = report.traces[rank].findings;
    const Finding* exposed = findingOf(findings, "exposed-communication");
    REQUIRE(exposed != nullptr);
    // No compute ran beside communication here: the cost is the exposed time, an upper bound,
    // less the time this rank waited at each all-reduce's start for the other to start it (skew:
    // rank-straggler's; no overlap on this rank hides it).
    REQUIRE(report.job);
    const RankRow& row = report.job->ranks[rank];
    REQUIRE(row.file_index == rank);
    CHECK(row.comm_peer_wait_ns > 0);
    CHECK(exposed->time_ns == communicationOf(report, rank).exposed_ns - row.comm_peer_wait_ns);
    CHECK(exposed->summary.find("at most") != std::string::npos);
    CHECK(exposed->summary.find("waiting at the start of collectives for a later rank") != std::string::npos);
    // The advice fits the collective: DDP's buckets for all-reduces.
    CHECK(exposed->advice.find("bucket_cap_mb") != std::string::npos);
    CHECK(exposed->evidence.at(0).detail.find("AllReduce f32 in NVTX") != std::string::npos);
    const Finding* serialized = findingOf(findings, "communication-serialized");
    REQUIRE(serialized != nullptr);
    CHECK(serialized->count == 5);
    CHECK(serialized->evidence.at(0).detail.find("AllReduce f32 waited for kernel at::native::vectorized_elementwise_kernel<…> on stream 7;") != std::string::npos);
  }
}

TEST_CASE("4 NCCL channels: the one-bucket cost is within 30% of the measured saving", "[ddp]") {
  // /work/traces/MANIFEST.md: median step (steps 5..15, traced) 18.398 ms with DDP's buckets,
  // 23.927 ms with one bucket: bucketing saved 5.53 ms a step (5.77 ms untraced).
  constexpr double kMeasuredSavingNs = 23'927'000 - 18'398'000;
  constexpr double kSteps = 5;  // the trimmed files hold steps 5..9
  const Report bad = jobReport("ddp_onebucket_ch4");
  for (std::size_t rank = 0; rank < 2; ++rank) {
    INFO("rank " << rank);
    const Finding* exposed = findingOf(bad.traces[rank].findings, "exposed-communication");
    REQUIRE(exposed != nullptr);
    const double per_step = static_cast<double>(exposed->time_ns) / kSteps;
    CHECK(per_step > 0.7 * kMeasuredSavingNs);
    CHECK(per_step < 1.3 * kMeasuredSavingNs);
  }
  // With DDP's buckets, 83% of the all-reduce time hides under backward.
  const Report good = jobReport("ddp_ch4");
  CHECK(communicationOf(good, 0).hidden_fraction > 0.8);
}

TEST_CASE("FSDP: rank 0 is the straggler, its GPU idle before the collectives", "[ddp]") {
  const Report report = jobReport("fsdp");
  REQUIRE(report.job);
  CHECK(report.job->matched == 81);
  REQUIRE(report.job->findings.size() == 1);
  const Finding& straggler = report.job->findings[0];
  CHECK(straggler.id == "rank-straggler");
  CHECK(straggler.summary.rfind("rank 0 ", 0) == 0);
  CHECK(straggler.summary.find("sat idle") != std::string::npos);
  CHECK(report.job->ranks[0].arrived_last > 3 * report.job->ranks[1].arrived_last);
  // Rank 1's NCCL kernels wait for rank 0 (issue 21: 18.2 ms of rank 1's 18.2 ms "exposed" were
  // counted as exposed communication). The wait is the straggler's, so rank 1's
  // exposed-communication leaves it out; rank 0, late for most of them, waits far less.
  const RankRow& early = report.job->ranks[1];
  const RankRow& late = report.job->ranks[0];
  CHECK(late.comm_peer_wait_ns < early.comm_peer_wait_ns / 3);  // it is late in 66 of 81
  CHECK(early.comm_peer_wait_ns > communicationOf(report, 1).exposed_ns / 2);
  const Finding* rank1 = findingOf(report.traces[1].findings, "exposed-communication");
  if (rank1 != nullptr) {
    CHECK(rank1->estimated_ns <= communicationOf(report, 1).exposed_ns - early.comm_peer_wait_ns);
    CHECK(rank1->summary.find("waiting at the start of collectives for a later rank") != std::string::npos);
  }
  // The advice fits FSDP's collectives: prefetching, never DDP's gradient buckets.
  const Finding* rank0 = findingOf(report.traces[0].findings, "exposed-communication");
  REQUIRE(rank0 != nullptr);
  CHECK(rank0->advice.find("forward_prefetch") != std::string::npos);
  CHECK(rank0->advice.find("bucket_cap_mb") == std::string::npos);
}

TEST_CASE("MoE all-to-all: SendRecv kernels are communication, matched and peer-waited", "[ddp]") {
  const Report report = jobReport("moe");
  REQUIRE(report.job);
  CHECK(report.job->matched == 75);  // every all-to-all of both ranks
  CHECK(report.job->type_mismatches == 0);
  for (std::size_t rank = 0; rank < 2; ++rank) {
    INFO("rank " << rank);
    const RankRow& row = report.job->ranks[rank];
    CHECK(row.comm_peer_wait_ns > 0);
    CHECK(row.comm_peer_wait_ns < communicationOf(report, rank).exposed_ns / 4);
    // All exposed, but 1.6% of the span: below what exposed-communication reports.
    CHECK(findingOf(report.traces[rank].findings, "exposed-communication") == nullptr);
    // What the step does lose: the script's synchronize after each step.
    CHECK(findingOf(report.traces[rank].findings, "blocking-sync-call") != nullptr);
  }
}

// `cuoverlap record -- torchrun --nproc_per_node 2 ddp_step.py --mode ddp` with 4 NCCL channels,
// recorded on 2 x H200 with the multi-process collector (issue 10): one merged trace holding both
// ranks, each with its rank from torchrun and its NCCL kernels (SQL: 80 ncclDevKernel_* kernels on
// device 0 from pid 1651 and 80 on device 1 from pid 1652).
TEST_CASE("a torchrun job recorded by record: both ranks in one trace with their NCCL kernels", "[ddp]") {
  const Trace trace = readTrace((kData / "torchrun_record_ddp_ch4.sqlite.gz").string());
  REQUIRE(trace.processes.size() == 2);
  for (const ProcessInfo& process : trace.processes) {
    REQUIRE(process.rank.has_value());
    CHECK(process.world_size == 2);
    CHECK(process.command.find("ddp_step.py --mode ddp") != std::string::npos);
  }
  CHECK(*trace.processes[0].rank + *trace.processes[1].rank == 1);
  std::vector<std::unique_ptr<Trace>> traces;
  const Report report =
      analyzeFiles({(kData / "torchrun_record_ddp_ch4.sqlite.gz").string()}, AnalysisOptions{}, false, traces);
  REQUIRE(report.traces.size() == 1);
  REQUIRE(report.traces[0].devices.size() == 2);
  for (const DeviceReport& device : report.traces[0].devices) {
    CHECK(device.metrics.communication.kernels == 80);
    CHECK(device.metrics.communication.hidden_fraction > 0.5);  // DDP's buckets hide under backward
  }
  REQUIRE(report.job.has_value());
  CHECK(report.job->ranks.size() == 2);
  CHECK(report.job->matched >= 70);
}
