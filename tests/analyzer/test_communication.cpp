// Communication metrics (communication.h, docs/metrics.md "Communication") checked against an
// independent computation: the same intervals through the list functions unionOf/intersectionOf
// instead of the streaming accumulators, on hand-built and on random traces written in our schema
// and read back through the reader. And the collective names NCCL gives its kernels.
#include <catch2/catch.hpp>

#include <random>

#include "cuoverlap/analysis.h"
#include "cuoverlap/communication.h"
#include "cuoverlap/intervals.h"
#include "cuoverlap/reader.h"
#include "synthetic_trace.h"

using namespace cuoverlap;
using cuoverlap::testing::SyntheticOp;
using cuoverlap::testing::SyntheticTrace;

namespace {

constexpr const char* kAllReduce = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)";
constexpr const char* kOldAllGather = "ncclKernel_AllGather_RING_LL_Sum_int8_t(ncclWorkElem)";

SyntheticOp kernel(Ns start, Ns end, const std::string& name, std::uint32_t stream) {
  SyntheticOp op{OpKind::kKernel, start, end};
  op.name = name;
  op.stream = stream;
  return op;
}

DeviceMetrics metricsOf(const std::string& file, const std::vector<SyntheticOp>& ops) {
  const std::string path = cuoverlap::testing::tempTracePath(file);
  {
    SyntheticTrace trace(path);
    for (const SyntheticOp& op : ops) trace.addOp(op);
  }
  const Trace trace = readTrace(path);
  const TraceReport report = analyzeTrace(trace, AnalysisOptions{});
  REQUIRE(report.devices.size() == 1);
  return report.devices[0].metrics;
}

// The definition, computed from lists: communication kernels are those whose name starts "nccl"
// after an optional "void ".
CommunicationMetrics expectedOf(const std::vector<SyntheticOp>& ops) {
  std::vector<Interval> comm;
  std::vector<Interval> compute;
  CommunicationMetrics expected;
  for (const SyntheticOp& op : ops) {
    if (op.kind != OpKind::kKernel) continue;
    const std::string bare = op.name.rfind("void ", 0) == 0 ? op.name.substr(5) : op.name;
    const bool is_comm = bare.rfind("nccl", 0) == 0;
    (is_comm ? comm : compute).push_back({op.start, op.end});
    if (is_comm) ++expected.kernels;
  }
  const std::vector<Interval> comm_union = unionOf(comm);
  expected.busy_ns = totalLength(comm_union);
  expected.hidden_ns = totalLength(intersectionOf(comm_union, unionOf(compute)));
  expected.exposed_ns = expected.busy_ns - expected.hidden_ns;
  expected.hidden_fraction =
      expected.busy_ns > 0 ? static_cast<double>(expected.hidden_ns) / expected.busy_ns : 0.0;
  return expected;
}

void checkEqual(const CommunicationMetrics& actual, const CommunicationMetrics& expected) {
  CHECK(actual.kernels == expected.kernels);
  CHECK(actual.busy_ns == expected.busy_ns);
  CHECK(actual.hidden_ns == expected.hidden_ns);
  CHECK(actual.exposed_ns == expected.exposed_ns);
  CHECK(actual.hidden_fraction == Approx(expected.hidden_fraction));
}

Ns engineBusy(const DeviceMetrics& m, Engine engine) {
  return m.engines.at(static_cast<std::size_t>(engine)).busy_ns;
}

}  // namespace

TEST_CASE("all-reduce half under backward kernels: hidden, exposed and engines", "[communication]") {
  // Backward kernels on stream 13 [1000, 5000) with a hole [2500, 3000); all-reduces on stream 20
  // [2000, 4000) and [4500, 7000); a copy under the second all-reduce only.
  std::vector<SyntheticOp> ops = {
      kernel(1000, 2500, "backward_gemm", 13), kernel(3000, 5000, "backward_gemm", 13),
      kernel(2000, 4000, kAllReduce, 20),      kernel(4500, 7000, kOldAllGather, 20)};
  SyntheticOp copy{OpKind::kMemcpy, 6000, 6500};
  copy.copy_kind = CopyKind::kDtoH;
  ops.push_back(copy);
  const DeviceMetrics m = metricsOf("comm_backward.sqlite", ops);
  // comm union [2000, 4000) + [4500, 7000) = 4500; under compute: [2000, 2500) + [3000, 4000) +
  // [4500, 5000) = 2000.
  CHECK(m.communication.kernels == 2);
  CHECK(m.communication.busy_ns == 4500);
  CHECK(m.communication.hidden_ns == 2000);
  CHECK(m.communication.exposed_ns == 2500);
  CHECK(m.communication.hidden_fraction == Approx(2000.0 / 4500.0));
  checkEqual(m.communication, expectedOf(ops));
  CHECK(m.kernels == 4);  // the kernel count keeps counting every kernel
  CHECK(engineBusy(m, Engine::kCompute) == 3500);
  CHECK(engineBusy(m, Engine::kComm) == 4500);
  CHECK(m.ideal_ns == 4500);  // comm is the busiest engine
  // copy_hidden_fraction still counts all kernels: the copy lies under the all-gather.
  CHECK(m.copy_hidden_fraction == Approx(1.0));
}

