#include "diagnosis/schedule_estimate.h"

#include <algorithm>
#include <limits>
#include <unordered_map>

namespace cuoverlap::diagnosis {
namespace {

constexpr double kShareSlack = 1e-9;

struct Running {
  Ns start = 0;
  Ns end = 0;
  double share = 1.0;
};

// The SMs as a shared resource: kernels placed so far that may still overlap later ones.
class SmPool {
 public:
  // The earliest start >= `earliest` at which a kernel of `share` fits for `duration`; reserves it.
  Ns place(Ns earliest, Ns duration, double share) {
    // Placements come roughly in time order; kernels that ended before this one may start no
    // longer constrain anything (an approximation when releases are out of order).
    running_.erase(std::remove_if(running_.begin(), running_.end(),
                                  [&](const Running& r) { return r.end <= earliest; }),
                   running_.end());
    Ns t = earliest;
    while (true) {
      const auto [peak, next_end] = peakWithin(t, t + std::max<Ns>(duration, 1));
      if (peak + share <= 1.0 + kShareSlack || next_end <= t) break;
      t = next_end;
    }
    running_.push_back({t, t + duration, share});
    return t;
  }

 private:
  // The largest summed share in [from, to) and the earliest end after `from` of a kernel that
  // overlaps it (where to try next when the new kernel does not fit).
  std::pair<double, Ns> peakWithin(Ns from, Ns to) const {
    std::vector<std::pair<Ns, double>> steps;
    Ns next_end = from;
    for (const Running& r : running_) {
      if (r.end <= from || r.start >= to) continue;
      steps.emplace_back(std::max(r.start, from), r.share);
      steps.emplace_back(r.end, -r.share);
      next_end = next_end == from ? r.end : std::min(next_end, r.end);
    }
    std::sort(steps.begin(), steps.end());  // ends (negative) before starts at the same time
    double level = 0.0;
    double peak = 0.0;
    for (const auto& [time, delta] : steps) {
      if (time >= to) break;
      level += delta;
      peak = std::max(peak, level);
    }
    return {peak, next_end};
  }

