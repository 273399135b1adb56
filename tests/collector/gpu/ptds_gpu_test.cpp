// `cuoverlap record` on ptds_streams_app, then the analyzer's reader: the stream of the app's 2
// kernels was created (cudaStreamCreate), that of its 3 kernels is the per-thread default stream;
// CUPTI flags both 1. Exits 77 when no GPU is usable.
#define CATCH_CONFIG_RUNNER
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <map>
#include <string>

#include "cuoverlap/model.h"
#include "cuoverlap/reader.h"

namespace {
std::string g_dir;
}  // namespace

TEST_CASE("the analyzer tells a recorded per-thread default stream from a created one") {
  const std::string trace_path = g_dir + "/ptds.sqlite";
  const std::string command = std::string(CUOVERLAP_CLI) + " record -o " + trace_path + " -- " +
                              CUOVERLAP_PTDS_APP + " > " + trace_path + ".log 2>&1";
  const int rc = std::system(command.c_str());
  REQUIRE(WIFEXITED(rc));
  REQUIRE(WEXITSTATUS(rc) == 0);
  const cuoverlap::Trace trace = cuoverlap::readTrace(trace_path);
  std::map<std::uint32_t, int> kernels;  // stream id -> kernels
  for (const cuoverlap::GpuOp& op : trace.ops) {
    if (op.kind == cuoverlap::OpKind::kKernel) ++kernels[op.stream_id];
  }
  REQUIRE(kernels.size() == 2);
  int per_thread = 0, created = 0;
  for (const auto& [id, count] : kernels) {
    const cuoverlap::Stream* stream = nullptr;
    for (const cuoverlap::Stream& s : trace.streams) {
      if (s.stream_id == id) stream = &s;
    }
    REQUIRE(stream != nullptr);
    CHECK(stream->flag == cuoverlap::StreamFlag::kDefault);
    if (count == 3) {
      CHECK(stream->origin == cuoverlap::StreamOrigin::kPerThread);
      ++per_thread;
    } else {
      CHECK(count == 2);
      CHECK(stream->origin == cuoverlap::StreamOrigin::kCreated);
      ++created;
    }
  }
  CHECK(per_thread == 1);
  CHECK(created == 1);
  // The legacy stream, if it has a record, is the context's own.
  for (const cuoverlap::Stream& s : trace.streams) {
    if (s.flag == cuoverlap::StreamFlag::kNull) CHECK(s.origin == cuoverlap::StreamOrigin::kContext);
  }
}

int main(int argc, char** argv) {
  const std::string probe = std::string(CUOVERLAP_PTDS_APP) + " probe";
  const int rc = std::system(probe.c_str());
  if (!WIFEXITED(rc) || WEXITSTATUS(rc) != 0) {
    std::puts("no usable GPU: per-thread stream GPU test skipped");
    return 77;
  }
  char dir[] = "/tmp/cuoverlap_ptds_test_XXXXXX";
  g_dir = mkdtemp(dir);
  return Catch::Session().run(argc, argv);
}
