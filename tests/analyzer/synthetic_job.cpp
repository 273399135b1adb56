#include "synthetic_job.h"

#include <fmt/format.h>

#include "synthetic_trace.h"

namespace cuoverlap::testing {
namespace {

constexpr Ns kUs = 1000;
constexpr const char* kAllReduce =
    "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)";
constexpr const char* kAllGather =
    "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)";
constexpr int kSteps = 6;
constexpr int kRanksPerHost = 8;

SyntheticOp kernel(Ns start, Ns end, const char* name, std::uint32_t stream, std::uint32_t pid) {
  SyntheticOp op{OpKind::kKernel, start, end};
  op.name = name;
  op.stream = stream;
  op.pid = pid;
  return op;
}

void writeRank(SyntheticTrace& trace, int rank, int ranks, Ns clock) {
  const auto pid = static_cast<std::uint32_t>(1000 + rank % kRanksPerHost);
  const Ns late = (rank == kSyntheticJobLateRank ? 200 : (rank * 37) % 9) * kUs;
  const int steps = rank == ranks - 1 ? kSteps - 1 : kSteps;
  for (int step = 0; step < steps; ++step) {
    const Ns t0 = clock + (1000 + step * 1000) * kUs;
    trace.addOp(kernel(t0, t0 + 600 * kUs, "gemm", 13, pid));
    // Every rank leaves a collective together; the late rank arrives after an idle GPU.
    trace.addOp(kernel(t0 + 600 * kUs + late, t0 + 900 * kUs, kAllReduce, 20, pid));
    if (step % 2 == 0) {
      trace.addOp(kernel(t0 + (920 + rank % 5) * kUs, t0 + 980 * kUs, kAllGather, 30, pid));
    }
  }
}

}  // namespace

std::vector<std::string> writeSyntheticJob(const std::string& prefix, int ranks, int world_size,
                                           const std::string& host_prefix, long long time_shift_ns) {
  std::vector<std::string> paths;
  for (int rank = 0; rank < ranks; ++rank) {
    const std::string path = tempTracePath(fmt::format("{}_rank{}.sqlite", prefix, rank));
    SyntheticTrace trace(path);
    const int host = rank / kRanksPerHost;
    trace.addDevice(0, "NVIDIA H100 80GB HBM3");
    trace.exec(fmt::format("INSERT INTO CUOVERLAP_SESSION VALUES ('pid', '{}'), ('rank', '{}'), "
                           "('world_size', '{}'), ('host', '{}{}')",
                           1000 + rank % kRanksPerHost, rank, world_size ? world_size : ranks,
                           host_prefix, host));
    // Each host's clock 5 s apart from the previous one's.
    writeRank(trace, rank, ranks, 1'000'000'000'000 + host * 5'000'000'000LL + time_shift_ns);
    trace.close();
    paths.push_back(path);
  }
  return paths;
}

}  // namespace cuoverlap::testing
