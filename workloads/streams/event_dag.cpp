// event-dag: tile t's inputs A and B are copied on streams a and b; the kernel stream waits for
// both copies with cudaStreamWaitEvent and joins them; the result goes back on a fourth stream
// that waits for the kernel (on the kernel stream it would stall the next kernel behind it).
// Every tile has its own device buffers, so these data-flow waits (copy-in -> kernel -> copy-out)
// are the only ones needed. The serialized variant adds one wait that protects nothing: the input
// copies of tile t wait for the kernel of tile t-1, so no input copy can overlap a kernel.
#include <cstdint>
#include <vector>

#include <fmt/format.h>

#include "../common/buffers.h"
#include "../common/event_timer.h"
#include "../common/nvtx_range.h"
#include "affine_work.h"
#include "scenario.h"

namespace cuoverlap {
namespace {

// The DAG is kernel-bound: with twice the pipeline's work per element the join kernel takes about
// twice as long as a tile's input copies, so the copies hide under kernels, and the waits that
// bind are the result copies waiting for their kernel, while no input copy happens to end at the
// same moment (which a trace could mistake for the op the wait was for).
constexpr int kJoinWorkFactor = 2;

// One slice of each buffer per tile: no buffer is reused, so no wait guards a reuse.
struct DagBuffers {
  DeviceBuffer<std::uint32_t> a, b, out;
  explicit DagBuffers(std::size_t total) : a(total), b(total), out(total) {}
};

struct DagStreams {
  cudaStream_t a = nullptr, b = nullptr, kernel = nullptr, d2h = nullptr;
};

// done[kCopiedA][t], done[kCopiedB][t], done[kJoined][t]: tile t's milestones.
enum Milestone { kCopiedA, kCopiedB, kJoined, kMilestones };

void issueDagTile(int tile, bool unnecessary_wait, const DagStreams& streams, DagBuffers& buffers,
                  const PinnedBuffer<std::uint32_t>& host, PinnedBuffer<std::uint32_t>& out,
                  std::size_t elems, int work, std::vector<cudaEvent_t> (&done)[kMilestones]) {
  NvtxRange range(fmt::format("tile {}", tile));
  const std::size_t offset = std::size_t(tile) * elems;
  const std::size_t bytes = elems * sizeof(std::uint32_t);
  const std::size_t total = std::size_t(done[0].size()) * elems;
  const bool one_stream = streams.a == streams.kernel;  // --serialize: stream order suffices
  if (unnecessary_wait && tile >= 1 && !one_stream) {
    for (cudaStream_t copy : {streams.a, streams.b}) {
      CUOVERLAP_CUDA_CHECK(cudaStreamWaitEvent(copy, done[kJoined][tile - 1], 0));
    }
  }
  {
    NvtxRange phase("h2d");
    CUOVERLAP_CUDA_CHECK(cudaMemcpyAsync(buffers.a.get() + offset, host.get() + offset, bytes,
                                         cudaMemcpyHostToDevice, streams.a));
    CUOVERLAP_CUDA_CHECK(cudaEventRecord(done[kCopiedA][tile], streams.a));
    CUOVERLAP_CUDA_CHECK(cudaMemcpyAsync(buffers.b.get() + offset, host.get() + total + offset,
                                         bytes, cudaMemcpyHostToDevice, streams.b));
    CUOVERLAP_CUDA_CHECK(cudaEventRecord(done[kCopiedB][tile], streams.b));
  }
  {
    NvtxRange phase("compute");
    if (!one_stream) {
      CUOVERLAP_CUDA_CHECK(cudaStreamWaitEvent(streams.kernel, done[kCopiedA][tile], 0));
      CUOVERLAP_CUDA_CHECK(cudaStreamWaitEvent(streams.kernel, done[kCopiedB][tile], 0));
    }
    launchAffineJoin(buffers.a.get() + offset, buffers.b.get() + offset, buffers.out.get() + offset,
                     elems, kJoinWorkFactor * work, streams.kernel);
    CUOVERLAP_CUDA_CHECK(cudaEventRecord(done[kJoined][tile], streams.kernel));
  }
  NvtxRange phase("d2h");
  if (!one_stream) CUOVERLAP_CUDA_CHECK(cudaStreamWaitEvent(streams.d2h, done[kJoined][tile], 0));
  CUOVERLAP_CUDA_CHECK(cudaMemcpyAsync(out.get() + offset, buffers.out.get() + offset, bytes,
                                       cudaMemcpyDeviceToHost, streams.d2h));
}

bool verifyDag(const PinnedBuffer<std::uint32_t>& host, const PinnedBuffer<std::uint32_t>& out,
               std::size_t total, int work) {
  const AffineMap map = composeAffine(kJoinWorkFactor * work);
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
  DagBuffers buffers(total);
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
