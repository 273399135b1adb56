// single-stream: the device's copies and kernels (and memsets) all ran on one stream (null or
// not), so nothing could overlap, and some host<->device transfer could have been hidden under
// compute by splitting the work over streams. A copy is hideable when it moves data between host
// and device (HtoD or DtoH; not device-to-device), uses pinned (or unknown) host memory — a
// pageable copy is synchronous to the host on any stream, pageable-memcpy's case — and is not a
// link of a dependency chain: a copy whose neighbours on the stream are all kernels (kernel ->
// copy -> kernel, or the run's first copy before a kernel, or its last after one) feeds the one
// after it or drains the one before it, and splitting the work over streams cannot run it beside
// either. Fires with at least one kernel and three ops.
// Memsets may run on other streams (a cudaMemset before the loop).
// Cost: the what-if schedule with the host modelled (schedule_estimate.h, host_timeline.h) minus
// the same schedule with the stream's chunks issued round-robin to three streams (chunkLanes; the
// lab's multi-stream) and their copies and memsets asynchronous to the host (the advice's pinned
// buffers; a blocking copy call no longer waits for the device): copies of one chunk run beside
// kernels of another, and kernels that leave room on the SMs run side by side. The ledger charges
// pageable-memcpy and sync-memcpy first, so the part of this saving that making the copies
// asynchronous alone brings is not charged twice. Without two chunks, min(|union of hideable copies|, |union of
// kernels|), the most that overlapping them with compute could save. Not reported under 10 µs.
// Where: the hideable copies.
#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "cuoverlap/intervals.h"
#include "diagnosis/api_names.h"
#include "diagnosis/finding_builder.h"
#include "diagnosis/rules/rules.h"
#include "diagnosis/schedule_estimate.h"
#include "diagnosis/stream_waits.h"

