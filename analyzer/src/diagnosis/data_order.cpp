#include "diagnosis/data_order.h"

#include <algorithm>
#include <limits>
#include <map>
#include <unordered_map>

#include "diagnosis/legacy_barriers.h"

namespace cuoverlap::diagnosis {
namespace {

constexpr std::size_t kSideOps = 48;
constexpr std::size_t kSearchOps = 4096;
constexpr std::uint32_t kNoWait = std::numeric_limits<std::uint32_t>::max();

enum class Conflict : std::uint8_t { kNone, kUnsure, kCertain };

Conflict pairConflict(const OpBuffer& x, const OpBuffer& y) {
  const bool overlap = x.address < y.address + y.bytes && y.address < x.address + x.bytes;
  if (!overlap || (!x.writes() && !y.writes())) return Conflict::kNone;
  const bool x_kernel = x.access == schema::BufferAccess::kKernelArgument;
  const bool y_kernel = y.access == schema::BufferAccess::kKernelArgument;
  if (!x_kernel && !y_kernel) return Conflict::kCertain;
  if (x_kernel && y_kernel) return x.address == y.address ? Conflict::kCertain : Conflict::kUnsure;
  const OpBuffer& kernel = x_kernel ? x : y;
  const OpBuffer& range = x_kernel ? y : x;
  const bool at_pointer = range.address <= kernel.address && kernel.address < range.address + range.bytes;
  return at_pointer ? Conflict::kCertain : Conflict::kUnsure;
}

struct Edge {
  std::uint32_t to = 0;
  std::uint32_t wait = kNoWait;  // the wait that makes it; kNoWait: stream order or a barrier
};

// A host call of one thread after which the thread's later launches follow some ops: a device or
// context synchronize (every op launched before it began), a stream synchronize (that stream's),
// a synchronous copy or memset (itself).
struct HostBarrier {
  Ns start = 0;
  Ns end = 0;
  SyncType type = SyncType::kUnknown;  // kUnknown: a synchronous transfer
  std::uint64_t stream = 0;
  std::size_t position = 0;
};

// Each op's edges in one array (compressed rows: an op's edges are [offset[p], offset[p + 1])).
class Adjacency {
 public:
  struct Link {
    std::uint32_t from = 0;
    Edge edge;
  };
  Adjacency(std::size_t n, std::vector<Link> links) : offset_(n + 1, 0) {
    std::stable_sort(links.begin(), links.end(), [](const Link& a, const Link& b) { return a.from < b.from; });
    for (const Link& l : links) ++offset_[l.from + 1];
    for (std::size_t p = 0; p < n; ++p) offset_[p + 1] += offset_[p];
    edges_.reserve(links.size());
    for (const Link& l : links) edges_.push_back(l.edge);
  }
  const Edge* begin(std::size_t p) const { return edges_.data() + offset_[p]; }
  const Edge* end(std::size_t p) const { return edges_.data() + offset_[p + 1]; }

 private:
  std::vector<std::uint32_t> offset_;
  std::vector<Edge> edges_;
};

class OrderGraph {
 public:
  OrderGraph(const DeviceView& view, const std::vector<StreamWait>& waits)
      : view_(view), out_(0, {}), in_(0, {}) {
    const std::size_t n = view.ops().size();
    buffers_.resize(n), launch_.assign(n, std::nullopt), thread_.assign(n, 0), stamp_.assign(n, 0);
    std::vector<Adjacency::Link> forward, backward;
    const auto add = [&](std::size_t from, std::size_t to, std::uint32_t wait) {
      forward.push_back({static_cast<std::uint32_t>(from), {static_cast<std::uint32_t>(to), wait}});
      backward.push_back({static_cast<std::uint32_t>(to), {static_cast<std::uint32_t>(from), wait}});
    };
    std::unordered_map<std::uint64_t, std::size_t> last_of_stream;
    for (std::size_t p = 0; p < n; ++p) {
      const GpuOp& op = view.op(view.ops()[p]);
      const std::uint64_t key = DeviceView::streamKey(op);
      if (const auto last = last_of_stream.find(key); last != last_of_stream.end()) add(last->second, p, kNoWait);
      last_of_stream[key] = p;
      buffers_[p] = opBuffersOf(view.trace(), op);
      if (const auto call = view.launchCall(op)) {
        launch_[p] = view.call(*call).start;
        thread_[p] = threadKey(view.call(*call));
      }
    }
    for (std::size_t w = 0; w < waits.size(); ++w) {
      for (std::size_t y : waits[w].waited_for) add(y, waits[w].released, static_cast<std::uint32_t>(w));
    }
    for (const OrderEdge& e : legacyBarrierEdges(view)) add(e.from, e.to, kNoWait);
    out_ = Adjacency(n, std::move(forward));
    in_ = Adjacency(n, std::move(backward));
    collectBarriers();
  }

