// Rank summaries (summary.h, docs/summaries.md): the job report from summaries equals the report
// from the traces byte for byte in JSON, on the recorded DDP/FSDP jobs and a synthetic 64-rank
// job on 8 hosts, for summaries alone and for a mix of summaries and traces.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "cuoverlap/job.h"
#include "cuoverlap/json_report.h"
#include "cuoverlap/summary.h"
#include "summary/report_codec.h"
#include "synthetic_job.h"
#include "synthetic_trace.h"
#include "../trace_files.h"

using namespace cuoverlap;
namespace fs = std::filesystem;

namespace {

const fs::path kData = fs::path(CUOVERLAP_TEST_DATA) / "ddp";

std::string jobJson(const std::vector<std::string>& files) {
  std::vector<std::unique_ptr<Trace>> traces;
  return renderJsonString(analyzeFiles(files, AnalysisOptions{}, false, traces, 2));
}

std::string summarize(const std::string& trace) {
  const std::string path =
      testing::tempTracePath(fs::path(summaryPathFor(trace)).filename().string());
  std::ofstream(path, std::ios::binary) << summarizeTrace(trace, AnalysisOptions{});
  return path;
}

void checkSummariesEqualTraces(const std::vector<std::string>& traces) {
  std::vector<std::string> summaries, mixed;
  for (std::size_t i = 0; i < traces.size(); ++i) {
    summaries.push_back(summarize(traces[i]));
    mixed.push_back(i % 2 == 0 ? summaries.back() : traces[i]);
  }
  const std::string expected = jobJson(traces);
  CHECK(jobJson(summaries) == expected);
  CHECK(jobJson(mixed) == expected);
}

}  // namespace

TEST_CASE("recorded DDP and FSDP jobs: the report from summaries equals the traces'", "[summary]") {
  for (const char* variant : {"ddp", "ddp_onebucket", "fsdp", "ddp_ch4", "ddp_onebucket_ch4"}) {
    INFO(variant);
    checkSummariesEqualTraces({(kData / (std::string(variant) + "_rank0.sqlite.gz")).string(),
                               (kData / (std::string(variant) + "_rank1.sqlite.gz")).string()});
  }
}

// Summaries of the 30-step DDP job's ranks, as `record --summary -- torchrun` wrote them on an
// nvidia-h200-x2 host (tests/data/headline/README.md), under the paths the traces had there. A
// summary holds its rank's report as the analyzer of its day made it, so when the analysis
// changes they are made again from the same traces at the same paths (the README says how). The
// job report from them equals the report from the traces, but for each rank's path.
TEST_CASE("summaries written by record --summary under torchrun equal the traces' report", "[summary]") {
  const fs::path dir = fs::path(CUOVERLAP_TEST_DATA) / "headline";
  const std::string rank0 = (dir / "ddp_rank0.sqlite.gz").string(), rank1 = (dir / "ddp_rank1.sqlite.gz").string();
  std::string from_summaries = jobJson({(dir / "ddp_rank0.cosum").string(), (dir / "ddp_rank1.cosum").string()});
  for (const auto& [recorded, here] : {std::pair{std::string("/tmp/b/ddp/rank0.sqlite"), rank0},
                                       std::pair{std::string("/tmp/b/ddp/rank1.sqlite"), rank1}}) {
    std::size_t at = 0, replaced = 0;
    while ((at = from_summaries.find(recorded, at)) != std::string::npos) {
      from_summaries.replace(at, recorded.size(), here);
      at += here.size();
      ++replaced;
    }
    CHECK(replaced > 0);
  }
  CHECK(from_summaries == jobJson({rank0, rank1}));
}

TEST_CASE("synthetic 64-rank job on 8 hosts: the report from summaries equals the traces'",
          "[summary]") {
  const std::vector<std::string> traces = testing::writeSyntheticJob("job64", 64);
  std::vector<std::unique_ptr<Trace>> kept;
  const Report report = analyzeFiles(traces, AnalysisOptions{}, false, kept, 2);
  // The job the equality is about: every rank, both communicators, the straggler found.
  REQUIRE(report.job);
  CHECK(report.job->ranks.size() == 64);
  CHECK(report.job->matched == 6 + 3);
  REQUIRE(report.job->findings.size() == 1);
  CHECK(report.job->findings[0].summary.find("rank 17 ") != std::string::npos);
  checkSummariesEqualTraces(traces);
}

TEST_CASE("a summary's size grows with its collectives, not its ops", "[summary]") {
  const std::string trace = (kData / "fsdp_rank0.sqlite.gz").string();
  const std::string bytes = summarizeTrace(trace, AnalysisOptions{});
  const std::string plain = testing::tempTracePath("fsdp_rank0_plain.sqlite");  // the size SQLite holds it in
  REQUIRE(cuoverlap_test::inflateTrace(trace, plain));
  CHECK(bytes.size() < fs::file_size(plain) / 10);
  CHECK(bytes.compare(0, 16, std::string("SQLite format 3\0", 16)) == 0);
}

TEST_CASE("a finding's fixes keep the streams they act on through a summary", "[summary]") {
  TraceReport report;
  Finding finding;
  finding.id = "single-stream";
  finding.fixes = {{"multi-stream", 500'000, 7u}, {"multi-stream", 300'000, 13u}, {"own-streams", 100'000}};
  report.findings.push_back(finding);
  const std::string encoded = summary::encodeReport(report);
  const TraceReport back = summary::decodeReport(encoded);
  REQUIRE(back.findings.size() == 1);
  const std::vector<FixSaving>& fixes = back.findings[0].fixes;
  REQUIRE(fixes.size() == 3);
  CHECK(fixes[0].stream == std::optional<std::uint32_t>(7));
  CHECK(fixes[1].stream == std::optional<std::uint32_t>(13));
  CHECK(fixes[1].saving_ns == 300'000);
  CHECK_FALSE(fixes[2].stream.has_value());
  // A summary written before fixes named their stream reads back with none.
  std::string old = encoded;
  for (const std::string field : {R"(,"stream":7)", R"(,"stream":13)", R"(,"stream":null)"}) {
    const auto at = old.find(field);
    REQUIRE(at != std::string::npos);
    old.erase(at, field.size());
  }
  const TraceReport old_back = summary::decodeReport(old);
  REQUIRE(old_back.findings[0].fixes.size() == 3);
  CHECK_FALSE(old_back.findings[0].fixes[0].stream.has_value());
  CHECK(old_back.findings[0].fixes[0].saving_ns == 500'000);
}
