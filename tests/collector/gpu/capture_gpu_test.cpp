// `cuoverlap record --capture` on capture_app: only the chosen steps' GPU work is in the trace
// (each step's kernel has as many blocks as its step number), the session holds the window, and a
// window that never opens leaves a trace that says so. Exits 77 when no GPU is usable.
#define CATCH_CONFIG_RUNNER
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "trace_file.h"

namespace {

std::string g_dir;

struct Recorded {
  int exit_code = -1;
  std::string path, log;
};

Recorded record(const std::string& name, const std::vector<std::string>& options,
                const std::vector<std::string>& app_args) {
  Recorded run;
  run.path = g_dir + "/" + name + ".sqlite";
  std::string command = std::string(CUOVERLAP_CLI) + " record -o " + run.path;
  for (const std::string& option : options) command += " " + option;
  command += std::string(" -- ") + CUOVERLAP_CAPTURE_APP;
  for (const std::string& arg : app_args) command += " " + arg;
  const std::string log = run.path + ".log";
  const int status = std::system((command + " > " + log + " 2>&1").c_str());
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream in(log);
  run.log.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return run;
}

std::string expectedGrids(int first, int last) {
  std::string grids;
  for (int step = first; step <= last; ++step) grids += (grids.empty() ? "" : ",") + std::to_string(step);
  return grids;
}

const char* kGrids = "SELECT group_concat(gridX, ',') FROM (SELECT gridX FROM CUPTI_ACTIVITY_KIND_KERNEL ORDER BY start)";
const char* kStepRanges =
    "SELECT count(*) FROM NVTX_EVENTS WHERE text = 'step' AND eventType = 59";

}  // namespace

TEST_CASE("--capture nvtx:step@50-60: exactly steps 50..60, their NVTX ranges, the window in the session") {
  const Recorded run = record("nvtx_50_60", {"--capture", "nvtx:step@50-60"}, {"steps", "70"});
  INFO(run.log);
  REQUIRE(run.exit_code == 0);
  TraceFile trace(run.path);
  REQUIRE(trace.isOpen());
  CHECK(trace.text(kGrids) == expectedGrids(50, 60));
  CHECK(trace.integer(kStepRanges) == 11);
  // Each kept range holds its own kernel: the first starts before step 50's kernel.
  CHECK(trace.integer("SELECT min(start) FROM NVTX_EVENTS WHERE text = 'step'") <
        trace.integer("SELECT min(start) FROM CUPTI_ACTIVITY_KIND_KERNEL"));
  CHECK(trace.session("capture") == "nvtx:step@50-60");
  CHECK(trace.session("capture_opened") == "1");
  CHECK(trace.session("capture_instances") == "70");
  CHECK(trace.session("complete") == "1");
  CHECK(run.log.find("capture window: nvtx:step@50-60, open") != std::string::npos);
  // The launches of the window only (lean API tracing, toggled with the window).
  CHECK(trace.integer("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id = r.nameId "
                      "WHERE s.value LIKE 'cudaLaunchKernel%'") == 11);
}

TEST_CASE("--capture nvtx:step@7: one instance") {
  const Recorded run = record("nvtx_7", {"--capture", "nvtx:step@7"}, {"steps", "12"});
  INFO(run.log);
  REQUIRE(run.exit_code == 0);
  TraceFile trace(run.path);
  CHECK(trace.text(kGrids) == "7");
  CHECK(trace.integer(kStepRanges) == 1);
}

TEST_CASE("--capture cudaProfilerApi: between cudaProfilerStart and cudaProfilerStop") {
  const Recorded run = record("profiler_api", {"--capture", "cudaProfilerApi"}, {"profiler", "20", "5", "9"});
  INFO(run.log);
  REQUIRE(run.exit_code == 0);
  TraceFile trace(run.path);
  CHECK(trace.text(kGrids) == expectedGrids(5, 9));
  CHECK(trace.session("capture") == "cudaProfilerApi");
  CHECK(trace.session("capture_opened") == "1");
  CHECK(trace.session("capture_windows") == "1");
}

TEST_CASE("a window that never opens: a trace that says so, no GPU activity, analyze says so") {
  const Recorded run = record("never", {"--capture", "nvtx:step@100-110"}, {"steps", "12"});
  INFO(run.log);
  REQUIRE(run.exit_code == 0);
  TraceFile trace(run.path);
  REQUIRE(trace.isOpen());
  CHECK(trace.integer("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL") == 0);
  CHECK(trace.session("capture_opened") == "0");
  CHECK(trace.session("capture_instances") == "12");
  CHECK(run.log.find("never opened (the program ran 12 instance(s) of that range)") != std::string::npos);
  const std::string report = g_dir + "/never.txt";
  REQUIRE(std::system((std::string(CUOVERLAP_CLI) + " analyze " + run.path + " > " + report + " 2>&1").c_str()) == 0);
  std::ifstream in(report);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(text.find("trace is a capture window that never opened: nvtx:step@100-110") != std::string::npos);
}

TEST_CASE("--delay alone: nothing before the delay") {
  // 12 steps take well under 5 s: nothing is recorded, and the trace says the window never opened.
  const Recorded run = record("delay", {"--delay", "5"}, {"steps", "12"});
  INFO(run.log);
  REQUIRE(run.exit_code == 0);
  TraceFile trace(run.path);
  CHECK(trace.integer("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL") == 0);
  CHECK(trace.session("capture") == "delay 5 s");
  CHECK(trace.session("capture_opened") == "0");
}

int main(int argc, char** argv) {
  const int probe = std::system((std::string(CUOVERLAP_CAPTURE_APP) + " steps 1 > /dev/null 2>&1").c_str());
  if (!WIFEXITED(probe) || WEXITSTATUS(probe) != 0) {
    std::printf("SKIP: no usable GPU (capture_app exit %d)\n", WIFEXITED(probe) ? WEXITSTATUS(probe) : -1);
    return 77;
  }
  char dir[] = "/tmp/cuoverlap_capture_gpu_XXXXXX";
  g_dir = mkdtemp(dir);
  return Catch::Session().run(argc, argv);
}