  std::vector<Running> running_;
};

std::uint8_t engineSlot(const GpuOp& op) {
  switch (engineOf(op)) {
    case Engine::kCompute:
    case Engine::kComm: return 0;  // communication kernels take SMs like any kernel
    case Engine::kH2D: return 1;
    case Engine::kD2H: return 2;
    case Engine::kD2D:
    case Engine::kOtherCopy: return 3;
    case Engine::kMemset: return 4;
  }
  return 3;
}

}  // namespace

std::int64_t residentBlocksPerSm(const Device& device, const GpuOp& kernel) {
  if (device.max_threads_per_sm <= 0 || device.max_blocks_per_sm <= 0 ||
      kernel.block_threads == 0) {
    return 0;
  }
  std::int64_t blocks = std::min<std::int64_t>(device.max_blocks_per_sm,
                                               device.max_threads_per_sm / kernel.block_threads);
  const std::int64_t registers_per_block =
      static_cast<std::int64_t>(kernel.registers_per_thread) * kernel.block_threads;
  if (device.max_registers_per_sm > 0 && registers_per_block > 0) {
    blocks = std::min(blocks, device.max_registers_per_sm / registers_per_block);
  }
  if (device.max_shared_mem_per_sm > 0 && kernel.shared_mem_bytes > 0) {
    blocks = std::min<std::int64_t>(blocks, device.max_shared_mem_per_sm / kernel.shared_mem_bytes);
  }
  return blocks;
}

double smShare(const Device* device, const GpuOp& kernel) {
  if (device == nullptr || device->sm_count <= 0 || kernel.grid_blocks == 0) return 1.0;
  const std::int64_t per_sm = residentBlocksPerSm(*device, kernel);
  if (per_sm <= 0) return 1.0;
  const double share = static_cast<double>(kernel.grid_blocks) /
                       static_cast<double>(per_sm * device->sm_count);
  return std::clamp(share, 1e-6, 1.0);
}

ScheduleModel::ScheduleModel(const DeviceView& view) {
  const auto& ops = view.ops();
  const Device* device = view.device();
  release_.reserve(ops.size());
  duration_.reserve(ops.size());
  engine_.reserve(ops.size());
  share_.reserve(ops.size());
  stream_prev_.reserve(ops.size());
  std::unordered_map<std::uint64_t, std::int64_t> last_on_stream;
  std::vector<Ns> issued;
  issued.reserve(ops.size());
  for (std::size_t pos = 0; pos < ops.size(); ++pos) {
    const ScopedOp scoped = ops[pos];
    const GpuOp& op = view.op(scoped);
    // An op cannot start before its launch call returned, except that synchronous calls return
    // after their op: never release an op later than it really started.
    Ns release = view.spanStart();
    const auto launch = view.launchCall(op);
    if (launch) release = std::min(view.call(*launch).end, scoped.start);
    release_.push_back(std::max(release, view.spanStart()));
    duration_.push_back(scoped.end - scoped.start);
    engine_.push_back(engineSlot(op));
    share_.push_back(op.kind == OpKind::kKernel ? smShare(device, op) : 1.0);
    auto [it, inserted] = last_on_stream.try_emplace(DeviceView::streamKey(op), -1);
    stream_prev_.push_back(it->second);
    it->second = static_cast<std::int64_t>(pos);
    issued.push_back(launch ? view.call(*launch).start : scoped.start);
  }
  // Engines take work in the order it was issued (launch call start), which is also an order in
  // which every stream-order, event and barrier edge points forward.
  issue_order_.resize(ops.size());
  for (std::size_t pos = 0; pos < ops.size(); ++pos) issue_order_[pos] = pos;
  std::stable_sort(issue_order_.begin(), issue_order_.end(),
                   [&](std::size_t a, std::size_t b) { return issued[a] < issued[b]; });
}

Ns ScheduleModel::span(std::vector<OrderEdge> edges, const std::vector<Ns>& earlier) const {
  if (duration_.empty()) return 0;
  // Edges into each op, grouped by target (counting sort: O(n + e)).
  std::vector<std::size_t> first_edge(duration_.size() + 1, 0);
  for (const OrderEdge& e : edges) ++first_edge[e.to + 1];
  for (std::size_t p = 0; p < duration_.size(); ++p) first_edge[p + 1] += first_edge[p];
  std::vector<std::size_t> sources(edges.size());
  {
    std::vector<std::size_t> fill(first_edge.begin(), first_edge.end() - 1);
    for (const OrderEdge& e : edges) sources[fill[e.to]++] = e.from;
  }
  constexpr Ns kNotPlaced = std::numeric_limits<Ns>::min();
  std::vector<Ns> end(duration_.size(), kNotPlaced);
  Ns engine_free[5] = {0, 0, 0, 0, 0};
  SmPool sms;
  Ns first = std::numeric_limits<Ns>::max();
  Ns last = std::numeric_limits<Ns>::min();
  for (const std::size_t pos : issue_order_) {
    Ns ready = release_[pos] - (earlier.empty() ? 0 : earlier[pos]);
    if (stream_prev_[pos] >= 0) ready = std::max(ready, end[stream_prev_[pos]]);
    for (std::size_t k = first_edge[pos]; k < first_edge[pos + 1]; ++k) {
      ready = std::max(ready, end[sources[k]]);  // an op not yet placed (kNotPlaced) orders nothing
    }
    Ns start = ready;
    if (engine_[pos] == 0) {
      start = sms.place(ready, duration_[pos], share_[pos]);
    } else {
      start = std::max(ready, engine_free[engine_[pos]]);
      engine_free[engine_[pos]] = start + duration_[pos];
    }
    end[pos] = start + duration_[pos];
    first = std::min(first, start);
    last = std::max(last, end[pos]);
  }
  return last - first;
}

Ns ScheduleModel::savingWithout(const std::vector<OrderEdge>& kept,
                                const std::vector<OrderEdge>& removed) const {
  std::vector<OrderEdge> all = kept;
  all.insert(all.end(), removed.begin(), removed.end());
  return std::max<Ns>(0, span(std::move(all)) - span(kept));
}

}  // namespace cuoverlap::diagnosis
