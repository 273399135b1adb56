// The device allocator's chunks (rules/device_chunks.h): a loop's cudaMalloc/cudaFree pair that
// maps a chunk each time is carved out of one that buffers a fix allocates at setup open, where
// the op buffers size every allocation and the loop's buffer fits the room they leave.
#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "diagnosis/device_view.h"
#include "diagnosis/host_timeline.h"
#include "diagnosis/rules/device_chunks.h"
#include "trace_builder.h"

namespace cuoverlap {
namespace {

using test::TraceBuilder;
using test::kUs;

constexpr std::uint64_t kKiB = 1024;
constexpr std::uint64_t kChunk0 = std::uint64_t{0x7f0000000000};  // a 2 MiB-aligned address

// lab g000310's shape: setup buffers (g000310's: 208, 1124 and 644 KiB, in one chunk with 72 KiB
// of room left), each touched by a setup kernel (the first is the split loop's: the fix gives each
// lane beyond the first a copy of it); then three iterations of a 1124 KiB buffer allocated
// (50 µs: it maps a chunk of its own, at the next 2 MiB), handed to a kernel and freed (40 µs).
// `size_everything`: every device buffer a kernel touches (else a copy writes memory no kernel
// touched: a size the op buffers do not give).
Trace allocationLoop(const std::vector<std::uint64_t>& setup, bool size_everything = true) {
  TraceBuilder b;
  std::uint64_t address = kChunk0;
  double t = 10;
  for (const std::uint64_t bytes : setup) {
    GpuOp& k = b.launch(13, t, t + 5, t + 6, t + 20);
    b.touches(k, address, bytes);
    address += bytes;
    t += 30;
  }
  if (!size_everything) {
    GpuOp& copy = b.copyCall("cudaMemcpyAsync_v3020", 13, t, t + 5, t + 6, t + 10, CopyKind::kHtoD);
    b.touches(copy, kChunk0 + 8 * (std::uint64_t{1} << 20), 4096, schema::BufferAccess::kWrite);
    t += 20;
  }
  for (int i = 0; i < 3; ++i) {
    b.call("cudaMalloc_v3020", t, t + 50);
    GpuOp& k = b.launch(14, t + 51, t + 55, t + 56, t + 100);
    b.touches(k, kChunk0 + (std::uint64_t{2} << 20), 1124 * kKiB);
    b.call("cudaFree_v3020", t + 101, t + 141);
    t += 200;
  }
  return b.build();
}

const std::vector<std::uint64_t> kG000310Setup = {208 * kKiB, 1124 * kKiB, 644 * kKiB};

std::size_t changedCalls(const Trace& trace, std::size_t copies) {
  const diagnosis::DeviceView view(trace, Scope{}, 0);
  const diagnosis::HostTimeline& host = diagnosis::buildHostTimeline(view);
  return diagnosis::deviceChunkKeptAlive(view, host, {0}, copies).size();
}

TEST_CASE("device chunks: buffers a fix allocates at setup open a chunk the loop's allocation shares") {
  // Two more 208 KiB buffers do not fit the 72 KiB left: they open a chunk with 1632 KiB of room,
  // and the loop's 1124 KiB allocations are carved out of it, three, and their frees, the two in
  // the view (the last returns after the device's last op, outside it).
  CHECK(changedCalls(allocationLoop(kG000310Setup), 2) == 5);
  const Trace trace = allocationLoop(kG000310Setup);
  const diagnosis::DeviceView view(trace, Scope{}, 0);
  const diagnosis::HostTimeline& host = diagnosis::buildHostTimeline(view);
  for (const diagnosis::CallChange& c : diagnosis::deviceChunkKeptAlive(view, host, {0}, 2)) {
    CHECK(c.own == diagnosis::kDeviceCarvedCallNs);
    // The allocation waits for nothing; the free still waits for the device.
    CHECK(c.waits == (view.callName(c.call).find("Free") != std::string_view::npos));
  }
}

TEST_CASE("device chunks: nothing changes where the fix's buffers fit the room left") {
  // With a 32 KiB first buffer the chunk keeps 248 KiB: two more 32 KiB buffers fit there, no
  // chunk opens, and the loop's buffer still maps its own.
  CHECK(changedCalls(allocationLoop({32 * kKiB, 1124 * kKiB, 644 * kKiB}), 2) == 0);
  // No fix buffers, nothing.
  CHECK(changedCalls(allocationLoop(kG000310Setup), 0) == 0);
}

TEST_CASE("device chunks: a picture that does not account for the recording changes nothing") {
  // A copy into memory no kernel touched: its allocation's size is unknown, so are the rooms.
  CHECK(changedCalls(allocationLoop(kG000310Setup, /*size_everything=*/false), 2) == 0);
  // Setup buffers of 208 and 644 KiB leave 1196 KiB, where the loop's 1124 KiB buffer fits, yet
  // its allocation mapped a chunk: the picture misses allocations, so it prices none.
  CHECK(changedCalls(allocationLoop({208 * kKiB, 644 * kKiB}), 2) == 0);
  // Without op buffers, nothing.
  Trace bare = allocationLoop(kG000310Setup);
  bare.op_buffers.clear();
  CHECK(changedCalls(bare, 2) == 0);
}

TEST_CASE("device chunks: memory events size the allocations no kernel touched") {
  // The copy's memory no kernel touched: an allocation of 4 MiB the trace's memory events record
  // (8 MiB up, a mapping of its own) makes the picture whole again.
  Trace trace = allocationLoop(kG000310Setup, /*size_everything=*/false);
  MemoryEvent copied;
  copied.pid = trace.ops.front().pid;
  copied.time = 5 * kUs;
  copied.address = kChunk0 + 8 * (std::uint64_t{1} << 20);
  copied.bytes = std::uint64_t{4} << 20;
  copied.kind = MemKind::kDevice;
  trace.memory_events.push_back(copied);
  CHECK(changedCalls(trace, 2) == 5);
  // An earlier allocation of 8 KiB over the copy's first bytes whose free the trace lacks (trimmed
  // away, or before a capture range) ended where the 4 MiB one began: live allocations never
  // overlap. (Taken as living, it would size the copy's memory and leave its chunk room.)
  MemoryEvent earlier = copied;
  earlier.time = 1 * kUs;
  earlier.address = copied.address - 4096;
  earlier.bytes = 8192;
  trace.memory_events.insert(trace.memory_events.begin(), earlier);
  CHECK(changedCalls(trace, 2) == 5);
  trace.memory_events.erase(trace.memory_events.begin());
  // A 4 KiB one would leave its chunk room for the loop's buffer, which mapped a chunk: the
  // picture misses allocations.
  trace.memory_events.back().bytes = 4096;
  CHECK(changedCalls(trace, 2) == 0);
  trace.memory_events.back().bytes = std::uint64_t{4} << 20;
  // Pinned host memory is not the device allocator's.
  trace.memory_events.back().kind = MemKind::kPinned;
  CHECK(changedCalls(trace, 2) == 0);
  // Only allocations size: a free of that memory does not.
  trace.memory_events.back().kind = MemKind::kDevice;
  trace.memory_events.back().allocation = false;
  CHECK(changedCalls(trace, 2) == 0);
  // Nor an allocation that did not live in the view (freed before it began: a trace's other
  // window, where the address held something else), or another process's.
  trace.memory_events.back().allocation = true;
  MemoryEvent freed = trace.memory_events.back();
  freed.time = 8 * kUs;
  freed.allocation = false;
  trace.memory_events.push_back(freed);
  CHECK(changedCalls(trace, 2) == 0);
  trace.memory_events.pop_back();
  trace.memory_events.back().pid += 1;
  CHECK(changedCalls(trace, 2) == 0);
}

}  // namespace
}  // namespace cuoverlap