TEST_CASE("no communication kernels: communication is zero and compute is every kernel",
          "[communication]") {
  const std::vector<SyntheticOp> ops = {kernel(1000, 2000, "gemm", 13),
                                        kernel(1500, 3000, "void nccl_like_but_user<float>", 14),
                                        kernel(2500, 3500, "relu", 14)};
  const DeviceMetrics m = metricsOf("comm_none.sqlite", ops);
  // "void nccl_like_but_user<float>" starts with "nccl" after "void ": the rule counts it.
  CHECK(m.communication.kernels == 1);
  checkEqual(m.communication, expectedOf(ops));
  const DeviceMetrics plain = metricsOf("comm_plain.sqlite", {kernel(1000, 2000, "gemm", 13)});
  CHECK(plain.communication.kernels == 0);
  CHECK(plain.communication.busy_ns == 0);
  CHECK(plain.communication.hidden_fraction == 0.0);
  CHECK(engineBusy(plain, Engine::kCompute) == 1000);
}

TEST_CASE("random traces: communication equals the list computation to the nanosecond",
          "[communication]") {
  std::mt19937_64 rng(12);
  for (int round = 0; round < 20; ++round) {
    std::vector<SyntheticOp> ops;
    std::uniform_int_distribution<Ns> start(1, 200'000);
    std::uniform_int_distribution<Ns> length(0, 20'000);
    std::uniform_int_distribution<int> which(0, 3);
    for (int i = 0; i < 60; ++i) {
      const Ns s = start(rng);
      const int w = which(rng);
      ops.push_back(kernel(s, s + length(rng), w == 0 ? kAllReduce : w == 1 ? kOldAllGather : "gemm",
                           w < 2 ? 20 : 13));
    }
    const DeviceMetrics m = metricsOf("comm_random_" + std::to_string(round) + ".sqlite", ops);
    checkEqual(m.communication, expectedOf(ops));
  }
}

TEST_CASE("collective names of NCCL kernels, new and old layouts", "[communication]") {
  CollectiveName a = parseCollectiveName("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)");
  CHECK(a.type == "AllReduce");
  CHECK(a.reduction == "Sum");
  CHECK(a.dtype == "f32");
  CHECK(a.algorithm == "RING");
  CHECK(a.protocol == "LL");
  CollectiveName b = parseCollectiveName("ncclKernel_AllGather_RING_LL128_Sum_int8_t(ncclWorkElem)");
  CHECK(b.type == "AllGather");
  CHECK(b.dtype == "int8_t");
  CHECK(b.protocol == "LL128");
  CollectiveName c = parseCollectiveName("ncclDevKernel_ReduceScatter_Sum_bf16_COLLNET_DIRECT_SIMPLE");
  CHECK(c.type == "ReduceScatter");
  CHECK(c.dtype == "bf16");
  CHECK(c.algorithm == "COLLNET_DIRECT");
  CHECK(c.protocol == "SIMPLE");
  CollectiveName d = parseCollectiveName("ncclDevKernel_Generic_1(ncclDevKernelArgsStorage<4096ul>)");
  CHECK(d.type == "Generic");
  CHECK(d.dtype.empty());
  CHECK(parseCollectiveName("gemm_kernel").type.empty());
  CHECK(describeCollective("ncclDevKernel_AllReduce_Sum_f32_RING_LL(x)") == "AllReduce f32");
  CHECK(describeCollective("ncclDevKernel_SendRecv(x)") == "SendRecv");
  CHECK(isCommunicationKernelName("ncclDevKernel_SendRecv"));
  CHECK(isCommunicationKernelName("void ncclKernel_Broadcast_RING_LL_Sum_int8_t()"));
  CHECK_FALSE(isCommunicationKernelName("gemm_nccl"));
  CHECK_FALSE(isCommunicationKernelName(""));
}
