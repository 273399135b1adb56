// Bad input to the merge of rank summaries (docs/summaries.md, "Bad input"): a summary of another
// format version, a truncated one, two summaries of one rank, ranks of two jobs, a summary made
// with other options: one line naming the files, exit 2, no report.
#include <catch2/catch.hpp>
#include <sqlite3.h>

#include <filesystem>
#include <fstream>

#include "cli_test_support.h"
#include "synthetic_job.h"

using namespace cuoverlap::testing;
namespace fs = std::filesystem;

namespace {

// Summaries of a synthetic job's ranks (synthetic_job.h), through `cuoverlap summarize`.
std::vector<std::string> summarizeJob(const std::string& prefix, int ranks, int world_size = 0,
                                      long long time_shift_ns = 0) {
  std::vector<std::string> summaries;
  for (const std::string& trace : writeSyntheticJob(prefix, ranks, world_size, "node", time_shift_ns)) {
    const CliRun run = runCli("summarize -q " + trace);
    REQUIRE(run.exit_code == 0);
    summaries.push_back(fs::path(trace).replace_extension(".cosum").string());
    REQUIRE(fs::exists(summaries.back()));
  }
  return summaries;
}

std::string joined(const std::vector<std::string>& paths) {
  std::string out;
  for (const std::string& p : paths) out += " " + p;
  return out;
}

void execSql(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
  CHECK(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr) == SQLITE_OK);
  sqlite3_close(db);
}

void requireRefused(const std::string& arguments, const std::vector<std::string>& named,
                    const std::string& reason) {
  const CliRun run = runCli(arguments);
  INFO(run.err);
  CHECK(run.exit_code == 2);
  CHECK(run.out.empty());
  CHECK(countOf(run.err, "\n") == 1);
  CHECK(run.err.find(reason) != std::string::npos);
  for (const std::string& file : named) CHECK(run.err.find(file) != std::string::npos);
}

}  // namespace

TEST_CASE("summaries: another format version and a truncated file are refused by name", "[summary]") {
  const std::vector<std::string> job = summarizeJob("badver", 2);
  REQUIRE(runCli("analyze" + joined(job)).exit_code == 0);
  const std::string other = tempTracePath("other_version.cosum");
  fs::copy_file(job[1], other);
  execSql(other, "UPDATE summary_meta SET value = 'cuoverlap.summary/1' WHERE key = 'format'");  // older
  requireRefused("analyze " + job[0] + " " + other, {other}, "format 'cuoverlap.summary/1'");

  const std::string bytes = readFile(job[1]);
  for (const std::size_t keep : {bytes.size() / 2, bytes.size() - 4096, std::size_t{100}}) {
    const std::string truncated = tempTracePath("truncated.cosum");
    std::ofstream(truncated, std::ios::binary) << bytes.substr(0, keep);
    INFO("kept " << keep << " of " << bytes.size() << " bytes");
    requireRefused("analyze " + job[0] + " " + truncated, {truncated}, "");
  }
}

TEST_CASE("summaries: two of one rank, and ranks of two jobs, are refused by name", "[summary]") {
  const std::vector<std::string> job = summarizeJob("one", 4);
  const std::string again = tempTracePath("one_rank2_again.cosum");
  fs::copy_file(job[2], again);
  requireRefused("analyze" + joined(job) + " " + again, {job[2], again}, "hold the same rank");

  // Rank 3 of a job of 8 given with ranks 0-2 of a job of 4.
  const std::vector<std::string> bigger = summarizeJob("bigger", 4, 8);
  requireRefused("gate --max-rank-skew 1s " + job[0] + " " + job[1] + " " + job[2] + " " + bigger[3], {bigger[3]},
                 "ranks of two jobs");

  // The same job run again an hour later on the same hosts: ranks 2-3 of the later run.
  const std::vector<std::string> later = summarizeJob("later", 4, 0, 3'600'000'000'000LL);
  requireRefused("analyze " + job[0] + " " + job[1] + " " + later[2] + " " + later[3],
                 {later[2]}, "at different times");
}

TEST_CASE("summaries: made with other options than the analysis is given", "[summary]") {
  const std::vector<std::string> traces = writeSyntheticJob("opts", 2);
  const std::string summary = tempTracePath("opts_rank0.cosum");
  REQUIRE(runCli("summarize -q --gap-threshold 50us " + traces[0] + " -o " + summary).exit_code == 0);
  requireRefused("analyze " + summary + " " + traces[1], {summary}, "other options");
  CHECK(runCli("analyze --gap-threshold 50us " + summary + " " + traces[1]).exit_code == 0);
  requireRefused("summarize " + traces[0] + " " + traces[1] + " -o " + summary, {}, "-o names one");
}
