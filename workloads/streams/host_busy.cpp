// host-busy: batches of GPU work (H2D a batch, --batch-kernels kernels on it, D2H the result),
// each batch's input generated on the host first: CPU work of a known length (--batch-host-us:
// the generation, then a spin to the full length) during which no CUDA call is in progress. The
// bad version generates batch b+1 only after batch b has finished (one staging buffer, a
// cudaStreamSynchronize per batch), so the GPU idles through every CPU phase. The fixed twin
// double-buffers the staging: it enqueues batch b, generates batch b+1 into the other buffer
// while the GPU works, and waits (event) only for the H2D of batch b-1, which read that buffer
// and finished long before. Same batches, same kernels, same CPU work; the GPU work of a batch
// (about 2.5 ms on an H100) exceeds the CPU work (2 ms), so the fixed twin's GPU never waits.
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

// The GPU work of batch b: from `staging` to out[b], in place on the device buffer.
void enqueueBatch(int batch, const BatchShape& shape, const ScenarioOptions& options,
                  const std::uint32_t* staging, std::uint32_t* d_buf, std::uint32_t* out,
                  cudaStream_t stream, cudaEvent_t copied) {
  {
    NvtxRange phase("h2d");
    CUOVERLAP_CUDA_CHECK(cudaMemcpyAsync(d_buf, staging, shape.bytes, cudaMemcpyHostToDevice, stream));
    CUOVERLAP_CUDA_CHECK(cudaEventRecord(copied, stream));
  }
  {
    NvtxRange phase("compute");
    for (int k = 0; k < options.batch_kernels; ++k) launchAffineTile(d_buf, d_buf, shape.elems, options.work, stream);
  }
  NvtxRange phase("d2h");
  CUOVERLAP_CUDA_CHECK(cudaMemcpyAsync(out + std::size_t(batch) * shape.elems, d_buf, shape.bytes,
                                       cudaMemcpyDeviceToHost, stream));
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

}  // namespace

ScenarioResult runHostBusy(const ScenarioOptions& options, bool fixed) {
  BatchShape shape;
  shape.elems = std::size_t(options.batch_mb) * (1u << 20) / sizeof(std::uint32_t);
  shape.bytes = shape.elems * sizeof(std::uint32_t);
  PinnedBuffer<std::uint32_t> staging(2 * shape.elems), out(shape.elems * options.batches);
  DeviceBuffer<std::uint32_t> d_buf(shape.elems);
  cudaStream_t stream = nullptr;
  CUOVERLAP_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaEvent_t copied[2];
  for (cudaEvent_t& event : copied) CUOVERLAP_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  EventTimer timer;
  if (fixed) prepareBatch(0, shape, staging.get(), options.batch_host_us);
  for (int b = 0; b < options.batches; ++b) {
    NvtxRange range(fmt::format("batch {}", b));
    const int slot = fixed ? b % 2 : 0;
    std::uint32_t* buffer = staging.get() + std::size_t(slot) * shape.elems;
    if (!fixed) prepareBatch(b, shape, buffer, options.batch_host_us);
    if (b == 0) timer.start(stream);
    enqueueBatch(b, shape, options, buffer, d_buf.get(), out.get(), stream, copied[slot]);
    if (!fixed) {
      CUOVERLAP_CUDA_CHECK(cudaStreamSynchronize(stream));
    } else if (b + 1 < options.batches) {
      const int next = (b + 1) % 2;  // its last reader: the H2D of batch b-1
      CUOVERLAP_CUDA_CHECK(cudaEventSynchronize(copied[next]));
      prepareBatch(b + 1, shape, staging.get() + std::size_t(next) * shape.elems, options.batch_host_us);
    }
  }
  timer.stop(stream);
  CUOVERLAP_CUDA_CHECK(cudaStreamSynchronize(stream));
  ScenarioResult result;
  result.wall_ms = timer.elapsedMs();
  result.verified = verifyBatches(out.get(), shape.elems * options.batches,
                                  options.batch_kernels * options.work);
  for (cudaEvent_t event : copied) cudaEventDestroy(event);
  CUOVERLAP_CUDA_CHECK(cudaStreamDestroy(stream));
  return result;
}

}  // namespace cuoverlap
