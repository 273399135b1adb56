// legacy-default-stream: an op issued to the legacy default (null) stream while another blocking
// stream of the same context had work. The legacy stream is an implicit barrier: its op waits for
// all earlier work of the context's blocking streams, and their later work waits for it.
// An op X on the null stream counts when some op Y of another blocking stream (flag "default" in
// the stream table) of the same context was in flight when X's launch call began (Y launched
// earlier and not yet finished), or was launched while X was in flight.
// Cost: how much the span would shrink without the barriers: the what-if schedule of the device's
// ops with, for each counted X, "the last op of every other blocking stream launched before X
// precedes X" and "X precedes the first op of every other blocking stream launched after X", minus
// the same schedule without those edges (diagnosis/schedule_estimate.h; event waits are kept).
// Where: each X's own run and the stretches the ops after it were held back ([ready, start)).
// Needs: the null stream (stream flag or context nullStreamId), stream flags, launch calls.
#include <algorithm>
#include <iterator>
#include <map>

#include <fmt/format.h>

#include "diagnosis/finding_builder.h"
#include "diagnosis/rules/rules.h"
#include "diagnosis/schedule_estimate.h"
#include "diagnosis/stream_waits.h"

namespace cuoverlap::diagnosis {
namespace {

// The blocking-stream ops of one context, ordered by launch start, with the running maximum of
// their ends ("was any of them in flight at time t", "was any launched in [a, b)"), and per stream
// the same launches (the barrier's edges in the what-if schedule).
struct BlockingStreamLaunches {
  std::vector<Ns> launch_start;
  std::vector<Ns> max_end;
  std::map<std::uint64_t, std::vector<std::pair<Ns, std::size_t>>> per_stream;  // (launch, position)

  bool inFlightAt(Ns t) const {
    const auto k = std::lower_bound(launch_start.begin(), launch_start.end(), t) -
                   launch_start.begin();
    return k > 0 && max_end[k - 1] > t;
  }
  bool launchedIn(Ns from, Ns to) const {
    auto it = std::lower_bound(launch_start.begin(), launch_start.end(), from);
    return it != launch_start.end() && *it < to;
  }
  // The barrier of a null-stream op at `position` launched at `launched`: the last op of each
  // blocking stream launched before it precedes it, and it precedes the first one launched after.
  void addBarrierEdges(Ns launched, std::size_t position, std::vector<OrderEdge>& edges) const {
    for (const auto& [stream, list] : per_stream) {
      auto after = std::lower_bound(list.begin(), list.end(), std::make_pair(launched, std::size_t{0}));
      if (after != list.begin()) edges.push_back({std::prev(after)->second, position});
      if (after != list.end()) edges.push_back({position, after->second});
    }
  }
};

std::map<std::uint32_t, BlockingStreamLaunches> blockingLaunchesPerContext(const DeviceView& view) {
  std::map<std::uint32_t, std::vector<std::pair<Ns, Ns>>> launches;
  std::map<std::uint32_t, BlockingStreamLaunches> result;
  const auto& ops = view.ops();
  for (std::size_t pos = 0; pos < ops.size(); ++pos) {
    const GpuOp& op = view.op(ops[pos]);
    const Stream* stream = view.stream(op);
    const auto call = view.launchCall(op);
    if (!call || !stream || stream->flag != StreamFlag::kDefault) continue;
    if (view.onLegacyDefaultStream(op)) continue;
    launches[op.context_id].emplace_back(view.call(*call).start, ops[pos].end);
    result[op.context_id].per_stream[DeviceView::streamKey(op)].emplace_back(view.call(*call).start, pos);
  }
  for (auto& [context, list] : launches) {
    std::sort(list.begin(), list.end());
    BlockingStreamLaunches& out = result[context];
    for (auto& [stream, positions] : out.per_stream) std::sort(positions.begin(), positions.end());
    for (const auto& [start, end] : list) {
      out.launch_start.push_back(start);
      out.max_end.push_back(out.max_end.empty() ? end : std::max(out.max_end.back(), end));
    }
  }
  return result;
}

}  // namespace

std::optional<Finding> findLegacyDefaultStream(const DeviceView& view) {
  const auto per_context = blockingLaunchesPerContext(view);
  if (per_context.empty()) return std::nullopt;
  FindingBuilder builder(view, "legacy-default-stream", Severity::kWarning);
  std::vector<OrderEdge> barriers;
  const auto& ops = view.ops();
  for (std::size_t pos = 0; pos < ops.size(); ++pos) {
    const ScopedOp scoped = ops[pos];
    const GpuOp& op = view.op(scoped);
    const auto call = view.launchCall(op);
    if (!call || !view.onLegacyDefaultStream(op)) continue;
    auto it = per_context.find(op.context_id);
    if (it == per_context.end()) continue;
    const Ns launched = view.call(*call).start;
    if (!it->second.inFlightAt(launched) && !it->second.launchedIn(launched, scoped.end)) continue;
    const std::size_t first_edge = barriers.size();
    it->second.addBarrierEdges(launched, pos, barriers);
    builder.add(Interval{scoped.start, scoped.end},
                evidenceForOp(view, op, fmt::format("{} on the legacy default stream while "
                                                    "other blocking streams had work",
                                                    describeOp(view, op))));
    for (std::size_t e = first_edge; e < barriers.size(); ++e) {
      if (barriers[e].from != pos) continue;
      const auto ready = view.readyTime(barriers[e].to);
      const Ns start = ops[barriers[e].to].start;
      if (ready && *ready < start) builder.addRegion(Interval{std::max(*ready, scoped.start), start});
    }
  }
  if (builder.count() > 0) {
    const ScheduleModel model(view, buildHostTimeline(view));
    builder.estimateSaving(model.savingWithout(waitEdges(streamWaits(view)), barriers));
  }
  return builder.build(
      fmt::format("{} ops on the legacy default stream acted as barriers for the other "
                  "blocking streams of their context",
                  builder.count()),
      "Issue this work to a created stream, create the other streams with "
      "cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), or compile with "
      "--default-stream per-thread");
}

}  // namespace cuoverlap::diagnosis
