// The tile pipelines: serial, pipeline2, pipeline3, pageable, implicit-sync, implicit-sync-fixed,
// sync-in-loop and multi-gpu share one workload (H2D a tile, transform it, D2H it back) and differ only in how it
// is issued. Streams are non-blocking so that nothing here serializes through the legacy default
// stream except what a scenario does on purpose.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

#include "../common/buffers.h"
#include "../common/event_timer.h"
#include "../common/nvtx_range.h"
#include "affine_work.h"
#include "scenario.h"

namespace cuoverlap {
namespace {

struct PipelineConfig {
  int streams_per_device = 3;
  bool pinned = true;
  bool sync_every_tile = false;
  bool implicit_sync_calls = false;
  bool hoisted_scratch = false;  // implicit-sync-fixed: the same memsets, without the sync calls
  bool all_devices = false;
};

PipelineConfig configFor(const std::string& name) {
  PipelineConfig config;
  if (name == "pipeline2") config.streams_per_device = 2;
  else if (name == "pageable") config.pinned = false;
  else if (name == "implicit-sync") config.implicit_sync_calls = true;
  else if (name == "implicit-sync-fixed") config.hoisted_scratch = true;
  else if (name == "sync-in-loop") config.sync_every_tile = true;
  else if (name == "multi-gpu") config.all_devices = true;
  else if (name != "pipeline3") throw std::invalid_argument("unknown scenario '" + name + "'");
  return config;
}

// One stream with its own device buffers: tile t uses lane t % lanes, so stream order alone keeps
// a buffer from being overwritten while in use.
struct Lane {
  int device = 0;
  cudaStream_t stream = nullptr;
  cudaEvent_t start = nullptr;
  cudaEvent_t end = nullptr;
  std::unique_ptr<DeviceBuffer<std::uint32_t>> in;
  std::unique_ptr<DeviceBuffer<std::uint32_t>> out;
  std::unique_ptr<DeviceBuffer<std::uint8_t>> scratch;  // implicit-sync-fixed only
};

constexpr std::size_t kScratchBytes = 1u << 20;
constexpr std::size_t kStagingBytes = 1u << 16;

// Host side of the pipeline: input and output, pinned or pageable.
struct HostTiles {
  std::size_t tile_elems = 0;
  std::size_t total = 0;
  std::unique_ptr<PinnedBuffer<std::uint32_t>> pinned_in, pinned_out;
  std::vector<std::uint32_t> pageable_in, pageable_out;
  std::uint32_t* in = nullptr;
  std::uint32_t* out = nullptr;

