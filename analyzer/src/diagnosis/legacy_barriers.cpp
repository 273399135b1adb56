#include "diagnosis/legacy_barriers.h"

#include <algorithm>
#include <iterator>
#include <limits>
#include <map>
#include <unordered_map>
#include <utility>

#include "diagnosis/median.h"
#include "diagnosis/stream_waits.h"

namespace cuoverlap::diagnosis {

std::vector<OrderEdge> legacyBarrierEdges(const DeviceView& view) {
  std::vector<std::uint64_t> lane;
  lane.reserve(view.ops().size());
  for (const ScopedOp& scoped : view.ops()) lane.push_back(DeviceView::streamKey(view.op(scoped)));
  return legacyBarrierEdges(view, lane);
}

std::vector<OrderEdge> legacyBarrierEdges(const DeviceView& view, const std::vector<std::uint64_t>& lane,
                                          const std::unordered_set<std::uint64_t>& created_blocking,
                                          bool moved_kernels_in_order) {
  enum class Kind : std::uint8_t { kOther, kLegacy, kBlocking };
  std::unordered_map<std::uint64_t, Kind> kind_of_lane;  // what each stream of the view is
  const auto& ops = view.ops();
  for (const ScopedOp& scoped : ops) {
    const GpuOp& op = view.op(scoped);
    const Stream* stream = view.stream(op);
    const Kind kind = view.onLegacyDefaultStream(op) ? Kind::kLegacy
                      : stream != nullptr && stream->flag == StreamFlag::kDefault ? Kind::kBlocking
                                                                                 : Kind::kOther;
    kind_of_lane.emplace(DeviceView::streamKey(op), kind);
  }
  for (std::uint64_t created : created_blocking) kind_of_lane.emplace(created, Kind::kBlocking);
  using Launches = std::vector<std::pair<Ns, std::size_t>>;  // (launch start, position), sorted
  std::map<std::uint32_t, std::map<std::uint64_t, Launches>> blocking;  // context -> lane
  std::vector<std::pair<Ns, std::size_t>> legacy;
  for (std::size_t pos = 0; pos < ops.size() && pos < lane.size(); ++pos) {
    const GpuOp& op = view.op(ops[pos]);
    const auto call = view.launchCall(op);
    const auto kind = kind_of_lane.find(lane[pos]);
    if (!call || kind == kind_of_lane.end()) continue;
    const Ns launched = submittedAt(view, *call, ops[pos].start);
    if (kind->second == Kind::kLegacy) legacy.emplace_back(launched, pos);
    if (kind->second == Kind::kBlocking) blocking[op.context_id][lane[pos]].emplace_back(launched, pos);
  }
  std::vector<OrderEdge> edges;
  for (auto& [context, streams] : blocking) {
    for (auto& [stream, list] : streams) std::sort(list.begin(), list.end());
  }
  // Whether op p's recorded times show where the barrier put it: it runs on the stream it ran on
  // in the trace, or (`moved_kernels_in_order`) it is a kernel moved to a what-if's lane from a
  // stream the barrier ordered in the trace (the legacy stream, a blocking one): its launch call,
  // which the what-if leaves as it was, submitted it where it ran.
  const auto recorded = [&](std::size_t p) {
    const GpuOp& op = view.op(ops[p]);
    const std::uint64_t own = DeviceView::streamKey(op);
    if (lane[p] == own) return true;
    if (!moved_kernels_in_order || op.kind != OpKind::kKernel) return false;
    const auto kind = kind_of_lane.find(own);
    return kind != kind_of_lane.end() && kind->second != Kind::kOther;
  };
  for (const auto& [launched, pos] : legacy) {
    const auto context = blocking.find(view.op(ops[pos]).context_id);
    if (context == blocking.end()) continue;
    for (const auto& [stream, list] : context->second) {
      auto after = std::lower_bound(list.begin(), list.end(), std::make_pair(launched, std::size_t{0}));
      if (recorded(pos)) {
        // The barrier ran every op of the stream submitted before X before it and every later
        // one after it, so where their recorded times disagree with the calls' order (a call
        // held in the driver behind another thread's submitted later than it began), the
        // recorded times are the submission order.
        const ScopedOp& x = ops[pos];
        while (after != list.end() && recorded(after->second) && ops[after->second].end <= x.start) ++after;
        while (after != list.begin() && recorded(std::prev(after)->second) &&
               ops[std::prev(after)->second].start >= x.end) {
          --after;
        }
      }
      if (after != list.begin()) edges.push_back({std::prev(after)->second, pos});
      if (after != list.end()) edges.push_back({pos, after->second});
    }
  }
  // The lag is sampled on the edges between ops the trace shows where the barrier put them.
  std::vector<OrderEdge> as_recorded;
  for (const OrderEdge& e : edges) {
    if (recorded(e.from) && recorded(e.to)) as_recorded.push_back(e);
  }
  setBarrierLags(view, as_recorded);
  std::map<std::pair<std::size_t, std::size_t>, Ns> lag_of;
  for (const OrderEdge& e : as_recorded) lag_of[{e.from, e.to}] = e.lag;
  Ns any = 0;  // edges not between recorded ops: the recorded edges' median
  if (!as_recorded.empty()) {
    std::vector<Ns> all;
    for (const OrderEdge& e : as_recorded) all.push_back(e.lag);
    any = medianOf(std::move(all));
  }
  for (OrderEdge& e : edges) {
    const auto it = lag_of.find({e.from, e.to});
    e.lag = std::max(e.lag, it != lag_of.end() ? it->second : any);
  }
  return edges;
}

void setBarrierLags(const DeviceView& view, std::vector<OrderEdge>& edges) {
  const auto& ops = view.ops();
  std::vector<Ns> previous_end(ops.size(), std::numeric_limits<Ns>::min());
  std::unordered_map<std::uint64_t, Ns> stream_end;  // per stream, the latest end of its ops so far
  for (std::size_t pos = 0; pos < ops.size(); ++pos) {
    const auto [it, first] = stream_end.try_emplace(DeviceView::streamKey(view.op(ops[pos])), ops[pos].end);
    if (first) continue;
    previous_end[pos] = it->second;
    it->second = std::max(it->second, ops[pos].end);
  }
  const auto pairOf = [&](const OrderEdge& e) {
    return engineSlot(engineOf(view.op(ops[e.from]))) * kEngineSlots + engineSlot(engineOf(view.op(ops[e.to])));
  };
  std::vector<Ns> lags;
  std::map<std::size_t, std::vector<Ns>> per_pair;
  for (const OrderEdge& e : edges) {
    const ScopedOp& y = ops[e.from];
    const ScopedOp& x = ops[e.to];
    if (x.start < y.end || previous_end[e.to] > y.end) continue;
    const auto call = view.launchCall(view.op(x));
    if (!call) continue;
    const RuntimeCall& c = view.call(*call);
    if (c.end > y.end || c.end > x.start || view.opsEndingIn(y.end, x.start, true) != 0) continue;
    lags.push_back(x.start - y.end);
    per_pair[pairOf(e)].push_back(x.start - y.end);
  }
  if (lags.empty()) return;
  const Ns any = medianOf(std::move(lags));
  for (OrderEdge& e : edges) {
    const auto pair = per_pair.find(pairOf(e));
    e.lag = std::max(e.lag, pair != per_pair.end() ? medianOf(pair->second) : any);
  }
}

std::vector<OrderEdge> programOrderEdges(const DeviceView& view) {
  std::vector<OrderEdge> edges = waitEdges(streamWaits(view));
  const std::vector<OrderEdge> legacy = legacyBarrierEdges(view);
  edges.insert(edges.end(), legacy.begin(), legacy.end());
  return edges;
}

}  // namespace cuoverlap::diagnosis
