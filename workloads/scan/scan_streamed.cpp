// Streamed scan of a host array larger than one tile: tile k is copied in, scanned and copied
// back on stream k % streams, so copies of one tile overlap the scan of another. The running
// total travels on the device: the scan of tile k reads carry[k] and writes carry[k+1], and waits
// for the scan of tile k-1 through an event. Scans are therefore serialized (they would share the
// SMs anyway) while H2D and D2H copies overlap them.
#include <algorithm>
#include <cstdint>
#include <vector>

#include <fmt/format.h>

#include "../common/buffers.h"
#include "../common/event_timer.h"
#include "../common/nvtx_range.h"
#include "scan_algorithms.h"
#include "scan_commands.h"
#include "scan_reference.h"

namespace cuoverlap {
namespace {

struct StreamSlot {
  cudaStream_t stream = nullptr;
  DeviceBuffer<std::int32_t> in;
  DeviceBuffer<std::int32_t> out;
  DeviceBuffer<unsigned long long> status;
  StreamSlot(std::size_t tile)
      : in(tile), out(tile), status(lookbackStatusWords(tile)) {
    CUOVERLAP_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  }
};

void issueTile(std::size_t k, const ScanStreamedOptions& options, StreamSlot& slot,
               const PinnedBuffer<std::int32_t>& host_in, PinnedBuffer<std::int32_t>& host_out,
               std::int32_t* carries, std::vector<cudaEvent_t>& scanned) {
  const std::size_t begin = k * options.tile;
  const std::size_t length = std::min(options.tile, options.n - begin);
  const std::size_t bytes = length * sizeof(std::int32_t);
  NvtxRange tile_range(fmt::format("tile {}", k));
  {
    NvtxRange range("h2d");
    CUOVERLAP_CUDA_CHECK(cudaMemcpyAsync(slot.in.get(), host_in.get() + begin, bytes,
                                         cudaMemcpyHostToDevice, slot.stream));
  }
  {
    NvtxRange range("compute");
    if (k > 0) CUOVERLAP_CUDA_CHECK(cudaStreamWaitEvent(slot.stream, scanned[k - 1], 0));
    runLookbackScan<std::int32_t>(ScanKind::kInclusive, slot.in.get(), slot.out.get(), length,
                                  slot.status.get(), carries + k, carries + k + 1, slot.stream);
    CUOVERLAP_CUDA_CHECK(cudaEventRecord(scanned[k], slot.stream));
  }
  NvtxRange range("d2h");
  CUOVERLAP_CUDA_CHECK(cudaMemcpyAsync(host_out.get() + begin, slot.out.get(), bytes,
                                       cudaMemcpyDeviceToHost, slot.stream));
}

}  // namespace

int runScanStreamed(const ScanStreamedOptions& options) {
  const std::size_t tiles = (options.n + options.tile - 1) / options.tile;
  const std::vector<std::int32_t> input = makeIntInput(options.n, 3);
  PinnedBuffer<std::int32_t> host_in(options.n);
  PinnedBuffer<std::int32_t> host_out(options.n);
  std::copy(input.begin(), input.end(), host_in.get());
  std::vector<StreamSlot> slots;
  slots.reserve(options.streams);
  for (int s = 0; s < options.streams; ++s) slots.emplace_back(options.tile);
  DeviceBuffer<std::int32_t> carries(tiles + 1);
  CUOVERLAP_CUDA_CHECK(cudaMemsetAsync(carries.get(), 0, sizeof(std::int32_t), slots[0].stream));
  std::vector<cudaEvent_t> scanned(tiles);
  for (cudaEvent_t& event : scanned) {
    CUOVERLAP_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  }
  EventTimer timer;
  timer.start(slots[0].stream);
  for (std::size_t k = 0; k < tiles; ++k) {
    issueTile(k, options, slots[k % slots.size()], host_in, host_out, carries.get(), scanned);
  }
  // Streams drain in any order: stop the clock only once all of them have.
  for (StreamSlot& slot : slots) CUOVERLAP_CUDA_CHECK(cudaStreamSynchronize(slot.stream));
  timer.stop(slots[0].stream);
  const double ms = timer.elapsedMs();
  std::vector<std::int32_t> result(host_out.get(), host_out.get() + options.n);
  const std::size_t bad = firstIntMismatch(input, result, ScanKind::kInclusive);
  fmt::print("streamed scan: {} elements in {} tiles of {} over {} streams: {:.3f} ms, {:.1f} GB/s "
             "host to host\n", options.n, tiles, options.tile, options.streams, ms,
             2.0 * options.n * sizeof(std::int32_t) / (ms * 1e6));
  for (cudaEvent_t event : scanned) cudaEventDestroy(event);
  for (StreamSlot& slot : slots) cudaStreamDestroy(slot.stream);
  if (bad != options.n) {
    fmt::print("FAIL: first mismatch at element {}\n", bad);
    return 1;
  }
  fmt::print("verified\n");
  return 0;
}

}  // namespace cuoverlap
