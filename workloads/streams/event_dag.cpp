// event-dag: tile t's inputs A and B are copied on streams a and b; the kernel stream waits for
// both copies with cudaStreamWaitEvent and joins them; the result goes back on a fourth stream
// that waits for the kernel (on the kernel stream it would stall the next kernel behind it).
// Buffers are double-buffered, so the copies of tile t only wait for the kernel of tile t-2 (done
// reading their buffers) and the kernel of tile t for the D2H of tile t-2 (done reading its
// output buffer). The serialized variant makes the copies of tile t wait for the kernel of tile
// t-1 instead: a wait that protects nothing and stops every input copy overlapping a kernel.
#include <cstdint>
#include <memory>
#include <vector>

#include <fmt/format.h>

#include "../common/buffers.h"
#include "../common/event_timer.h"
#include "../common/nvtx_range.h"
#include "affine_work.h"
#include "scenario.h"

namespace cuoverlap {
namespace {

// The DAG is copy-bound on purpose: with half the pipeline's work per element the join kernel
// takes about half as long as a tile's input copies, so the kernel stream always waits on
// copy-in (a real dependency) and the buffer-reuse waits are satisfied long before they are
// reached. A kernel-bound DAG would throttle its faster copies on the reuse waits instead, which a
// trace cannot tell from an unnecessary wait.
constexpr int kJoinWorkDivisor = 2;

struct DagBuffers {
  std::unique_ptr<DeviceBuffer<std::uint32_t>> a[2], b[2], out[2];
};

struct DagStreams {
  cudaStream_t a = nullptr, b = nullptr, kernel = nullptr, d2h = nullptr;
};

// done[kCopiedA][t], done[kCopiedB][t], done[kJoined][t], done[kReturned][t]: tile t's milestones.
enum Milestone { kCopiedA, kCopiedB, kJoined, kReturned, kMilestones };

void issueDagTile(int tile, bool unnecessary_wait, const DagStreams& streams, DagBuffers& buffers,
                  const PinnedBuffer<std::uint32_t>& host, PinnedBuffer<std::uint32_t>& out,
                  std::size_t elems, int work, std::vector<cudaEvent_t> (&done)[kMilestones]) {
  NvtxRange range(fmt::format("tile {}", tile));
  const int slot = tile % 2;
  const std::size_t bytes = elems * sizeof(std::uint32_t);
  const std::size_t total = std::size_t(done[0].size()) * elems;
  const int waited = unnecessary_wait ? tile - 1 : tile - 2;
  const bool one_stream = streams.a == streams.kernel;  // --serialize: stream order suffices
  for (cudaStream_t copy : {streams.a, streams.b}) {
    if (waited >= 0 && !one_stream) CUOVERLAP_CUDA_CHECK(cudaStreamWaitEvent(copy, done[kJoined][waited], 0));
  }
  {
    NvtxRange phase("h2d");
    CUOVERLAP_CUDA_CHECK(cudaMemcpyAsync(buffers.a[slot]->get(), host.get() + tile * elems, bytes,
                                         cudaMemcpyHostToDevice, streams.a));
    CUOVERLAP_CUDA_CHECK(cudaEventRecord(done[kCopiedA][tile], streams.a));
    CUOVERLAP_CUDA_CHECK(cudaMemcpyAsync(buffers.b[slot]->get(), host.get() + total + tile * elems,
                                         bytes, cudaMemcpyHostToDevice, streams.b));
    CUOVERLAP_CUDA_CHECK(cudaEventRecord(done[kCopiedB][tile], streams.b));
  }
  {
    NvtxRange phase("compute");
    if (!one_stream) {
      CUOVERLAP_CUDA_CHECK(cudaStreamWaitEvent(streams.kernel, done[kCopiedA][tile], 0));
      CUOVERLAP_CUDA_CHECK(cudaStreamWaitEvent(streams.kernel, done[kCopiedB][tile], 0));
      if (tile >= 2) CUOVERLAP_CUDA_CHECK(cudaStreamWaitEvent(streams.kernel, done[kReturned][tile - 2], 0));
    }
    launchAffineJoin(buffers.a[slot]->get(), buffers.b[slot]->get(), buffers.out[slot]->get(),
                     elems, work / kJoinWorkDivisor, streams.kernel);
    CUOVERLAP_CUDA_CHECK(cudaEventRecord(done[kJoined][tile], streams.kernel));
  }
  NvtxRange phase("d2h");
  if (!one_stream) CUOVERLAP_CUDA_CHECK(cudaStreamWaitEvent(streams.d2h, done[kJoined][tile], 0));
  CUOVERLAP_CUDA_CHECK(cudaMemcpyAsync(out.get() + tile * elems, buffers.out[slot]->get(), bytes,
                                       cudaMemcpyDeviceToHost, streams.d2h));
  CUOVERLAP_CUDA_CHECK(cudaEventRecord(done[kReturned][tile], streams.d2h));
}

bool verifyDag(const PinnedBuffer<std::uint32_t>& host, const PinnedBuffer<std::uint32_t>& out,
               std::size_t total, int work) {
  const AffineMap map = composeAffine(work / kJoinWorkDivisor);
  for (std::size_t i = 0; i < total; ++i) {
    const std::uint32_t expected = map.apply(host[i] ^ host[total + i]);
    if (out[i] != expected) {
      fmt::print(stderr, "mismatch at element {}: got {} expected {}\n", i, out[i], expected);
      return false;
    }
  }
  return true;
}

}  // namespace

ScenarioResult runEventDag(const ScenarioOptions& options, bool unnecessary_wait) {
  const std::size_t elems = std::size_t(options.tile_mb) * (1u << 20) / sizeof(std::uint32_t) / 2;
  const std::size_t total = elems * options.tiles;
  PinnedBuffer<std::uint32_t> host(2 * total), out(total);
  for (std::size_t i = 0; i < 2 * total; ++i) host[i] = pipelineInput(i);
  DagBuffers buffers;
  for (int slot = 0; slot < 2; ++slot) {
    buffers.a[slot] = std::make_unique<DeviceBuffer<std::uint32_t>>(elems);
    buffers.b[slot] = std::make_unique<DeviceBuffer<std::uint32_t>>(elems);
    buffers.out[slot] = std::make_unique<DeviceBuffer<std::uint32_t>>(elems);
  }
  DagStreams streams;
  for (cudaStream_t* stream : {&streams.a, &streams.b, &streams.kernel, &streams.d2h}) {
    CUOVERLAP_CUDA_CHECK(cudaStreamCreateWithFlags(stream, cudaStreamNonBlocking));
  }
  const DagStreams created = streams;
  if (options.serialize) streams.b = streams.kernel = streams.d2h = streams.a;
  std::vector<cudaEvent_t> done[kMilestones];
  for (auto& events : done) {
    events.resize(options.tiles);
    for (cudaEvent_t& event : events) {
      CUOVERLAP_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
    }
  }
  EventTimer timer;
  timer.start(streams.a);
  for (int tile = 0; tile < options.tiles; ++tile) {
    issueDagTile(tile, unnecessary_wait, streams, buffers, host, out, elems, options.work, done);
  }
  timer.stop(streams.d2h);  // the last D2H follows every other op
  CUOVERLAP_CUDA_CHECK(cudaDeviceSynchronize());
  ScenarioResult result;
  result.wall_ms = timer.elapsedMs();
  result.verified = verifyDag(host, out, total, options.work);
  for (auto& events : done) {
    for (cudaEvent_t event : events) cudaEventDestroy(event);
  }
  for (cudaStream_t stream : {created.a, created.b, created.kernel, created.d2h}) cudaStreamDestroy(stream);
  return result;
}

}  // namespace cuoverlap
