#include "diagnosis/legacy_barriers.h"

#include <algorithm>
#include <iterator>
#include <optional>
#include <string_view>
#include <map>
#include <unordered_map>
#include <utility>

#include "diagnosis/median.h"
#include "diagnosis/stream_waits.h"

namespace cuoverlap::diagnosis {

namespace {

// Whether moving the op to another stream leaves its call as it was: a kernel's launch, or an
// asynchronous copy or memset that reads and writes no pageable host memory (the split's lanes
// issue those calls unchanged; it pins pageable buffers and makes synchronous calls asynchronous).
bool callUnchangedByMove(const DeviceView& view, const GpuOp& op) {
  if (op.kind == OpKind::kKernel) return true;
  const auto call = view.launchCall(op);
  if (!call) return false;
  const ApiKind api = view.callKind(*call);
  if (api != ApiKind::kMemcpyAsync && api != ApiKind::kMemsetAsync) return false;
  return op.src_kind != MemKind::kPageable && op.dst_kind != MemKind::kPageable;
}

}  // namespace

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
  // in the trace, or (`moved_kernels_in_order`) it is moved to a what-if's lane from a stream the
  // barrier ordered in the trace (the legacy stream, a blocking one) and its call is one the
  // what-if leaves as it was: a kernel's launch, or an asynchronous copy or memset of pinned or
  // device memory. That call submitted it where it ran: an op of a blocking stream that ran after
  // a legacy op was submitted after it, whatever the stream's queue held (the legacy op waits for
  // every op submitted before it). A synchronous or pageable copy, whose call the split changes,
  // keeps its call's order.
  const auto recorded = [&](std::size_t p) {
    const GpuOp& op = view.op(ops[p]);
    const std::uint64_t own = DeviceView::streamKey(op);
    if (lane[p] == own) return true;
    if (!moved_kernels_in_order || !callUnchangedByMove(view, op)) return false;
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
  // The lag is sampled on the edges between ops the trace shows where the barrier put them; the
  // others take those edges' median.
  std::vector<std::size_t> recorded_at;  // into edges
  std::vector<OrderEdge> as_recorded;
  for (std::size_t k = 0; k < edges.size(); ++k) {
    if (!recorded(edges[k].from) || !recorded(edges[k].to)) continue;
    recorded_at.push_back(k);
    as_recorded.push_back(edges[k]);
  }
  setBarrierLags(view, as_recorded);
  std::vector<Ns> lags;
  for (const OrderEdge& e : as_recorded) lags.push_back(e.lag);
  const Ns any = medianOf(std::move(lags));  // 0 without recorded edges
  std::vector<bool> sampled(edges.size(), false);
  for (std::size_t k = 0; k < recorded_at.size(); ++k) {
    edges[recorded_at[k]].lag = std::max(edges[recorded_at[k]].lag, as_recorded[k].lag);
    sampled[recorded_at[k]] = true;
  }
  for (std::size_t k = 0; k < edges.size(); ++k) {
    if (!sampled[k]) edges[k].lag = std::max(edges[k].lag, any);
  }
  return edges;
}

std::vector<std::int64_t> barrierClasses(const DeviceView& view, const std::vector<std::uint64_t>& lane,
                                         const std::unordered_set<std::uint64_t>& created_blocking) {
  const auto& ops = view.ops();
  std::unordered_map<std::uint64_t, int> kind_of_lane;  // 0 other, 1 legacy, 2 blocking
  for (const ScopedOp& scoped : ops) {
    const GpuOp& op = view.op(scoped);
    const Stream* stream = view.stream(op);
    const int kind = view.onLegacyDefaultStream(op)                                  ? 1
                     : stream != nullptr && stream->flag == StreamFlag::kDefault ? 2
                                                                                   : 0;
    kind_of_lane.emplace(DeviceView::streamKey(op), kind);
  }
  for (std::uint64_t created : created_blocking) kind_of_lane.emplace(created, 2);
  std::vector<std::int64_t> classes(ops.size(), -1);
  for (std::size_t pos = 0; pos < ops.size(); ++pos) {
    const GpuOp& op = view.op(ops[pos]);
    if (!view.launchCall(op)) continue;
    const std::uint64_t key = pos < lane.size() ? lane[pos] : DeviceView::streamKey(op);
    const auto kind = kind_of_lane.find(key);
    if (kind == kind_of_lane.end() || kind->second == 0) continue;
    classes[pos] = 2 * static_cast<std::int64_t>(op.context_id) + (kind->second == 2 ? 1 : 0);
  }
  return classes;
}

BarrierIssue barrierIssueTimes(const DeviceView& view, const std::vector<bool>& released) {
  const auto& ops = view.ops();
  const std::size_t n = ops.size();
  std::vector<std::vector<std::size_t>> into(n);
  for (const OrderEdge& e : legacyBarrierEdges(view)) {
    if (ops[e.from].start < ops[e.to].start) into[e.to].push_back(e.from);
  }
  std::vector<std::size_t> order(n);
  for (std::size_t p = 0; p < n; ++p) order[p] = p;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return ops[a].start < ops[b].start; });
  std::vector<Ns> key(n, 0);
  std::vector<Ns> base(n, 0);
  std::vector<std::int64_t> pusher(n, -1);
  std::unordered_map<std::uint64_t, std::size_t> last_on_stream;
  for (const std::size_t pos : order) {
    const GpuOp& op = view.op(ops[pos]);
    const auto call = view.launchCall(op);
    // A call that returned after its op began (a synchronous or pageable copy, blocked until its
    // op ran) submitted it no later than it began; the order the barrier ran it in comes from
    // the edges below.
    Ns k = ops[pos].start;
    if (call) {
      const RuntimeCall& c = view.call(*call);
      const bool at_start = c.end > ops[pos].start && pos < released.size() && released[pos];
      k = at_start ? c.start : std::min(submittedAt(view, *call, ops[pos].start), ops[pos].start);
    }
    base[pos] = k;
    const auto [it, added] = last_on_stream.try_emplace(DeviceView::streamKey(op), pos);
    if (!added) {
      if (key[it->second] > k) pusher[pos] = static_cast<std::int64_t>(it->second);
      k = std::max(k, key[it->second]);
      it->second = pos;
    }
    for (const std::size_t from : into[pos]) {
      if (key[from] + 1 > k) pusher[pos] = static_cast<std::int64_t>(from);
      k = std::max(k, key[from] + 1);
    }
    key[pos] = k;
  }
  return {std::move(key), std::move(base), std::move(pusher)};
}

