// sync-memcpy: copies issued with a synchronous API (cudaMemcpy, cudaMemcpy2D, cuMemcpyHtoD, ...;
// any copy API without "Async") that have GPU work before and after them. The host blocks until
// the copy (and all earlier work of the legacy stream) is done, so it cannot queue further work.
// Cost: what the fix (lab transform async-copy: cudaMemcpyAsync on a stream, a synchronize only
// where the host reads the result) saves in the what-if schedule with the host
// (schedule_estimate.h; event waits kept): each host-to-device (or device-to-device) copy call no
// longer waits for the device and returns after an asynchronous call's time, its copy on the
// stream of its consumer (the op its thread launched next after its run of copies); a
// device-to-host copy still waits (the host copies data back to read it, which a trace cannot
// show it does not), on the stream of the op its thread launched before it. A
// run of small cudaMemcpy calls pays a host round trip per piece, which the device idles through
// (in the lab, 6.5 ms of a 9.7 ms program). Without runtime data, or when the schedule has no
// host, as a host-blocking call (synchronous_transfer.h, host_blocking_cost.cpp): at most its
// lead plus the drain it caused. Where (ledger): those charged idle stretches; the ledger places a
// what-if saving larger than them in idle time no earlier finding holds (cost_ledger.h), so a
// copy that returned into a long gap of the host's own work (a JIT compile) does not hold that gap.
// Needs: the launch call, or the collector's async flag.
#include <fmt/format.h>

#include "diagnosis/rules/rules.h"
#include "diagnosis/rules/synchronous_transfer.h"
#include "diagnosis/pinned_rate.h"
#include "diagnosis/schedule_estimate.h"
#include "diagnosis/stream_waits.h"
#include "diagnosis/thread_launches.h"

#include <algorithm>
#include <optional>

namespace cuoverlap::diagnosis {
namespace {

enum class Moved : std::uint8_t { kNo, kToConsumer, kToProducer };

// Per position the stream an op runs on in the fix: its own, except that a copy moved to its
// consumer runs on the stream of the first op its thread launched after it that is not itself
// moved, and one moved to its producer (a DtoH copy) on that of the last one before it.
std::vector<std::uint64_t> fixLanes(const DeviceView& view, const std::vector<Moved>& moved) {
  std::vector<std::uint64_t> own;
  for (const ScopedOp& scoped : view.ops()) own.push_back(DeviceView::streamKey(view.op(scoped)));
  std::vector<std::uint64_t> lane = own;
  const ThreadLaunches launches(view);
  for (const std::vector<std::size_t>& list : launches.threads()) {
    std::optional<std::uint64_t> producer;  // the stream of the last unmoved op so far
    for (const std::size_t p : list) {
      if (moved[p] == Moved::kNo) producer = own[p];
      if (moved[p] == Moved::kToProducer && producer) lane[p] = *producer;
    }
    std::optional<std::uint64_t> consumer;  // walking back: the stream of the next unmoved op
    for (auto it = list.rbegin(); it != list.rend(); ++it) {
      if (moved[*it] == Moved::kNo) consumer = own[*it];
      if (moved[*it] == Moved::kToConsumer && consumer) lane[*it] = *consumer;
    }
  }
  return lane;
}

// The what-if saving of issuing the view's synchronous HtoD/DtoD copies asynchronously; 0 when
// the host timeline is empty. As the fix (the lab's async-copy) does, each copy moves to the
// stream of its consumer, the op its thread launched next once the run of copies it belongs to
// ends (upload, then compute): that op still waits for it, other streams no longer do.
Ns asyncCopySaving(const DeviceView& view) {
  const HostTimeline host = buildHostTimeline(view);
  if (host.empty()) return 0;
  std::vector<CallChange> changed;
  std::vector<Moved> moved(view.ops().size(), Moved::kNo);
  for (const HostBarrier& barrier : host.barriers) {
    if (view.callKind(barrier.call) != ApiKind::kMemcpySync) continue;
    if (barrier.waited_for.size() != 1) continue;
    const std::size_t copy = barrier.waited_for.front();
    if (engineOf(view.op(view.ops()[copy])) == Engine::kD2H) {
      moved[copy] = Moved::kToProducer;
      continue;
    }
    changed.push_back({barrier.call, false, std::min(barrier.own, kAsyncCopyCallNs)});
    moved[copy] = Moved::kToConsumer;
  }
  if (changed.empty()) return 0;
  const ScheduleModel model(view, host);
  const std::vector<OrderEdge> waits = waitEdges(streamWaits(view));
  const ScheduleModel fixed = model.withLanes(fixLanes(view, moved));
  return std::max<Ns>(0, model.span(waits) - fixed.span(waits, {}, {}, changed));
}

}  // namespace

std::optional<Finding> findSyncMemcpy(const DeviceView& view) {
  FindingBuilder builder(view, "sync-memcpy", Severity::kWarning);
  addSynchronousTransfers(view, OpKind::kMemcpy, ApiKind::kMemcpySync, builder);
  if (builder.count() > 0) {
    const Ns what_if = asyncCopySaving(view);
    const Ns cost = what_if > 0 ? what_if : builder.time();
    builder.estimateSaving(cost);
  }
  return builder.build(
      fmt::format("{} synchronous copies between GPU work blocked the host", builder.count()),
      "Use cudaMemcpyAsync on a created stream with pinned host memory, and synchronize only "
      "where the host needs the data (cudaEventSynchronize on an event recorded after the copy)");
}

}  // namespace cuoverlap::diagnosis