  HostTiles(const ScenarioOptions& options, bool pinned) {
    tile_elems = std::size_t(options.tile_mb) * (1u << 20) / sizeof(std::uint32_t);
    total = tile_elems * options.tiles;
    if (pinned) {
      // Portable: pinned for every device of the multi-gpu fan-out, not only the current one.
      pinned_in = std::make_unique<PinnedBuffer<std::uint32_t>>(total, cudaHostAllocPortable);
      pinned_out = std::make_unique<PinnedBuffer<std::uint32_t>>(total, cudaHostAllocPortable);
      in = pinned_in->get();
      out = pinned_out->get();
    } else {
      pageable_in.resize(total);
      pageable_out.resize(total);
      in = pageable_in.data();
      out = pageable_out.data();
    }
    for (std::size_t i = 0; i < total; ++i) in[i] = pipelineInput(i);
    std::fill(out, out + total, 0u);
  }
};

std::vector<Lane> makeLanes(const PipelineConfig& config, std::size_t tile_elems) {
  int devices = 1;
  if (config.all_devices) CUOVERLAP_CUDA_CHECK(cudaGetDeviceCount(&devices));
  std::vector<Lane> lanes(static_cast<std::size_t>(devices * config.streams_per_device));
  for (std::size_t l = 0; l < lanes.size(); ++l) {
    Lane& lane = lanes[l];
    lane.device = static_cast<int>(l) % devices;  // consecutive tiles go to different devices
    CUOVERLAP_CUDA_CHECK(cudaSetDevice(lane.device));
    CUOVERLAP_CUDA_CHECK(cudaStreamCreateWithFlags(&lane.stream, cudaStreamNonBlocking));
    CUOVERLAP_CUDA_CHECK(cudaEventCreate(&lane.start));
    CUOVERLAP_CUDA_CHECK(cudaEventCreate(&lane.end));
    lane.in = std::make_unique<DeviceBuffer<std::uint32_t>>(tile_elems);
    lane.out = std::make_unique<DeviceBuffer<std::uint32_t>>(tile_elems);
    if (config.hoisted_scratch) lane.scratch = std::make_unique<DeviceBuffer<std::uint8_t>>(kScratchBytes);
  }
  return lanes;
}

void destroyLanes(std::vector<Lane>& lanes) {
  for (Lane& lane : lanes) {
    CUOVERLAP_CUDA_CHECK(cudaSetDevice(lane.device));
    lane.in.reset();
    lane.out.reset();
    lane.scratch.reset();
    cudaEventDestroy(lane.start);
    cudaEventDestroy(lane.end);
    cudaStreamDestroy(lane.stream);
  }
  CUOVERLAP_CUDA_CHECK(cudaSetDevice(0));
}

enum class Phase { kH2D, kCompute, kD2H };

void issuePhase(Phase phase, int tile, Lane& lane, const HostTiles& host, int work) {
  CUOVERLAP_CUDA_CHECK(cudaSetDevice(lane.device));
  const std::size_t offset = std::size_t(tile) * host.tile_elems;
  const std::size_t bytes = host.tile_elems * sizeof(std::uint32_t);
  if (phase == Phase::kH2D) {
    NvtxRange range("h2d");
    CUOVERLAP_CUDA_CHECK(cudaMemcpyAsync(lane.in->get(), host.in + offset, bytes,
                                         cudaMemcpyHostToDevice, lane.stream));
  } else if (phase == Phase::kCompute) {
    NvtxRange range("compute");
    launchAffineTile(lane.in->get(), lane.out->get(), host.tile_elems, work, lane.stream);
  } else {
    NvtxRange range("d2h");
    CUOVERLAP_CUDA_CHECK(cudaMemcpyAsync(host.out + offset, lane.out->get(), bytes,
                                         cudaMemcpyDeviceToHost, lane.stream));
  }
}

// The implicitly synchronizing calls that creep into real loops: scratch allocation, a
// synchronous memset, a free, and a small pinned staging buffer.
void implicitSyncCalls() {
  NvtxRange range("scratch");
  void* scratch = nullptr;
  CUOVERLAP_CUDA_CHECK(cudaMalloc(&scratch, kScratchBytes));
  CUOVERLAP_CUDA_CHECK(cudaMemset(scratch, 0, kScratchBytes));
  CUOVERLAP_CUDA_CHECK(cudaFree(scratch));
  void* staging = nullptr;
  CUOVERLAP_CUDA_CHECK(cudaMallocHost(&staging, kStagingBytes));
  CUOVERLAP_CUDA_CHECK(cudaFreeHost(staging));
}

// The fix: the lane's scratch and the staging buffer are allocated once, outside the loop, and
// the same memset goes on the tile's stream.
void asyncScratchMemset(const Lane& lane) {
  NvtxRange range("scratch");
  CUOVERLAP_CUDA_CHECK(cudaMemsetAsync(lane.scratch->get(), 0, kScratchBytes, lane.stream));
}

void issuePipeline(const PipelineConfig& config, const ScenarioOptions& options,
                   std::vector<Lane>& lanes, const HostTiles& host) {
  const int lane_count = static_cast<int>(lanes.size());
  const bool breadth = options.order == "breadth";
  for (int group = 0; group < options.tiles; group += lane_count) {
    const int last = std::min(options.tiles, group + lane_count);
    for (int tile = group; tile < last; ++tile) {
      NvtxRange range(fmt::format("tile {}", tile));
      const Phase phases[] = {Phase::kH2D, Phase::kCompute, Phase::kD2H};
      for (Phase phase : phases) {
        if (breadth && phase != Phase::kH2D) continue;
        issuePhase(phase, tile, lanes[tile % lane_count], host, options.work);
      }
      if (config.implicit_sync_calls) implicitSyncCalls();
      if (config.hoisted_scratch) asyncScratchMemset(lanes[tile % lane_count]);
      if (config.sync_every_tile) CUOVERLAP_CUDA_CHECK(cudaDeviceSynchronize());
    }
    if (!breadth) continue;
    for (Phase phase : {Phase::kCompute, Phase::kD2H}) {
      for (int tile = group; tile < last; ++tile) {
        NvtxRange range(fmt::format("tile {}", tile));
        issuePhase(phase, tile, lanes[tile % lane_count], host, options.work);
      }
    }
  }
}

bool verifyTiles(const HostTiles& host, int work) {
  const AffineMap map = composeAffine(work);
  for (std::size_t i = 0; i < host.total; ++i) {
    if (host.out[i] != map.apply(pipelineInput(i))) {
      fmt::print(stderr, "mismatch at element {} (tile {}): got {} expected {}\n", i,
                 i / host.tile_elems, host.out[i], map.apply(pipelineInput(i)));
      return false;
    }
  }
  return true;
}

// Wall time from each device's first start event to the last lane's end event.
double laneWallMs(const std::vector<Lane>& lanes) {
  double wall = 0.0;
  for (const Lane& lane : lanes) {
    const Lane& first = lanes[static_cast<std::size_t>(lane.device)];
    CUOVERLAP_CUDA_CHECK(cudaSetDevice(lane.device));
    wall = std::max(wall, double(elapsedMs(first.start, lane.end)));
  }
  return wall;
}

// serial: the legacy default stream, synchronous copies, one buffer; every phase is timed in
// isolation, which makes its sums the engines' busy times.
ScenarioResult runSerial(const ScenarioOptions& options) {
  HostTiles host(options, true);
  DeviceBuffer<std::uint32_t> d_in(host.tile_elems), d_out(host.tile_elems);
  std::vector<cudaEvent_t> marks(4 * static_cast<std::size_t>(options.tiles));
  for (cudaEvent_t& mark : marks) CUOVERLAP_CUDA_CHECK(cudaEventCreate(&mark));
  const std::size_t bytes = host.tile_elems * sizeof(std::uint32_t);
  for (int tile = 0; tile < options.tiles; ++tile) {
    NvtxRange range(fmt::format("tile {}", tile));
    const std::size_t offset = std::size_t(tile) * host.tile_elems;
    cudaEvent_t* mark = &marks[4 * std::size_t(tile)];
    CUOVERLAP_CUDA_CHECK(cudaEventRecord(mark[0], nullptr));
    { NvtxRange phase("h2d");
      CUOVERLAP_CUDA_CHECK(cudaMemcpy(d_in.get(), host.in + offset, bytes, cudaMemcpyHostToDevice)); }
    CUOVERLAP_CUDA_CHECK(cudaEventRecord(mark[1], nullptr));
    { NvtxRange phase("compute");
      launchAffineTile(d_in.get(), d_out.get(), host.tile_elems, options.work, nullptr); }
    CUOVERLAP_CUDA_CHECK(cudaEventRecord(mark[2], nullptr));
    { NvtxRange phase("d2h");
      CUOVERLAP_CUDA_CHECK(cudaMemcpy(host.out + offset, d_out.get(), bytes, cudaMemcpyDeviceToHost)); }
    CUOVERLAP_CUDA_CHECK(cudaEventRecord(mark[3], nullptr));
  }
  ScenarioResult result;
  for (int tile = 0; tile < options.tiles; ++tile) {
    const cudaEvent_t* mark = &marks[4 * std::size_t(tile)];
    result.h2d_ms += elapsedMs(mark[0], mark[1]);
    result.compute_ms += elapsedMs(mark[1], mark[2]);
    result.d2h_ms += elapsedMs(mark[2], mark[3]);
  }
  result.wall_ms = elapsedMs(marks.front(), marks.back());
  for (cudaEvent_t mark : marks) cudaEventDestroy(mark);
  result.verified = verifyTiles(host, options.work);
  return result;
}

}  // namespace

ScenarioResult runTilePipeline(const std::string& name, const ScenarioOptions& options) {
  if (name == "serial") return runSerial(options);
  const PipelineConfig config = configFor(name);
  HostTiles host(options, config.pinned);
  std::vector<Lane> lanes = makeLanes(config, host.tile_elems);
  // implicit-sync-fixed: the staging buffer implicit-sync allocates per tile, allocated once.
  std::unique_ptr<PinnedBuffer<std::uint8_t>> staging;
  if (config.hoisted_scratch) staging = std::make_unique<PinnedBuffer<std::uint8_t>>(kStagingBytes);
  for (Lane& lane : lanes) {
    CUOVERLAP_CUDA_CHECK(cudaSetDevice(lane.device));
    CUOVERLAP_CUDA_CHECK(cudaEventRecord(lane.start, lane.stream));
  }
  issuePipeline(config, options, lanes, host);
  for (Lane& lane : lanes) {
    CUOVERLAP_CUDA_CHECK(cudaSetDevice(lane.device));
    CUOVERLAP_CUDA_CHECK(cudaEventRecord(lane.end, lane.stream));
  }
  for (Lane& lane : lanes) CUOVERLAP_CUDA_CHECK(cudaStreamSynchronize(lane.stream));
  ScenarioResult result;
  result.wall_ms = laneWallMs(lanes);
  result.verified = verifyTiles(host, options.work);
  destroyLanes(lanes);
  return result;
}

}  // namespace cuoverlap