namespace cuoverlap::diagnosis {
namespace {

bool hostDeviceTransfer(const GpuOp& op) {
  const Engine engine = engineOf(op);
  return op.kind == OpKind::kMemcpy && (engine == Engine::kH2D || engine == Engine::kD2H) &&
         op.src_kind != MemKind::kPageable && op.dst_kind != MemKind::kPageable;
}

// The split the fix makes (the lab's multi-stream): the stream's work cut into chunks, a chunk
// starting at each host-to-device copy that follows a kernel or a device-to-host copy, and chunk c
// issued to stream c % kSplitStreams (ops before the first chunk go with it; ops of other streams
// keep theirs). Empty when the stream holds fewer than two chunks: then no loop shows how to cut.
std::vector<std::uint64_t> chunkLanes(const DeviceView& view, std::uint64_t stream) {
  constexpr std::uint64_t kSplitStreams = 3;
  const auto& ops = view.ops();
  std::vector<std::uint64_t> lanes(ops.size());
  std::uint64_t chunk = 0;
  bool seen_kernel = false;
  std::optional<Engine> previous;
  for (std::size_t pos = 0; pos < ops.size(); ++pos) {
    const GpuOp& op = view.op(ops[pos]);
    const std::uint64_t key = DeviceView::streamKey(op);
    if (key != stream) {
      lanes[pos] = key;
      continue;
    }
    const Engine engine = engineOf(op);
    if (op.kind == OpKind::kMemcpy && engine == Engine::kH2D && seen_kernel && previous &&
        *previous != Engine::kH2D) {
      ++chunk;
    }
    if (op.kind == OpKind::kKernel) seen_kernel = true;
    previous = engine;
    // Lanes of the split: above every stream key in use (keys are (context, stream) packed).
    lanes[pos] = ~std::uint64_t{0} - chunk % kSplitStreams;
  }
  if (chunk == 0) return {};
  return lanes;
}

}  // namespace

std::optional<Finding> findSingleStream(const DeviceView& view) {
  if (view.empty()) return std::nullopt;
  const auto& ops = view.ops();
  std::optional<std::uint64_t> stream;  // the stream of the kernels and copies
  for (const ScopedOp& scoped : ops) {
    const GpuOp& op = view.op(scoped);
    if (op.kind == OpKind::kMemset) continue;
    if (!stream) stream = DeviceView::streamKey(op);
    if (DeviceView::streamKey(op) != *stream) return std::nullopt;
  }
  if (!stream) return std::nullopt;
  // Ops come in start order (one stream: also issue order), so the unions stream through O(1) state.
  UnionLength hideable_union;
  UnionLength kernel_union;
  std::vector<Interval> hideable;
  std::size_t copies = 0;
  std::size_t kernels = 0;
  std::size_t on_stream = 0;
  std::optional<std::size_t> previous;  // the previous op of the stream
  for (std::size_t pos = 0; pos < ops.size(); ++pos) {
    const GpuOp& op = view.op(ops[pos]);
    if (DeviceView::streamKey(op) != *stream) continue;
    ++on_stream;
    std::optional<std::size_t> next;
    for (std::size_t q = pos + 1; q < ops.size() && !next; ++q) {
      if (DeviceView::streamKey(view.op(ops[q])) == *stream) next = q;
    }
    if (op.kind == OpKind::kKernel) {
      ++kernels;
      kernel_union.add(ops[pos].start, ops[pos].end);
    }
    const bool is_copy = op.kind == OpKind::kMemcpy;
    // Every neighbour it has on the stream is a kernel (the run's first or last op has one).
    const bool chain_link =
        (!previous || view.op(ops[*previous]).kind == OpKind::kKernel) &&
        (!next || view.op(ops[*next]).kind == OpKind::kKernel);
    previous = pos;
    if (!is_copy) continue;
    ++copies;
    if (!hostDeviceTransfer(op) || chain_link) continue;
    hideable_union.add(ops[pos].start, ops[pos].end);
    hideable.push_back({ops[pos].start, ops[pos].end});
  }
  if (hideable.empty() || kernels == 0 || on_stream < 3) return std::nullopt;
  Ns cost = std::min(hideable_union.length(), kernel_union.length());
  const std::vector<std::uint64_t> lanes = chunkLanes(view, *stream);
  if (!lanes.empty()) {
    const HostTimeline host = buildHostTimeline(view);
    // The advice issues each chunk's copies and memsets asynchronously (pinned buffers): their
    // calls no longer wait for the device.
    std::vector<CallChange> async_calls;
    for (const HostBarrier& barrier : host.barriers) {
      const ApiKind kind = view.callKind(barrier.call);
      if (kind == ApiKind::kMemcpySync || kind == ApiKind::kMemsetSync ||
          kind == ApiKind::kMemcpyAsync || kind == ApiKind::kMemsetAsync) {
        async_calls.push_back({barrier.call, false, barrier.own});
      }
    }
    const ScheduleModel model(view, host);
    const std::vector<OrderEdge> waits = waitEdges(streamWaits(view));
    cost = std::max<Ns>(0, model.span(waits) -
                               model.withLanes(lanes).span(waits, {}, {}, async_calls));
  }
  if (cost < kMinimumCostNs) return std::nullopt;
  FindingBuilder builder(view, "single-stream", Severity::kWarning);
  const GpuOp& first = view.op(ops.front());
  builder.add(Ns{0}, evidenceForOp(view, first,
                                   fmt::format("all {} copies and {} kernels on stream {}; {} "
                                               "host<->device copies could run beside kernels",
                                               copies, kernels, first.stream_id, hideable.size())));
  for (const Interval& copy : unionOf(std::move(hideable))) builder.addRegion(copy);
  builder.estimateSaving(cost);
  auto finding = builder.build(
      fmt::format("{} copies and {} kernels all ran on stream {}: nothing could overlap",
                  copies, kernels, first.stream_id),
      "Split the work into chunks and issue each chunk's copy-in, kernel and copy-out to its own "
      "created stream (cudaStreamCreate), with pinned host buffers and one device buffer per "
      "stream, so that copies of one chunk overlap kernels of another");
  if (finding) finding->count = on_stream;
  return finding;
}

}  // namespace cuoverlap::diagnosis