void setBarrierLags(const DeviceView& view, std::vector<OrderEdge>& edges) {
  const auto& ops = view.ops();
  EnginePairLags samples;
  for (const OrderEdge& e : edges) {
    const ScopedOp& y = ops[e.from];
    const ScopedOp& x = ops[e.to];
    // Ready (launch call returned, its stream's previous op ended) by the time y ended.
    const std::optional<Ns> ready = view.readyTime(e.to);
    if (x.start < y.end || !ready || *ready > y.end || view.opsEndingIn(y.end, x.start, true) != 0) continue;
    samples.add(view.op(y), view.op(x), x.start - y.end);
  }
  if (samples.empty()) return;
  for (OrderEdge& e : edges) e.lag = std::max(e.lag, samples.lag(view.op(ops[e.from]), view.op(ops[e.to])));
}

std::vector<OrderEdge> programOrderEdges(const DeviceView& view, Ns unsampled_barrier_lag) {
  std::vector<OrderEdge> edges = waitEdges(streamWaits(view));
  std::vector<OrderEdge> legacy = legacyBarrierEdges(view);
  if (std::none_of(legacy.begin(), legacy.end(), [](const OrderEdge& e) { return e.lag > 0; })) {
    for (OrderEdge& e : legacy) e.lag = unsampled_barrier_lag;
  }
  edges.insert(edges.end(), legacy.begin(), legacy.end());
  return edges;
}

bool barrierFollowsIssueOrder(const DeviceView& view, const std::vector<std::int64_t>& classes,
                              std::optional<ApiKind> converted, bool pinned, bool device_memsets) {
  bool several_threads = false;
  std::int64_t first_thread = -1;
  for (std::size_t p = 0; p < classes.size(); ++p) {
    if (classes[p] < 0) continue;
    const GpuOp& op = view.op(view.ops()[p]);
    const auto call = view.launchCall(op);
    if (!call) continue;
    const auto tid = static_cast<std::int64_t>(view.call(*call).tid);
    if (first_thread < 0) first_thread = tid;
    several_threads = several_threads || tid != first_thread;
    if (classes[p] % 2 != 0 || op.kind == OpKind::kKernel) continue;  // a blocking stream's, a launch
    const ApiKind kind = view.callKind(*call);
    const bool pageable = !pinned && op.kind == OpKind::kMemcpy &&
                          (op.src_kind == MemKind::kPageable || op.dst_kind == MemKind::kPageable);
    const bool device_memset =
        device_memsets && kind == ApiKind::kMemsetSync && op.src_kind == MemKind::kDevice;
    const bool synchronous =
        kind == ApiKind::kMemcpySync || (kind == ApiKind::kMemsetSync && !device_memset);
    if (pageable || (synchronous && kind != converted)) return false;
  }
  if (!several_threads) return false;
  for (const std::size_t index : view.calls()) {
    if (view.callKind(index) != ApiKind::kAllocation) continue;
    const std::string_view base = apiBaseName(view.callName(index));
    if (!isDeviceAllocation(base) && !isPinnedHostAllocation(base)) return false;  // a free
  }
  return true;
}

}  // namespace cuoverlap::diagnosis
