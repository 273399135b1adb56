// host-busy's fix alone on hand-built traces: host work right after a synchronize begins the next
// iteration and can run a step ahead, beside the GPU's work, unless that synchronize brought a
// result back (a DtoH copy since the thread's previous wait) and the work goes on to launch
// kernels rather than copy a next input in: then it is the step's tail that uses the result.
#include <catch2/catch.hpp>

#include "findings_test_util.h"
#include "trace_builder.h"

namespace cuoverlap {
namespace {

using test::TraceBuilder;
using test::kUs;

// Three iterations of: a 200 µs kernel, (a small DtoH copy of its result,) a synchronize, 100 µs
// of host work while the device idles, a 30 µs kernel.
TraceBuilder stepWithTail(bool copy_result) {
  TraceBuilder b;
  for (int i = 0; i < 3; ++i) {
    const double t = 350.0 * i;
    b.launch(13, t + 1, t + 3, t + 5, t + 205);
    if (copy_result) {
      b.copyCall("cudaMemcpyAsync_v3020", 13, t + 4, t + 6, t + 205, t + 210, CopyKind::kDtoH);
    }
    b.call("cudaStreamSynchronize_v3020", t + 7, t + 211);
    b.launch(13, t + 311, t + 313, t + 315, t + 345);
  }
  return b;
}

}  // namespace

TEST_CASE("host-busy: work after a wait that brought a result back stays after it") {
  SECTION("no result copied: the work runs a step ahead, beside the long kernel") {
    const auto findings = test::findingsOf(stepWithTail(false).build());
    const Finding* f = test::findingById(findings, "host-busy");
    REQUIRE(f != nullptr);
    CHECK(fixSavingNs(*f) > 150 * kUs);
  }
  SECTION("a result copied back: the work reads it, no overlap to gain") {
    const auto findings = test::findingsOf(stepWithTail(true).build());
    const Finding* f = test::findingById(findings, "host-busy");
    REQUIRE(f != nullptr);
    CHECK(fixSavingNs(*f) == 0);
  }
}

}  // namespace cuoverlap
