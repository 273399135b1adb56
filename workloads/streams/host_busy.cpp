// host-busy: batches of GPU work (H2D a batch, --batch-kernels kernels on it, D2H the result),
// each batch's input generated on the host first: CPU work of a known length (--batch-host-us:
// the generation, then a spin to the full length) during which no CUDA call is in progress. The
// bad version generates batch b+1 only after batch b has finished (one staging buffer, one
// stream, a cudaStreamSynchronize per batch), so the GPU idles through every CPU phase. The fixed
// twin is the usual prefetching loader: two staging and two device buffers, a copy-in stream, a
// compute stream and a copy-out stream joined by events, so batch b+1's input is generated while
// batch b computes and its H2D runs under batch b's kernels. The host waits (event) only for the
// H2D of batch b-1, which read the staging buffer it is about to refill. Same batches, same kernels
// in the same order on one stream, same CPU work; the kernels of a batch (about 2.4 ms on an H100)
// outlast the CPU work (2 ms), so the fixed twin's GPU never waits for the host.
#include <array>
#include <chrono>
#include <cstdint>

#include <fmt/format.h>

#include "../common/buffers.h"
#include "../common/event_timer.h"
#include "../common/nvtx_range.h"
#include "affine_work.h"
#include "scenario.h"

namespace cuoverlap {
namespace {

struct BatchShape {
  std::size_t elems = 0;
  std::size_t bytes = 0;
};

// The CPU work before batch b: its input, then a spin to the full length.
void prepareBatch(int batch, const BatchShape& shape, std::uint32_t* staging, int host_us) {
  NvtxRange range("prepare");
  const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(host_us);
  const std::size_t first = std::size_t(batch) * shape.elems;
  for (std::size_t i = 0; i < shape.elems; ++i) staging[i] = pipelineInput(first + i);
  while (std::chrono::steady_clock::now() < until) {
  }
}

// Streams and events of one batch's GPU work. The bad version uses one stream for all three.
struct BatchStreams {
  cudaStream_t h2d = nullptr, compute = nullptr, d2h = nullptr;
  cudaEvent_t copied = nullptr;    // the H2D ended: its staging buffer may be refilled
  cudaEvent_t computed = nullptr;  // the kernels ended: the result may be copied out
  cudaEvent_t drained = nullptr;   // the D2H ended: the device buffer may be refilled
};

// The GPU work of batch b: from `staging` to out[b], in place on the device buffer.
void enqueueBatch(int batch, const BatchShape& shape, const ScenarioOptions& options,
                  const std::uint32_t* staging, std::uint32_t* d_buf, std::uint32_t* out,
                  const BatchStreams& s) {
  const bool joined = s.h2d != s.compute;  // with one stream, stream order does it all
  {
    NvtxRange phase("h2d");
    if (joined) CUOVERLAP_CUDA_CHECK(cudaStreamWaitEvent(s.h2d, s.drained, 0));
    CUOVERLAP_CUDA_CHECK(cudaMemcpyAsync(d_buf, staging, shape.bytes, cudaMemcpyHostToDevice, s.h2d));
    CUOVERLAP_CUDA_CHECK(cudaEventRecord(s.copied, s.h2d));
  }
  {
    NvtxRange phase("compute");
    if (joined) CUOVERLAP_CUDA_CHECK(cudaStreamWaitEvent(s.compute, s.copied, 0));
    for (int k = 0; k < options.batch_kernels; ++k) {
      launchAffineTile(d_buf, d_buf, shape.elems, options.work, s.compute);
    }
    CUOVERLAP_CUDA_CHECK(cudaEventRecord(s.computed, s.compute));
  }
  NvtxRange phase("d2h");
  if (joined) CUOVERLAP_CUDA_CHECK(cudaStreamWaitEvent(s.d2h, s.computed, 0));
  CUOVERLAP_CUDA_CHECK(cudaMemcpyAsync(out + std::size_t(batch) * shape.elems, d_buf, shape.bytes,
                                       cudaMemcpyDeviceToHost, s.d2h));
  CUOVERLAP_CUDA_CHECK(cudaEventRecord(s.drained, s.d2h));
}

bool verifyBatches(const std::uint32_t* out, std::size_t total, int steps) {
  const AffineMap map = composeAffine(steps);
  for (std::size_t i = 0; i < total; ++i) {
    if (out[i] != map.apply(pipelineInput(i))) {
      fmt::print(stderr, "mismatch at element {}: got {} expected {}\n", i, out[i], map.apply(pipelineInput(i)));
      return false;
    }
  }
  return true;
}

// Per slot (two in the fixed twin, one in the bad version): events; streams shared by the slots.
std::array<BatchStreams, 2> makeStreams(bool fixed) {
  std::array<BatchStreams, 2> slots;
  cudaStream_t streams[3] = {};
  for (int i = 0; i < (fixed ? 3 : 1); ++i) {
    CUOVERLAP_CUDA_CHECK(cudaStreamCreateWithFlags(&streams[i], cudaStreamNonBlocking));
  }
  for (BatchStreams& s : slots) {
    s.h2d = streams[0];
    s.compute = fixed ? streams[1] : streams[0];
    s.d2h = fixed ? streams[2] : streams[0];
    for (cudaEvent_t* e : {&s.copied, &s.computed, &s.drained}) {
      CUOVERLAP_CUDA_CHECK(cudaEventCreateWithFlags(e, cudaEventDisableTiming));
    }
  }
  return slots;
}

void destroyStreams(std::array<BatchStreams, 2>& slots, bool fixed) {
  for (BatchStreams& s : slots) {
    for (cudaEvent_t e : {s.copied, s.computed, s.drained}) cudaEventDestroy(e);
  }
  cudaStreamDestroy(slots[0].h2d);
  if (fixed) {
    cudaStreamDestroy(slots[0].compute);
    cudaStreamDestroy(slots[0].d2h);
  }
}

}  // namespace

ScenarioResult runHostBusy(const ScenarioOptions& options, bool fixed) {
  BatchShape shape;
  shape.elems = std::size_t(options.batch_mb) * (1u << 20) / sizeof(std::uint32_t);
  shape.bytes = shape.elems * sizeof(std::uint32_t);
  PinnedBuffer<std::uint32_t> staging(2 * shape.elems), out(shape.elems * options.batches);
  DeviceBuffer<std::uint32_t> d_buf(2 * shape.elems);
  std::array<BatchStreams, 2> slots = makeStreams(fixed);
  EventTimer timer;
  if (fixed) prepareBatch(0, shape, staging.get(), options.batch_host_us);
  for (int b = 0; b < options.batches; ++b) {
    NvtxRange range(fmt::format("batch {}", b));
    const int slot = fixed ? b % 2 : 0;
    std::uint32_t* buffer = staging.get() + std::size_t(slot) * shape.elems;
    if (!fixed) prepareBatch(b, shape, buffer, options.batch_host_us);
    if (b == 0) timer.start(slots[slot].h2d);
    enqueueBatch(b, shape, options, buffer, d_buf.get() + std::size_t(slot) * shape.elems,
                 out.get(), slots[slot]);
    if (!fixed) {
      CUOVERLAP_CUDA_CHECK(cudaStreamSynchronize(slots[0].h2d));
    } else if (b + 1 < options.batches) {
      const int next = (b + 1) % 2;  // its last reader: the H2D of batch b-1
      CUOVERLAP_CUDA_CHECK(cudaEventSynchronize(slots[next].copied));
      prepareBatch(b + 1, shape, staging.get() + std::size_t(next) * shape.elems, options.batch_host_us);
    }
  }
  timer.stop(slots[0].d2h);
  CUOVERLAP_CUDA_CHECK(cudaDeviceSynchronize());
  ScenarioResult result;
  result.wall_ms = timer.elapsedMs();
  result.verified = verifyBatches(out.get(), shape.elems * options.batches,
                                  options.batch_kernels * options.work);
  destroyStreams(slots, fixed);
  return result;
}

}  // namespace cuoverlap
