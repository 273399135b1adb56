// event-dag: tile t's inputs A and B are copied on streams sa and sb; the kernel stream sk waits
// for both copies with cudaStreamWaitEvent, joins them, and copies the result back. Buffers are
// double-buffered, so the copies of tile t only need the kernel of tile t-2 to be done with their
// buffer. The serialized variant waits for the kernel of tile t-1 instead: a wait that protects
// nothing and stops every copy from overlapping a kernel.
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

// Each tile moves two inputs in and one result out, half a pipeline tile each; twice the pipeline's
// work per element keeps the kernel longer than the copies, so they can hide under it.
constexpr int kJoinWorkFactor = 2;

struct DagBuffers {
  std::unique_ptr<DeviceBuffer<std::uint32_t>> a[2], b[2], out[2];
};

struct DagStreams {
  cudaStream_t a = nullptr, b = nullptr, kernel = nullptr;
};

void issueDagTile(int tile, bool unnecessary_wait, const DagStreams& streams, DagBuffers& buffers,
                  const PinnedBuffer<std::uint32_t>& host, PinnedBuffer<std::uint32_t>& out,
                  std::size_t elems, int work, std::vector<cudaEvent_t> (&done)[3]) {
  NvtxRange range(fmt::format("tile {}", tile));
  const int slot = tile % 2;
  const std::size_t bytes = elems * sizeof(std::uint32_t);
  const std::size_t total = std::size_t(done[0].size()) * elems;
  const int waited = unnecessary_wait ? tile - 1 : tile - 2;
  for (cudaStream_t copy : {streams.a, streams.b}) {
    if (waited >= 0 && copy != streams.kernel) {
      CUOVERLAP_CUDA_CHECK(cudaStreamWaitEvent(copy, done[2][waited], 0));
    }
  }
  {
    NvtxRange phase("h2d");
    CUOVERLAP_CUDA_CHECK(cudaMemcpyAsync(buffers.a[slot]->get(), host.get() + tile * elems, bytes,
                                         cudaMemcpyHostToDevice, streams.a));
    CUOVERLAP_CUDA_CHECK(cudaEventRecord(done[0][tile], streams.a));
    CUOVERLAP_CUDA_CHECK(cudaMemcpyAsync(buffers.b[slot]->get(), host.get() + total + tile * elems,
                                         bytes, cudaMemcpyHostToDevice, streams.b));
    CUOVERLAP_CUDA_CHECK(cudaEventRecord(done[1][tile], streams.b));
  }
  {
    NvtxRange phase("compute");
    if (streams.a != streams.kernel) {
      CUOVERLAP_CUDA_CHECK(cudaStreamWaitEvent(streams.kernel, done[0][tile], 0));
      CUOVERLAP_CUDA_CHECK(cudaStreamWaitEvent(streams.kernel, done[1][tile], 0));
    }
    launchAffineJoin(buffers.a[slot]->get(), buffers.b[slot]->get(), buffers.out[slot]->get(),
                     elems, kJoinWorkFactor * work, streams.kernel);
    CUOVERLAP_CUDA_CHECK(cudaEventRecord(done[2][tile], streams.kernel));
  }
  NvtxRange phase("d2h");
  CUOVERLAP_CUDA_CHECK(cudaMemcpyAsync(out.get() + tile * elems, buffers.out[slot]->get(), bytes,
                                       cudaMemcpyDeviceToHost, streams.kernel));
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
  DagBuffers buffers;
  for (int slot = 0; slot < 2; ++slot) {
    buffers.a[slot] = std::make_unique<DeviceBuffer<std::uint32_t>>(elems);
    buffers.b[slot] = std::make_unique<DeviceBuffer<std::uint32_t>>(elems);
    buffers.out[slot] = std::make_unique<DeviceBuffer<std::uint32_t>>(elems);
  }
  DagStreams streams;
  for (cudaStream_t* stream : {&streams.a, &streams.b, &streams.kernel}) {
    CUOVERLAP_CUDA_CHECK(cudaStreamCreateWithFlags(stream, cudaStreamNonBlocking));
  }
  if (options.serialize) streams.b = streams.kernel = streams.a;
  std::vector<cudaEvent_t> done[3];
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
  timer.stop(streams.kernel);  // the kernel stream ends last: its D2H follows every other op
  CUOVERLAP_CUDA_CHECK(cudaDeviceSynchronize());
  ScenarioResult result;
  result.wall_ms = timer.elapsedMs();
  result.verified = verifyDag(host, out, total, options.work);
  for (auto& events : done) {
    for (cudaEvent_t event : events) cudaEventDestroy(event);
  }
  if (!options.serialize) {
    cudaStreamDestroy(streams.b);
    cudaStreamDestroy(streams.kernel);
  }
  cudaStreamDestroy(streams.a);
  return result;
}

}  // namespace cuoverlap
