// Cross-stream waits judged by the memory each op touched (diagnosis/data_order.h): with
// CUOVERLAP_OP_BUFFERS recorded, a wait is dropped exactly when no conflicting pair of ops it
// ordered loses its order (the lab's drop-wait transform); without them the rules keep their
// usual-data-flow and buffer-reuse heuristics.
#include <catch2/catch.hpp>

#include "diagnosis/data_order.h"
#include "findings_test_util.h"
#include "trace_builder.h"

namespace cuoverlap {
namespace {

using schema::BufferAccess;
using test::findingById;
using test::findingsOf;
using test::TraceBuilder;
using diagnosis::recordsOpBuffers;
using diagnosis::streamWaits;
using diagnosis::StreamWait;
using diagnosis::DataOrder;
using diagnosis::waitsOrderingData;

constexpr std::uint64_t kA = 0x7f0000000000, kB = 0x7f0000100000, kC = 0x7f0000200000;
constexpr std::uint64_t kBytes = 1 << 20;

// A chain of three streams (lab g000047's shape): K1 (13) -> wait e1 -> K2, K3 (14) -> wait e2 ->
// K4 (15), every kernel launched long before it ran. K1 and K2 share A; K3 touches B and K4 touches
// `k4_buffer`.
TraceBuilder chain(std::uint64_t k4_buffer, bool with_buffers) {
  TraceBuilder b;
  const GpuOp k1 = b.launch(13, 1, 2, 10, 110);
  b.eventRecord(13, 1, 3, 4);
  b.streamWaitEvent(14, 5, 6, 1);
  const GpuOp k2 = b.launch(14, 7, 8, 113, 213);
  const GpuOp k3 = b.launch(14, 9, 10, 214, 314);
  b.eventRecord(14, 2, 11, 12);
  b.streamWaitEvent(15, 13, 14, 2);
  const GpuOp k4 = b.launch(15, 15, 16, 317, 417);
  if (with_buffers) {
    b.touches(k1, kA, kBytes);
    b.touches(k2, kA, kBytes);
    b.touches(k3, kB, kBytes);
    b.touches(k4, k4_buffer, kBytes);
  }
  return b;
}

}  // namespace

TEST_CASE("data order: with op buffers only the wait that orders no shared memory is dropped") {
  // Without buffers every kernel -> kernel wait that held its kernel counts: both.
  const auto blind = findingsOf(chain(kC, false).build());
  const Finding* all = findingById(blind, "cross-stream-kernel-wait");
  REQUIRE(all != nullptr);
  CHECK(all->count == 2);
  CHECK(all->base_severity == Severity::kInfo);
  // K1 -> K2 share A: that wait stays; K3 -> K4 share nothing: dropped, a warning.
  const auto seen = findingsOf(chain(kC, true).build());
  const Finding* one = findingById(seen, "cross-stream-kernel-wait");
  REQUIRE(one != nullptr);
  CHECK(one->count == 1);
  CHECK(one->base_severity == Severity::kWarning);
  CHECK(one->estimated_ns < all->estimated_ns);
  // K4 touches A, which K1 wrote: the e2 wait is K1 -> K4's only order (through K2, K3), so it
  // stays as well and nothing is claimed.
  CHECK(findingById(findingsOf(chain(kA, true).build()), "cross-stream-kernel-wait") == nullptr);
}

TEST_CASE("data order: a host synchronize between two ops orders them, so the wait orders nothing") {
  // K1 (13) writes A; the host synchronizes the device after it; K2 (14) reads A behind a wait for
  // an event recorded after K1. The synchronize already orders K1 before K2.
  TraceBuilder b;
  const GpuOp k1 = b.launch(13, 1, 2, 10, 110);
  b.deviceSynchronize(3, 111);
  b.eventRecord(13, 1, 112, 113);
  const GpuOp filler = b.launch(13, 114, 115, 120, 400);  // keeps 13 busy after the record
  b.streamWaitEvent(14, 116, 117, 1);
  const GpuOp k2 = b.launch(14, 118, 119, 122, 222);
  b.touches(k1, kA, kBytes);
  b.touches(filler, kB, kBytes);
  b.touches(k2, kA, kBytes);
  Trace trace = b.build();
  const diagnosis::DeviceView view(trace, Scope{}, 0);
  const std::vector<StreamWait> waits = streamWaits(view);
  REQUIRE(waits.size() == 1);
  CHECK(recordsOpBuffers(view));
  CHECK(waitsOrderingData(view, waits, {true})[0] == DataOrder::kFree);
  // Without the synchronize the same wait orders K1 before K2.
  TraceBuilder unsynced;
  const GpuOp u1 = unsynced.launch(13, 1, 2, 10, 110);
  unsynced.eventRecord(13, 1, 3, 4);
  unsynced.streamWaitEvent(14, 5, 6, 1);
  const GpuOp u2 = unsynced.launch(14, 7, 8, 112, 212);
  unsynced.touches(u1, kA, kBytes);
  unsynced.touches(u2, kA, kBytes, BufferAccess::kRead);
  Trace trace2 = unsynced.build();
  const diagnosis::DeviceView view2(trace2, Scope{}, 0);
  CHECK(waitsOrderingData(view2, streamWaits(view2), {true})[0] == DataOrder::kOrders);
}

TEST_CASE("data order: a kernel waiting for a copy-in it does not read is event-wait-serialization's") {
  // The copy writes B; the kernel of stream 14 touches only A. Without buffers, a kernel waiting
  // for an HtoD copy reads it (the usual data flow): no finding. With them the wait orders nothing.
  auto build = [](bool with_buffers) {
    TraceBuilder b;
    const GpuOp copy = b.copyCall("cudaMemcpyAsync_v3020", 13, 1, 2, 5, 205, CopyKind::kHtoD);
    b.eventRecord(13, 1, 3, 4);
    b.streamWaitEvent(14, 5, 6, 1);
    const GpuOp k = b.launch(14, 7, 8, 208, 308);
    if (with_buffers) {
      b.touches(copy, kC, 4096, BufferAccess::kRead);
      b.touches(copy, kB, 4096, BufferAccess::kWrite);
      b.touches(k, kA, kBytes);
    }
    return b.build();
  };
  CHECK(findingById(findingsOf(build(false)), "event-wait-serialization") == nullptr);
  const Finding* f = findingById(findingsOf(build(true)), "event-wait-serialization");
  REQUIRE(f != nullptr);
  CHECK(f->count == 1);
}

TEST_CASE("data order: two reads of one buffer do not conflict; an op without buffers conflicts") {
  auto build = [](bool k2_recorded) {
    TraceBuilder b;
    const GpuOp copy = b.copyCall("cudaMemcpyAsync_v3020", 13, 1, 2, 5, 205, CopyKind::kDtoH);
    b.eventRecord(13, 1, 3, 4);
    b.streamWaitEvent(14, 5, 6, 1);
    const GpuOp copy2 = b.copyCall("cudaMemcpyAsync_v3020", 14, 7, 8, 208, 408, CopyKind::kDtoD);
    b.touches(copy, kA, 4096, BufferAccess::kRead);
    b.touches(copy, kC, 4096, BufferAccess::kWrite);
    if (k2_recorded) {
      b.touches(copy2, kA, 4096, BufferAccess::kRead);
      b.touches(copy2, kB, 4096, BufferAccess::kWrite);
    }
    return b.build();
  };
  Trace reads = build(true);
  const diagnosis::DeviceView view(reads, Scope{}, 0);
  CHECK(waitsOrderingData(view, streamWaits(view), {true})[0] == DataOrder::kFree);
  Trace unknown = build(false);
  const diagnosis::DeviceView view2(unknown, Scope{}, 0);
  CHECK(waitsOrderingData(view2, streamWaits(view2), {true})[0] == DataOrder::kOrders);
}

TEST_CASE("data order: slices of one buffer are unsure, and the rule judges them as without buffers") {
  // The bundled wait-chain's shape: each kernel writes its own slice of one output allocation, and
  // each waits for the one before on another stream. A kernel's row runs from its pointer to the
  // allocation's end, so the rows overlap without saying whether the kernels do.
  constexpr std::uint64_t kSlice = 4096;
  auto build = [&](bool slices) {
    TraceBuilder b;
    const GpuOp k1 = b.launch(13, 1, 2, 10, 110);
    b.eventRecord(13, 1, 3, 4);
    b.streamWaitEvent(14, 5, 6, 1);
    const GpuOp k2 = b.launch(14, 7, 8, 113, 213);
    b.eventRecord(14, 2, 9, 10);
    b.streamWaitEvent(15, 11, 12, 2);
    const GpuOp k3 = b.launch(15, 13, 14, 216, 316);
    const std::uint64_t step = slices ? kSlice : 0;
    b.touches(k1, kA, kBytes);
    b.touches(k2, kA + step, kBytes - step);
    b.touches(k3, kA + 2 * step, kBytes - 2 * step);
    return b.build();
  };
  Trace sliced = build(true);
  const diagnosis::DeviceView view(sliced, Scope{}, 0);
  const std::vector<StreamWait> waits = streamWaits(view);
  REQUIRE(waits.size() == 2);
  const std::vector<DataOrder> order = waitsOrderingData(view, waits, {true, true});
  CHECK(order[0] == DataOrder::kUnsure);
  CHECK(order[1] == DataOrder::kUnsure);
  // Judged as without buffers: both waits held kernels of different streams, an info finding.
  const Finding* f = findingById(findingsOf(build(true)), "cross-stream-kernel-wait");
  REQUIRE(f != nullptr);
  CHECK(f->count == 2);
  CHECK(f->base_severity == Severity::kInfo);
  // Handed the same pointer, the kernels conflict for certain: the waits stay, nothing claimed.
  Trace same = build(false);
  const diagnosis::DeviceView view2(same, Scope{}, 0);
  const std::vector<DataOrder> order2 = waitsOrderingData(view2, streamWaits(view2), {true, true});
  CHECK(order2[0] == DataOrder::kOrders);
  CHECK(order2[1] == DataOrder::kOrders);
  CHECK(findingById(findingsOf(build(false)), "cross-stream-kernel-wait") == nullptr);
}

TEST_CASE("data order: a kernel's pointer inside a copy's range conflicts for certain, beside it unsure") {
  auto build = [](std::uint64_t kernel_pointer) {
    TraceBuilder b;
    const GpuOp copy = b.copyCall("cudaMemcpyAsync_v3020", 13, 1, 2, 5, 205, CopyKind::kHtoD);
    b.eventRecord(13, 1, 3, 4);
    b.streamWaitEvent(14, 5, 6, 1);
    const GpuOp k = b.launch(14, 7, 8, 208, 308);
    b.touches(copy, kC, 4096, BufferAccess::kRead);
    b.touches(copy, kA + 8192, 4096, BufferAccess::kWrite);
    b.touches(k, kernel_pointer, kA + kBytes - kernel_pointer);
    return b.build();
  };
  Trace inside = build(kA + 8192 + 256);
  const diagnosis::DeviceView view(inside, Scope{}, 0);
  CHECK(waitsOrderingData(view, streamWaits(view), {true})[0] == DataOrder::kOrders);
  Trace before = build(kA);  // the kernel's slice starts before the copy's: unsure
  const diagnosis::DeviceView view2(before, Scope{}, 0);
  CHECK(waitsOrderingData(view2, streamWaits(view2), {true})[0] == DataOrder::kUnsure);
  Trace after = build(kA + 8192 + 4096);  // starts where the copy's range ends: no overlap
  const diagnosis::DeviceView view3(after, Scope{}, 0);
  CHECK(waitsOrderingData(view3, streamWaits(view3), {true})[0] == DataOrder::kFree);
}

}  // namespace cuoverlap
