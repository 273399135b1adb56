// sync-copy: chunk c of a host array is copied to the device and folded into an accumulator by a
// kernel, chunk after chunk. Every copy feeds the next kernel and must wait for the previous one
// (it overwrites the buffer that kernel reads): a real dependency chain, which no second stream
// could shorten. The bad version copies from pageable (malloc) memory with synchronous cudaMemcpy
// on the legacy default stream, as a first CUDA program does: the host blocks in every copy, the
// driver stages it through a pinned buffer, and the GPU idles while the host returns and
// launches the next kernel. The fixed twin does the same copies from pinned memory with
// cudaMemcpyAsync on one non-blocking stream: the chain stays, the staging and the gaps go.
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

// The host side: the input chunks and the result, pageable or pinned.
struct HostArrays {
  std::vector<std::uint32_t> pageable_in, pageable_acc;
  std::unique_ptr<PinnedBuffer<std::uint32_t>> pinned_in, pinned_acc;
  std::uint32_t* in = nullptr;
  std::uint32_t* acc = nullptr;

  HostArrays(std::size_t total, std::size_t elems, bool pinned) {
    if (pinned) {
      pinned_in = std::make_unique<PinnedBuffer<std::uint32_t>>(total);
      pinned_acc = std::make_unique<PinnedBuffer<std::uint32_t>>(elems);
      in = pinned_in->get();
      acc = pinned_acc->get();
    } else {
      pageable_in.resize(total);
      pageable_acc.resize(elems);
      in = pageable_in.data();
      acc = pageable_acc.data();
    }
    for (std::size_t i = 0; i < total; ++i) in[i] = pipelineInput(i);
    for (std::size_t i = 0; i < elems; ++i) acc[i] = 0;
  }
};

// acc = map^work(... map^work(map^work(in_0) ^ in_1) ... ^ in_last), per element.
bool verifyFold(const HostArrays& host, std::size_t elems, int chunks, int work) {
  const AffineMap map = composeAffine(work);
  std::vector<std::uint32_t> expected(elems, 0u);
  for (int c = 0; c < chunks; ++c) {
    const std::uint32_t* chunk = host.in + std::size_t(c) * elems;
    for (std::size_t i = 0; i < elems; ++i) expected[i] = map.apply(expected[i] ^ chunk[i]);
  }
  for (std::size_t i = 0; i < elems; ++i) {
    if (host.acc[i] != expected[i]) {
      fmt::print(stderr, "mismatch at element {}: got {} expected {}\n", i, host.acc[i], expected[i]);
      return false;
    }
  }
  return true;
}

void copyChunk(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind, bool fixed,
               cudaStream_t stream) {
  if (fixed) {
    CUOVERLAP_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, kind, stream));
  } else {
    CUOVERLAP_CUDA_CHECK(cudaMemcpy(dst, src, bytes, kind));
  }
}

}  // namespace

ScenarioResult runSyncCopy(const ScenarioOptions& options, bool fixed) {
  const std::size_t elems = std::size_t(options.chunk_kb) * 1024 / sizeof(std::uint32_t);
  const std::size_t bytes = elems * sizeof(std::uint32_t);
  HostArrays host(elems * options.chunks, elems, fixed);
  DeviceBuffer<std::uint32_t> d_in(elems), d_acc(elems);
  cudaStream_t stream = nullptr;  // bad: the legacy default stream, the only stream in use
  if (fixed) CUOVERLAP_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  EventTimer timer;
  timer.start(stream);
  for (int c = 0; c < options.chunks; ++c) {
    NvtxRange range(fmt::format("chunk {}", c));
    {
      NvtxRange phase("h2d");
      copyChunk(d_in.get(), host.in + std::size_t(c) * elems, bytes, cudaMemcpyHostToDevice, fixed, stream);
    }
    NvtxRange phase("compute");
    // The first chunk starts the accumulator (map(0 ^ x) = map(x)), so no memset is needed.
    if (c == 0) launchAffineTile(d_in.get(), d_acc.get(), elems, options.work, stream);
    else launchAffineFold(d_in.get(), d_acc.get(), elems, options.work, stream);
  }
  {
    NvtxRange phase("d2h");
    copyChunk(host.acc, d_acc.get(), bytes, cudaMemcpyDeviceToHost, fixed, stream);
  }
  timer.stop(stream);
  CUOVERLAP_CUDA_CHECK(cudaStreamSynchronize(stream));
  ScenarioResult result;
  result.wall_ms = timer.elapsedMs();
  result.verified = verifyFold(host, elems, options.chunks, options.work);
  if (fixed) CUOVERLAP_CUDA_CHECK(cudaStreamDestroy(stream));
  return result;
}

}  // namespace cuoverlap