  // The ops ordered before `from` (backward) or after it (forward), itself first, nearest first,
  // at most kSideOps, through edges whose wait is not `skipped`.
  std::vector<std::size_t> side(std::size_t from, bool forward, const std::vector<bool>& skipped) const {
    const Adjacency& edges = forward ? out_ : in_;
    std::vector<std::size_t> found{from};
    for (std::size_t next = 0; next < found.size() && found.size() < kSideOps; ++next) {
      for (const Edge* e = edges.begin(found[next]); e != edges.end(found[next]); ++e) {
        if (e->wait != kNoWait && skipped[e->wait]) continue;
        if (std::find(found.begin(), found.end(), e->to) != found.end()) continue;
        found.push_back(e->to);
        if (found.size() == kSideOps) break;
      }
    }
    return found;
  }

  // Whether a and b conflict: one writes memory the other touches. Certain for byte ranges (copies,
  // memsets) that overlap, for two kernels handed the same pointer, and for a kernel whose pointer
  // lies in a copy's or memset's range; unsure where a kernel's range (its pointer to the end of its
  // allocation) only overlaps: slices of one buffer handed to different ops.
  Conflict conflict(std::size_t a, std::size_t b) const {
    const auto [a_first, a_last] = buffers_[a];
    const auto [b_first, b_last] = buffers_[b];
    if (a_first == a_last || b_first == b_last) return Conflict::kCertain;  // unknown: may touch anything
    Conflict found = Conflict::kNone;
    for (const OpBuffer* x = a_first; x != a_last; ++x) {
      for (const OpBuffer* y = b_first; y != b_last; ++y) {
        const Conflict c = pairConflict(*x, *y);
        if (c == Conflict::kCertain) return c;
        if (c == Conflict::kUnsure) found = c;
      }
    }
    return found;
  }

  // Whether every op of `later` that conflicts with `a` stays ordered after it without the waits
  // marked `skipped` (reached through the edges left, or after a host barrier that covers an op
  // reached); a search cut short at kSearchOps counts what lies further as unordered.
  bool staysOrdered(std::size_t a, const std::vector<std::size_t>& later, const std::vector<bool>& skipped) const {
    Ns horizon = std::numeric_limits<Ns>::min();
    for (std::size_t b : later) horizon = std::max(horizon, view_.ops()[b].start);
    std::vector<std::size_t> visited{a};
    const std::uint32_t stamp = ++generation_;
    stamp_[a] = stamp;
    for (std::size_t next = 0; next < visited.size() && visited.size() < kSearchOps; ++next) {
      for (const Edge* e = out_.begin(visited[next]); e != out_.end(visited[next]); ++e) {
        if ((e->wait != kNoWait && skipped[e->wait]) || stamp_[e->to] == stamp ||
            view_.ops()[e->to].start > horizon) {
          continue;
        }
        stamp_[e->to] = stamp;
        visited.push_back(e->to);
        if (visited.size() == kSearchOps) break;  // what lies further counts as unordered
      }
    }
    // What the host knew complete: the earliest launch among the ops reached (a device
    // synchronize that began after it covers one of them), per stream likewise, and the
    // synchronous transfers reached.
    Ns earliest = std::numeric_limits<Ns>::max();
    std::map<std::uint64_t, Ns> earliest_of_stream;
    for (std::size_t v : visited) {
      if (!launch_[v]) continue;
      earliest = std::min(earliest, *launch_[v]);
      const std::uint64_t key = DeviceView::streamKey(view_.op(view_.ops()[v]));
      auto [it, inserted] = earliest_of_stream.emplace(key, *launch_[v]);
      if (!inserted) it->second = std::min(it->second, *launch_[v]);
    }
    for (std::size_t b : later) {
      if (stamp_[b] == stamp) continue;
      if (!hostOrdered(b, earliest, earliest_of_stream, stamp)) return false;
    }
    return true;
  }

 private:
  void collectBarriers() {
    for (const SyncEvent* sync : view_.syncs()) {
      if (sync->type != SyncType::kContextSynchronize && sync->type != SyncType::kStreamSynchronize) continue;
      GpuOp key;
      key.pid = sync->pid;
      key.correlation_id = sync->correlation_id;
      const auto call = view_.launchCall(key);
      if (!call) continue;
      const RuntimeCall& c = view_.call(*call);
      barriers_[threadKey(c)].push_back(
          {c.start, c.end, sync->type, DeviceView::streamKey(sync->pid, sync->context_id, sync->stream_id), 0});
    }
    for (const std::uint32_t p : view_.synchronousTransferPositions()) {
      const auto call = view_.launchCall(view_.op(view_.ops()[p]));
      if (!call) continue;
      const RuntimeCall& c = view_.call(*call);
      barriers_[threadKey(c)].push_back({c.start, c.end, SyncType::kUnknown, 0, p});
    }
    for (auto& [thread, list] : barriers_) {
      std::sort(list.begin(), list.end(), [](const HostBarrier& x, const HostBarrier& y) { return x.end < y.end; });
    }
  }

