// `cuoverlap record` on managed_memory_app: the faulting run's trace holds GPU page-fault groups
// and HtoD migrations in the nsys tables, and `cuoverlap analyze --format json` reports
// managed-page-faults on it and not on the prefetched run. Exits 77 when no GPU with concurrent
// managed access is usable.
#define CATCH_CONFIG_RUNNER
#include <stdlib.h>
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>

#include "trace_file.h"

namespace {

std::string g_dir;

int run(const std::string& command) {
  const int rc = std::system(command.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : 1000;
}

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// Records MODE into DIR/MODE.sqlite and analyzes it as JSON into DIR/MODE.json.
std::string recordAndAnalyze(const std::string& mode) {
  const std::string trace = g_dir + "/" + mode + ".sqlite";
  REQUIRE(run(std::string(CUOVERLAP_CLI) + " record -o " + trace + " -- " + CUOVERLAP_MANAGED_APP +
              " " + mode + " > " + trace + ".log 2>&1") == 0);
  REQUIRE(run(std::string(CUOVERLAP_CLI) + " analyze --format json -o " + g_dir + "/" + mode +
              ".json " + trace) == 0);
  return trace;
}

}  // namespace

TEST_CASE("managed memory faulted in on demand: page faults, migrations, managed-page-faults") {
  const std::string trace = recordAndAnalyze("fault");
  TraceFile db(trace);
  REQUIRE(db.isOpen());
  INFO(readFile(trace + ".log"));
  CHECK(db.integer("SELECT count(*) FROM CUDA_UM_GPU_PAGE_FAULT_EVENTS") > 0);
  CHECK(db.integer("SELECT sum(numberOfPageFaults) FROM CUDA_UM_GPU_PAGE_FAULT_EVENTS") > 0);
  // The 64 MiB the kernel touched came over as unified-memory HtoD migrations.
  CHECK(db.integer("SELECT sum(bytes) FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE copyKind = 11") >=
        (64 << 20));
  CHECK(db.integer("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL") == 3);
  const std::string json = readFile(g_dir + "/fault.json");
  CHECK(json.find("\"managed-page-faults\"") != std::string::npos);
  CHECK(json.find("\"unified_memory\"") != std::string::npos);
}

TEST_CASE("managed memory prefetched: migrations but no managed-page-faults") {
  const std::string trace = recordAndAnalyze("prefetch");
  TraceFile db(trace);
  REQUIRE(db.isOpen());
  INFO(readFile(trace + ".log"));
  // The prefetch moves the buffer (cause 1: user prefetch) before the first run.
  CHECK(db.integer("SELECT sum(bytes) FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE copyKind = 11") >=
        (64 << 20));
  const std::string json = readFile(g_dir + "/prefetch.json");
  CHECK(json.find("\"managed-page-faults\"") == std::string::npos);
}

int main(int argc, char** argv) {
  if (run(std::string(CUOVERLAP_MANAGED_APP) + " probe") != 0) {
    std::puts("no GPU with concurrent managed access: managed-memory GPU tests skipped");
    return 77;
  }
  char dir[] = "/tmp/cuoverlap_managed_test_XXXXXX";
  g_dir = mkdtemp(dir);
  return Catch::Session().run(argc, argv);
}
