// Golden tests for the Kineto importer: each real torch.profiler trace in tests/data/kineto/ ->
// the JSON report in tests/data/golden/kineto_<name>.json, compared exactly (the whole analysis,
// gaps and findings included, on a trace read by the Kineto importer). Regenerate after an
// intended change with
//   UPDATE_GOLDEN=1 ctest --test-dir <build> -R kineto_golden
// and review the diff by hand before committing it.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "cuoverlap/analysis.h"
#include "cuoverlap/json_report.h"
#include "cuoverlap/reader.h"

namespace fs = std::filesystem;
using namespace cuoverlap;

TEST_CASE("golden JSON reports of the real Kineto traces", "[kineto][golden]") {
  const fs::path traces = fs::path(CUOVERLAP_TEST_DATA) / "kineto";
  const fs::path goldens = fs::path(CUOVERLAP_TEST_DATA) / "golden";
  const char* env = std::getenv("UPDATE_GOLDEN");
  const bool update = env != nullptr && std::string(env) == "1";
  int compared = 0;
  for (const fs::directory_entry& entry : fs::directory_iterator(traces)) {
    const std::string file = entry.path().filename().string();
    const std::string suffix = ".kineto.json.gz";
    if (file.size() <= suffix.size() || file.compare(file.size() - suffix.size(), suffix.size(), suffix) != 0) continue;
    Trace trace = readTrace(entry.path().string());
    trace.path = file;
    Report report;
    report.traces.push_back(analyzeTrace(trace, AnalysisOptions{}));
    const std::string actual = renderJsonString(report);
    const fs::path golden = goldens / ("kineto_" + file.substr(0, file.size() - suffix.size()) + ".json");
    if (update) {
      std::ofstream(golden, std::ios::binary | std::ios::trunc) << actual;
      WARN("updated " << golden.string());
    }
    INFO("golden file " << golden.string() << " (UPDATE_GOLDEN=1 regenerates it)");
    REQUIRE(fs::exists(golden));
    std::ifstream in(golden, std::ios::binary);
    const std::string expected{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    REQUIRE(actual == expected);
    ++compared;
  }
  REQUIRE(compared == 3);
}