  // Whether a host barrier of b's thread, ended before b was launched, covers an op reached.
  bool hostOrdered(std::size_t b, Ns earliest, const std::map<std::uint64_t, Ns>& earliest_of_stream,
                   std::uint32_t stamp) const {
    if (!launch_[b]) return false;
    const auto list = barriers_.find(thread_[b]);
    if (list == barriers_.end()) return false;
    const Ns launched = *launch_[b];
    for (const HostBarrier& h : list->second) {
      if (h.end > launched) break;
      switch (h.type) {
        case SyncType::kContextSynchronize:
          if (earliest <= h.start) return true;
          break;
        case SyncType::kStreamSynchronize:
          if (const auto it = earliest_of_stream.find(h.stream); it != earliest_of_stream.end() && it->second <= h.start) {
            return true;
          }
          break;
        default:
          if (stamp_[h.position] == stamp) return true;
          break;
      }
    }
    return false;
  }

  const DeviceView& view_;
  Adjacency out_, in_;
  std::vector<std::pair<const OpBuffer*, const OpBuffer*>> buffers_;
  std::vector<std::optional<Ns>> launch_;
  std::vector<std::uint64_t> thread_;
  std::unordered_map<std::uint64_t, std::vector<HostBarrier>> barriers_;
  // The searches' visited marks: an op is visited by the search whose generation it holds.
  mutable std::vector<std::uint32_t> stamp_;
  mutable std::uint32_t generation_ = 0;
};

}  // namespace

bool recordsOpBuffers(const DeviceView& view) {
  if (view.trace().op_buffers.empty()) return false;
  for (const ScopedOp& scoped : view.ops()) {
    const auto [first, last] = opBuffersOf(view.trace(), view.op(scoped));
    if (first != last) return true;
  }
  return false;
}

std::vector<DataOrder> waitsOrderingData(const DeviceView& view, const std::vector<StreamWait>& waits,
                                         const std::vector<bool>& candidates) {
  std::vector<DataOrder> orders(waits.size(), DataOrder::kFree);
  for (std::size_t w = 0; w < waits.size(); ++w) orders[w] = candidates[w] ? DataOrder::kOrders : DataOrder::kFree;
  // The callers ask only where recordsOpBuffers(view) said yes.
  if (view.trace().op_buffers.empty() || std::none_of(candidates.begin(), candidates.end(), [](bool c) { return c; })) {
    return orders;
  }
  const OrderGraph graph(view, waits);
  // Call sites in the order of their first candidate wait.
  std::map<CallSite, std::vector<std::size_t>> rounds;
  std::vector<CallSite> order;
  for (std::size_t w = 0; w < waits.size(); ++w) {
    if (!candidates[w] || waits[w].waited_for.empty()) continue;
    const CallSite site = callSite(waits[w]);
    auto [it, inserted] = rounds.emplace(site, std::vector<std::size_t>{});
    if (inserted) order.push_back(site);
    it->second.push_back(w);
  }
  std::vector<bool> dropped(waits.size(), false);
  for (const CallSite& site : order) {
    const std::vector<std::size_t>& site_waits = rounds[site];
    std::vector<bool> skipped = dropped;
    for (std::size_t w : site_waits) skipped[w] = true;
    bool needed = false, unsure = false;
    for (std::size_t w = 0; w < site_waits.size() && !needed; ++w) {
      const StreamWait& wait = waits[site_waits[w]];
      const std::vector<std::size_t> after = graph.side(wait.released, true, dropped);
      for (std::size_t y : wait.waited_for) {
        for (std::size_t a : graph.side(y, false, dropped)) {
          const std::uint64_t a_stream = DeviceView::streamKey(view.op(view.ops()[a]));
          std::vector<std::size_t> certain, doubtful;
          for (std::size_t b : after) {
            if (DeviceView::streamKey(view.op(view.ops()[b])) == a_stream) continue;
            const Conflict c = graph.conflict(a, b);
            if (c == Conflict::kCertain) certain.push_back(b);
            if (c == Conflict::kUnsure) doubtful.push_back(b);
          }
          if (!certain.empty() && !graph.staysOrdered(a, certain, skipped)) {
            needed = true;
            break;
          }
          if (!unsure && !doubtful.empty() && !graph.staysOrdered(a, doubtful, skipped)) unsure = true;
        }
        if (needed) break;
      }
    }
    // A site that unorders only pairs of unsure conflict is kept here and left to the caller.
    for (std::size_t w : site_waits) {
      orders[w] = needed ? DataOrder::kOrders : unsure ? DataOrder::kUnsure : DataOrder::kFree;
      dropped[w] = !needed && !unsure;
    }
  }
  return orders;
}

}  // namespace cuoverlap::diagnosis
