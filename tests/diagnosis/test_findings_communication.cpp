// Communication findings: exposed-communication and communication-serialized on hand-built DDP-like
// steps (backward kernels on stream 13, all-reduces on an NCCL stream 14 that waits on stream 13).
#include <catch2/catch.hpp>

#include "findings_test_util.h"
#include "trace_builder.h"

namespace cuoverlap {
namespace {

using test::findingById;
using test::findingsOf;
using test::idsOf;
using test::TraceBuilder;

constexpr const char* kAllReduce = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)";

GpuOp& allReduce(TraceBuilder& b, double call_start, double start, double end) {
  GpuOp& op = b.launch(14, call_start, call_start + 2, start, end);
  op.name = b.intern(kAllReduce);
  return op;
}

// Backward: 10 kernels of 100 µs back to back from 0 on stream 13, launched well ahead.
void backward(TraceBuilder& b) {
  for (int i = 0; i < 10; ++i) b.launch(13, i, i + 0.5, 100.0 * i + 1, 100.0 * (i + 1));
}

TEST_CASE("overlapped all-reduces (buckets during backward) fire no communication finding") {
  TraceBuilder b;
  backward(b);
  // Bucket all-reduces issued early, each running under later backward kernels.
  allReduce(b, 20, 300, 380);
  allReduce(b, 21, 600, 680);
  allReduce(b, 22, 900, 990);
  const auto ids = idsOf(findingsOf(b.build()));
  CHECK(ids.count("exposed-communication") == 0);
  CHECK(ids.count("communication-serialized") == 0);
}

TEST_CASE("one all-reduce after backward, released by the last kernel, is exposed and serialized") {
  TraceBuilder b;
  backward(b);
  // One bucket: issued at 30 µs, waited on the last backward kernel (ends at 1000), ran alone.
  allReduce(b, 30, 1002, 1402);
  b.launch(13, 31, 32, 1405, 1450);  // optimizer, after the all-reduce
  const auto findings = findingsOf(b.build());
  const Finding* exposed = findingById(findings, "exposed-communication");
  REQUIRE(exposed != nullptr);
  CHECK(exposed->time_ns == 400'000);  // [1002, 1402) with no compute beside it
  CHECK(exposed->count == 1);
  CHECK(exposed->evidence.at(0).detail.find("AllReduce f32") != std::string::npos);
  CHECK(exposed->severity == Severity::kError);  // 400 of a 1449 µs span: >= 25%
  CHECK(exposed->summary.find("at most") != std::string::npos);  // nothing measured the slowdown
  const Finding* serialized = findingById(findings, "communication-serialized");
  REQUIRE(serialized != nullptr);
  // The same stretch is exposed-communication's: the cost ledger charges each nanosecond once
  // (docs/findings.md, "The cost ledger"), so the part due to issue order costs nothing extra.
  CHECK(serialized->time_ns == 0);
  CHECK(serialized->evidence.at(0).detail.find("AllReduce f32 waited for kernel k on stream 13; then 400.0 µs ran alone") != std::string::npos);
}

TEST_CASE("exposed-communication's advice fits the collective: buckets only for all-reduces") {
  // Issue 21: an exposed all-to-all was advised DDP's bucket_cap_mb. NCCL runs all-to-all (and
  // pipeline parallelism's sends) as SendRecv kernels; FSDP's collectives are all-gathers and
  // reduce-scatters.
  const std::pair<const char*, const char*> cases[] = {
      {kAllReduce, "bucket_cap_mb"},
      {"ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)", "All-to-all and send/receive"},
      {"ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "forward_prefetch"}};
  for (const auto& [kernel, advice] : cases) {
    INFO(kernel);
    TraceBuilder b;
    backward(b);
    allReduce(b, 30, 1002, 1402).name = b.intern(kernel);
    b.launch(13, 31, 32, 1405, 1450);
    const auto findings = findingsOf(b.build());
    const Finding* exposed = findingById(findings, "exposed-communication");
    REQUIRE(exposed != nullptr);
    CHECK(exposed->advice.find(advice) != std::string::npos);
    if (std::string(advice) != "bucket_cap_mb") CHECK(exposed->advice.find("bucket_cap_mb") == std::string::npos);
    CHECK(exposed->advice.find("separate high-priority stream") != std::string::npos);  // any collective
  }
}

TEST_CASE("an all-reduce queued behind compute on the same stream is serialized") {
  TraceBuilder b;
  backward(b);
  GpuOp& op = b.launch(13, 40, 42, 1000, 1300);  // issued at 40 µs on the compute stream itself
  op.name = b.intern(kAllReduce);
  const auto findings = findingsOf(b.build());
  const Finding* serialized = findingById(findings, "communication-serialized");
  REQUIRE(serialized != nullptr);
  CHECK(serialized->time_ns == 0);  // charged once, to exposed-communication (the ledger)
  CHECK(serialized->evidence.at(0).detail.find("was queued behind kernel k on stream 13 (its own)") != std::string::npos);
}

TEST_CASE("exposed communication below 5% of the span does not fire") {
  TraceBuilder b;
  backward(b);
  allReduce(b, 30, 1001, 1040);  // 39 µs exposed of a 1039 µs span: 3.8%
  CHECK(idsOf(findingsOf(b.build())).count("exposed-communication") == 0);
}

TEST_CASE("exposed stretches of collectives on two communicators count once") {
  TraceBuilder b;
  b.launch(13, 0, 1, 1, 100);
  allReduce(b, 2, 100, 300);
  GpuOp& other = b.launch(15, 3, 4, 150, 350);  // a second communicator's stream
  other.name = b.intern("ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)");
  const std::vector<Finding> findings = findingsOf(b.build());
  const Finding* exposed = findingById(findings, "exposed-communication");
  REQUIRE(exposed != nullptr);
  // [100, 350) is exposed (250 µs, not 200 + 200), but hiding it could shrink the 349 µs span by
  // at most span - ideal = 349 - 250 (the collectives' own union): the ledger's cap.
  CHECK(exposed->time_ns == 99'000);
  CHECK(exposed->count == 2);
}

TEST_CASE("exposed-communication's cost counts how much overlap slowed compute in the trace") {
  TraceBuilder b;
  b.launch(13, 0, 1, 1, 101);      // kernel k alone: 100 µs
  b.launch(13, 1, 2, 101, 201);    // and again
  allReduce(b, 3, 201, 501);       // 300 µs all-reduce
  b.launch(13, 5, 6, 201, 351);    // k beside it: 150 µs, 50 µs longer than alone
  const std::vector<Finding> findings = findingsOf(b.build());
  const Finding* exposed = findingById(findings, "exposed-communication");
  REQUIRE(exposed != nullptr);
  // Exposed [351, 501) = 150 µs; overlap gained 1 - 50/150 = 2/3 of its length: about 100 µs.
  CHECK(exposed->time_ns == Approx(100'000).margin(1));
  CHECK(exposed->summary.find("save about") != std::string::npos);
}

}  // namespace
}  // namespace cuoverlap
