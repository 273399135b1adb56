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

// One stream's work: its ops, copies and kernels, and the copies the split could hide.
struct StreamWork {
  std::size_t ops = 0, copies = 0, kernels = 0;
  std::vector<Interval> hideable;
  std::vector<Interval> kernel_runs;
  Ns hideable_union = 0, kernel_union = 0;
};

// Ops come in start order (one stream: also issue order), so the unions stream through O(1) state.
StreamWork workOf(const DeviceView& view, std::uint64_t stream) {
  const auto& ops = view.ops();
  StreamWork work;
  UnionLength hideable_union;
  UnionLength kernel_union;
  std::optional<std::size_t> previous;  // the previous op of the stream
  for (std::size_t pos = 0; pos < ops.size(); ++pos) {
    const GpuOp& op = view.op(ops[pos]);
    if (DeviceView::streamKey(op) != stream) continue;
    ++work.ops;
    std::optional<std::size_t> next;
    for (std::size_t q = pos + 1; q < ops.size() && !next; ++q) {
      if (DeviceView::streamKey(view.op(ops[q])) == stream) next = q;
    }
    if (op.kind == OpKind::kKernel) {
      ++work.kernels;
      kernel_union.add(ops[pos].start, ops[pos].end);
      work.kernel_runs.push_back({ops[pos].start, ops[pos].end});
    }
    // Every neighbour it has on the stream is a kernel (the run's first or last op has one).
    const bool chain_link =
        (!previous || view.op(ops[*previous]).kind == OpKind::kKernel) &&
        (!next || view.op(ops[*next]).kind == OpKind::kKernel);
    previous = pos;
    if (op.kind != OpKind::kMemcpy) continue;
    ++work.copies;
    if (!hostDeviceTransfer(op) || chain_link) continue;
    hideable_union.add(ops[pos].start, ops[pos].end);
    work.hideable.push_back({ops[pos].start, ops[pos].end});
  }
  work.hideable_union = hideable_union.length();
  work.kernel_union = kernel_union.length();
  return work;
}

// What splitting `stream`'s chunks over three streams saves (0 without two chunks).
Ns splitSaving(const DeviceView& view, const HostTimeline& host, const ScheduleModel& model,
               const std::vector<OrderEdge>& waits, std::uint64_t stream) {
  const std::vector<std::uint64_t> lanes = chunkLanes(view, stream);
  if (lanes.empty()) return 0;
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
  return std::max<Ns>(0, model.span(waits) - model.withLanes(lanes).span(waits, {}, {}, async_calls));
}

// The streams that ran kernels and copies (memsets may run anywhere: a cudaMemset before the loop).
std::vector<std::uint64_t> workStreams(const DeviceView& view) {
  std::vector<std::uint64_t> streams;
  for (const ScopedOp& scoped : view.ops()) {
    const GpuOp& op = view.op(scoped);
    if (op.kind != OpKind::kMemset) streams.push_back(DeviceView::streamKey(op));
  }
  std::sort(streams.begin(), streams.end());
  streams.erase(std::unique(streams.begin(), streams.end()), streams.end());
  return streams;
}

// Whether the stream's work ran mostly alone: less than half of its busy time overlapped the
// kernels and copies of other streams. A stream that already runs beside others (one of a
// pipeline's streams) is no single stream to split.
bool ranMostlyAlone(const DeviceView& view, std::uint64_t stream) {
  std::vector<Interval> own, others;
  for (const ScopedOp& scoped : view.ops()) {
    const GpuOp& op = view.op(scoped);
    if (op.kind == OpKind::kMemset) continue;
    (DeviceView::streamKey(op) == stream ? own : others).push_back({scoped.start, scoped.end});
  }
  const std::vector<Interval> own_union = unionOf(std::move(own));
  const Ns busy = totalLength(own_union);
  const Ns shared = totalLength(intersectionOf(own_union, unionOf(std::move(others))));
  return 2 * shared < busy;
}

}  // namespace

std::optional<Finding> findSingleStream(const DeviceView& view) {
  if (view.empty()) return std::nullopt;
  const std::vector<std::uint64_t> streams = workStreams(view);
  if (streams.empty()) return std::nullopt;
  const bool one_stream = streams.size() == 1;
  const HostTimeline host = buildHostTimeline(view);
  const ScheduleModel model(view, host);
  const std::vector<OrderEdge> waits = waitEdges(streamWaits(view));
  // The stream whose split saves the most (with several streams, only a stream that a split can
  // cut into chunks counts: a loop of its own among the others' work).
  std::optional<std::uint64_t> chosen;
  StreamWork work;
  Ns cost = 0;
  for (std::uint64_t stream : streams) {
    StreamWork candidate = workOf(view, stream);
    if (candidate.hideable.empty() || candidate.kernels == 0 || candidate.ops < 3) continue;
    if (!one_stream && !ranMostlyAlone(view, stream)) continue;
    Ns saving = splitSaving(view, host, model, waits, stream);
    if (saving == 0 && one_stream && chunkLanes(view, stream).empty()) {
      saving = std::min(candidate.hideable_union, candidate.kernel_union);
    }
    if (!chosen || saving > cost) {
      chosen = stream;
      cost = saving;
      work = std::move(candidate);
    }
  }
  if (!chosen || cost < kMinimumCostNs) return std::nullopt;
  FindingBuilder builder(view, "single-stream", Severity::kWarning);
  const GpuOp* first_on = nullptr;
  for (const ScopedOp& scoped : view.ops()) {
    if (DeviceView::streamKey(view.op(scoped)) != *chosen) continue;
    first_on = &view.op(scoped);
    break;
  }
  const GpuOp& first = *first_on;
  builder.add(Ns{0}, evidenceForOp(view, first,
                                   fmt::format("{} {} copies and {} kernels on stream {}; {} "
                                               "host<->device copies could run beside kernels",
                                               one_stream ? "all" : "a loop of", work.copies,
                                               work.kernels, first.stream_id, work.hideable.size())));
  std::vector<Interval> where = std::move(work.hideable);
  where.insert(where.end(), work.kernel_runs.begin(), work.kernel_runs.end());
  for (const Interval& run : unionOf(std::move(where))) builder.addRegion(run);
  builder.estimateSaving(cost);
  auto finding = builder.build(
      one_stream ? fmt::format("{} copies and {} kernels all ran on stream {}: nothing could overlap",
                               work.copies, work.kernels, first.stream_id)
                 : fmt::format("{} copies and {} kernels ran one after another on stream {}: "
                               "none of its chunks could overlap another",
                               work.copies, work.kernels, first.stream_id),
      "Split the work into chunks and issue each chunk's copy-in, kernel and copy-out to its own "
      "created stream (cudaStreamCreate), with pinned host buffers and one device buffer per "
      "stream, so that copies of one chunk overlap kernels of another");
  if (finding) finding->count = work.ops;
  return finding;
}

}  // namespace cuoverlap::diagnosis
