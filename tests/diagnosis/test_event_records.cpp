// event-wait-serialization on traces with CUDA event records: the op a wait waited for comes from
// the cudaEventRecord of the waited event, not from which op happened to end when the wait released.
#include <catch2/catch.hpp>

#include "findings_test_util.h"
#include "trace_builder.h"

namespace cuoverlap {
namespace {

using test::findingById;
using test::findingsOf;
using test::idsOf;
using test::TraceBuilder;

constexpr std::uint64_t kEvent = 1;

// Stream 13 copies a kernel's input in and records the event; stream 15 waits for it and runs
// the kernel. A copy-out on stream 14, unrelated to both, ends exactly when the kernel starts.
TraceBuilder inputCopyThenKernel() {
  TraceBuilder b;
  b.copyCall("cudaMemcpyAsync_v3020", 13, 1, 2, 5, 290, CopyKind::kHtoD);
  b.eventRecord(13, kEvent, 3, 4);
  b.copyCall("cudaMemcpyAsync_v3020", 14, 5, 6, 8, 300, CopyKind::kDtoH);
  b.streamWaitEvent(15, 7, 8, kEvent);
  b.launch(15, 9, 10, 300, 400);
  return b;
}

TEST_CASE("event-wait-serialization with event records: a kernel waiting for its recorded input "
          "copy is not blamed on the op that ended when it started") {
  TraceBuilder b = inputCopyThenKernel();
  CHECK(idsOf(findingsOf(b.build())).count("event-wait-serialization") == 0);
}

TEST_CASE("event-wait-serialization without event records falls back to timestamps") {
  // The same trace minus the records: the copy-out that ended at the kernel's start is blamed.
  TraceBuilder b = inputCopyThenKernel();
  b.trace().event_records.clear();
  const auto findings = findingsOf(b.build());
  const Finding* f = findingById(findings, "event-wait-serialization");
  REQUIRE(f != nullptr);
  CHECK(f->evidence.at(0).detail.find("memcpy DtoH") != std::string::npos);
}

// Stream 13 runs a kernel and records the event after it; stream 14 waits and copies the next
// input in. An HtoD copy on stream 15 ends just before, which timestamps take as the release.
TraceBuilder kernelThenCopyIn() {
  TraceBuilder b;
  b.launch(13, 1, 2, 5, 300).name = b.intern("producer_kernel");
  b.eventRecord(13, kEvent, 3, 4);
  b.copyCall("cudaMemcpyAsync_v3020", 15, 5, 6, 200, 301, CopyKind::kHtoD);
  b.streamWaitEvent(14, 7, 8, kEvent);
  b.copyCall("cudaMemcpyAsync_v3020", 14, 9, 10, 302, 400, CopyKind::kHtoD);
  return b;
}

TEST_CASE("event-wait-serialization with event records: a copy-in waiting for a recorded kernel "
          "fires and names the kernel") {
  TraceBuilder b = kernelThenCopyIn();
  const auto findings = findingsOf(b.build());
  const Finding* f = findingById(findings, "event-wait-serialization");
  REQUIRE(f != nullptr);
  CHECK(f->count == 1);
  // Held back from 10 µs (launch returned) to 302 µs; without the wait the copy would have run
  // beside the kernel: the span shrinks by the copy's 98 µs (the what-if schedule).
  CHECK(f->time_ns == 98'000);
  REQUIRE(f->evidence.size() == 1);
  CHECK(f->evidence[0].stream_id == 14);
  CHECK(f->evidence[0].detail.find("kernel producer_kernel on stream 13") != std::string::npos);
  // Timestamps alone would take the HtoD copy on stream 15 as the release: no finding.
  b.trace().event_records.clear();
  CHECK(idsOf(findingsOf(b.build())).count("event-wait-serialization") == 0);
}

TEST_CASE("event-wait-serialization with event records skips a wait whose event was not recorded "
          "before it") {
  TraceBuilder b;
  b.launch(13, 1, 2, 5, 300);
  b.streamWaitEvent(14, 3, 4, kEvent);
  b.eventRecord(13, kEvent, 5, 6);  // after the wait: it cannot be what the wait waited for
  b.copyCall("cudaMemcpyAsync_v3020", 14, 7, 8, 302, 400, CopyKind::kHtoD);
  CHECK(idsOf(findingsOf(b.build())).count("event-wait-serialization") == 0);
}

TEST_CASE("event-wait-serialization: a synchronous copy held by a wait blocked its call for it, and "
          "without the wait starts when its call began") {
  // cudaMemcpy of stream 14 called at 9 µs waits (event) for the kernel of stream 13 until 300 µs,
  // then copies for 100 µs: its call blocked from 9 to 401 µs. Without the wait the copy runs
  // beside the kernel from 9 µs: the span shrinks by the copy's 100 µs.
  TraceBuilder b;
  b.launch(13, 1, 2, 5, 300);
  b.eventRecord(13, kEvent, 3, 4);
  b.streamWaitEvent(14, 7, 8, kEvent);
  b.copyCall("cudaMemcpy_v3020", 14, 9, 401, 300, 400, CopyKind::kHtoD);
  const auto findings = findingsOf(b.build());
  const Finding* f = findingById(findings, "event-wait-serialization");
  REQUIRE(f != nullptr);
  CHECK(f->time_ns >= 95'000);
  CHECK(f->time_ns <= 100'000);
}

}  // namespace
}  // namespace cuoverlap
