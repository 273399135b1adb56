// Golden tests: each real Nsight Systems export in tests/data/nsys/ -> the JSON report in
// tests/data/golden/<name>.json, compared exactly. Regenerate after an intended change with
//   UPDATE_GOLDEN=1 ctest --test-dir <build> -R analyzer_golden
// and review the diff by hand before committing it.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "cuoverlap/analysis.h"
#include "cuoverlap/json_report.h"
#include "cuoverlap/reader.h"
#include "../trace_files.h"

namespace fs = std::filesystem;
using namespace cuoverlap;

namespace {

std::string readFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The report with the trace's path reduced to its file name, so goldens do not depend on where
// the traces live.
std::string reportJson(const fs::path& trace_path) {
  Trace trace = readTrace(trace_path.string());
  trace.path = trace_path.filename().string();
  Report report;
  report.traces.push_back(analyzeTrace(trace, AnalysisOptions{}));
  return renderJsonString(report);
}

}  // namespace

TEST_CASE("golden JSON reports of the real Nsight Systems exports", "[golden]") {
  fs::path traces(CUOVERLAP_SHARED_TRACES);
  fs::path goldens = fs::path(CUOVERLAP_TEST_DATA) / "golden";
  REQUIRE(fs::is_directory(traces));
  bool update = std::getenv("UPDATE_GOLDEN") != nullptr && std::string(std::getenv("UPDATE_GOLDEN")) == "1";
  int compared = 0;
  for (const fs::directory_entry& entry : fs::directory_iterator(traces)) {
    if (!cuoverlap_test::isTraceFile(entry.path())) continue;
    fs::path golden = goldens / (cuoverlap_test::traceName(entry.path()) + ".json");
    std::string actual = reportJson(entry.path());
    if (update) {
      std::ofstream(golden, std::ios::binary | std::ios::trunc) << actual;
      WARN("updated " << golden.string());
    }
    INFO("golden file " << golden.string() << " (UPDATE_GOLDEN=1 regenerates it)");
    REQUIRE(fs::exists(golden));
    REQUIRE(actual == readFile(golden));
    ++compared;
  }
  REQUIRE(compared >= 4);
}
