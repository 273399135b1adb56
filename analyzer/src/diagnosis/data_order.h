// Which cross-stream waits order a data dependence, from the memory each op touched
// (Trace::op_buffers: our collector records it; nsys exports have none).
//
// Two ops of different streams conflict when one writes memory the other touches (a kernel's
// argument may be read or written: it counts as a write; an op without recorded buffers, such as a
// graph's kernel, conflicts with every op). A kernel's row runs from the pointer it was handed to
// its allocation's end, as how much of it the kernel touches is not known: two kernels handed the
// same pointer, or a kernel whose pointer lies in a copy's or memset's range, conflict for certain;
// ranges that only overlap (slices of one buffer, each op handed its own) are unsure. A wait orders data when dropping it unorders a
// conflicting pair that the program ordered: call sites (the waits of one event on one stream: one
// call, run again by a loop's body) are taken in the order of their first wait, and a site is
// dropped when, without its waits and those of the sites dropped before it, every conflicting pair
// whose earlier op reached the later one through one of its waits (the earlier op among what the
// wait's Y was ordered after, the later among what was ordered after the wait's X) stays ordered:
// through stream order, the waits kept, the legacy stream's barriers (legacy_barriers.h), or a
// host synchronization of the later op's thread (a device or context synchronize, a synchronize of
// the earlier op's stream, or a synchronous copy or memset that the earlier op reached) that began
// after the earlier op was launched and ended before the later one was. This is the lab's drop-wait
// transform (docs/lab.md) read from a trace.
// Bounds: per wait, the 48 nearest ops on each side and 4,096 ops searched per pair: a wait whose
// pairs reach further counts as ordering data (kept), as does one whose X or Y has no launch call.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "diagnosis/device_view.h"
#include "diagnosis/stream_waits.h"

namespace cuoverlap::diagnosis {

// Whether the view's trace records which memory its ops touched.
bool recordsOpBuffers(const DeviceView& view);

// What a wait's call site orders: nothing that conflicts (it can go), a certain conflict (it must
// stay), or only unsure ones (kept while later sites are decided; the caller judges it as it
// would without op buffers).
enum class DataOrder : std::uint8_t { kFree, kOrders, kUnsure };

// Per wait: kFree for a wait that is not one of `candidates`, else its call site's order. For a view
// recordsOpBuffers says yes to; every candidate orders data when the trace has no op buffers.
std::vector<DataOrder> waitsOrderingData(const DeviceView& view, const std::vector<StreamWait>& waits,
                                         const std::vector<bool>& candidates);

// Per wait: whether it must stay. Where the data decided, its order; where it was unsure,
// `judge()`'s verdict (the rule's guard without op buffers), asked only if some wait was unsure.
// `by_data` (optional): set to whether the data decided every wait.
template <typename Judge>
std::vector<bool> waitsToKeep(const std::vector<DataOrder>& order, Judge&& judge, bool* by_data = nullptr) {
  const bool decided =
      std::none_of(order.begin(), order.end(), [](DataOrder o) { return o == DataOrder::kUnsure; });
  if (by_data != nullptr) *by_data = decided;
  const std::vector<bool> judged = decided ? std::vector<bool>() : judge();
  std::vector<bool> keep(order.size());
  for (std::size_t w = 0; w < order.size(); ++w) {
    keep[w] = order[w] == DataOrder::kOrders || (order[w] == DataOrder::kUnsure && judged[w]);
  }
  return keep;
}

}  // namespace cuoverlap::diagnosis
