#include "diagnosis/kernels_alone.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <tuple>
#include <utility>

namespace cuoverlap::diagnosis {
namespace {

// Calls visit(i, j, both) for every pair of kernels of `kernels` (positions) of different streams
// that ran `both` > 0 side by side, given each one's [start, end) in `at` (one entry per kernel):
// a sweep by start, O(n log n + pairs).
template <typename Visit>
void forKernelsSideBySide(const DeviceView& view, const std::vector<std::size_t>& kernels,
                          const std::vector<std::pair<Ns, Ns>>& at, Visit visit) {
  std::vector<std::size_t> by_start(kernels.size());
  for (std::size_t i = 0; i < by_start.size(); ++i) by_start[i] = i;
  std::sort(by_start.begin(), by_start.end(), [&](std::size_t a, std::size_t b) { return at[a].first < at[b].first; });
  std::vector<std::size_t> running;
  for (const std::size_t i : by_start) {
    const Ns start = at[i].first;
    running.erase(std::remove_if(running.begin(), running.end(),
                                 [&](std::size_t j) { return at[j].second <= start; }),
                  running.end());
    const std::uint32_t stream = view.op(view.ops()[kernels[i]]).stream_id;
    for (const std::size_t j : running) {
      if (view.op(view.ops()[kernels[j]]).stream_id == stream) continue;
      visit(i, j, std::min(at[i].second, at[j].second) - start);
    }
    running.push_back(i);
  }
}

// How long each kernel of `kernels` (positions) ran beside kernels of other streams, given each
// one's [start, end) in `at` (one entry per kernel).
std::vector<Ns> timeBesideOtherStreams(const DeviceView& view, const std::vector<std::size_t>& kernels,
                                       const std::vector<std::pair<Ns, Ns>>& at) {
  std::vector<Ns> beside(kernels.size(), 0);
  forKernelsSideBySide(view, kernels, at, [&](std::size_t i, std::size_t j, Ns both) {
    beside[i] += both;
    beside[j] += both;
  });
  return beside;
}

// Each kernel's recorded [start, end), where `moved` (a schedule's host times) ran it, how long
// it ran beside other streams' kernels in the trace, and the shortest run of the same kernel
// (name, grid, stream) that ran beside none (under 5% of its time).
struct KernelRuns {
  std::vector<std::size_t> kernels;  // positions
  std::vector<std::pair<Ns, Ns>> recorded;
  std::vector<std::pair<Ns, Ns>> moved;
  std::vector<Ns> beside;
  std::map<std::tuple<StringId, std::uint32_t, std::uint32_t>, Ns> alone;

  KernelRuns(const DeviceView& view, const ScheduledHost& times) {
    for (std::size_t p = 0; p < view.ops().size(); ++p) {
      if (view.kindAt(p) == OpKind::kKernel) kernels.push_back(p);
    }
    recorded.resize(kernels.size());
    moved.resize(kernels.size());
    for (std::size_t i = 0; i < kernels.size(); ++i) {
      const ScopedOp op = view.ops()[kernels[i]];
      recorded[i] = {op.start, op.end};
      const Ns end = times.op_end[kernels[i]];
      moved[i] = end == std::numeric_limits<Ns>::min() ? recorded[i] : std::make_pair(end - (op.end - op.start), end);
    }
    beside = timeBesideOtherStreams(view, kernels, recorded);
    for (std::size_t i = 0; i < kernels.size(); ++i) {
      const Ns length = this->length(i);
      if (length <= 0 || !isAlone(beside[i], length)) continue;
      const auto [it, added] = alone.emplace(sameKernel(view, i), length);
      if (!added) it->second = std::min(it->second, length);
    }
  }
  static bool isAlone(Ns beside_time, Ns length) { return beside_time * 20 <= length; }
  Ns length(std::size_t i) const { return recorded[i].second - recorded[i].first; }
  std::tuple<StringId, std::uint32_t, std::uint32_t> sameKernel(const DeviceView& view, std::size_t i) const {
    const GpuOp& op = view.op(view.ops()[kernels[i]]);
    return std::make_tuple(op.name, op.grid_blocks, op.stream_id);
  }
  // Kernel i's alone run where it ran beside other streams' kernels for at least half its time
  // and took more than 1.25 and at most 2 times that run; else none.
  std::optional<Ns> slowedFrom(const DeviceView& view, std::size_t i) const {
    const Ns length = this->length(i);
    const auto it = alone.find(sameKernel(view, i));
    if (it == alone.end() || beside[i] * 2 < length) return std::nullopt;
    if (length * 4 > it->second * 5 && length <= it->second * 2) return it->second;
    return std::nullopt;
  }
};

}  // namespace

std::vector<FasterOp> kernelsLeftAlone(const DeviceView& view, const ScheduledHost& deferred) {
  const KernelRuns runs(view, deferred);
  const std::vector<Ns> beside_moved = timeBesideOtherStreams(view, runs.kernels, runs.moved);
  std::vector<FasterOp> faster;
  for (std::size_t i = 0; i < runs.kernels.size(); ++i) {
    const std::optional<Ns> alone = runs.slowedFrom(view, i);
    if (alone && KernelRuns::isAlone(beside_moved[i], runs.length(i))) faster.push_back({runs.kernels[i], *alone});
  }
  return faster;
}

std::vector<FasterOp> kernelsFreedOfSlotHolders(const DeviceView& view, const ScheduleModel& model,
                                                const ScheduledHost& moved) {
  const KernelRuns runs(view, moved);
  const std::size_t n = runs.kernels.size();
  // Per kernel: the other streams' kernels it ran beside in the trace for over 5% of its time
  // whose SM shares and its own add up to more than the device, and how long it ran beside them.
  std::vector<std::vector<std::size_t>> holders(n);
  std::vector<Ns> held(n, 0);
  forKernelsSideBySide(view, runs.kernels, runs.recorded, [&](std::size_t i, std::size_t j, Ns both) {
    if (model.share(runs.kernels[i]) + model.share(runs.kernels[j]) <= 1.0) return;
    for (const auto& [a, b] : {std::pair{i, j}, std::pair{j, i}}) {
      if (!KernelRuns::isAlone(both, runs.length(a))) holders[a].push_back(b);
      held[a] += both;
    }
  });
  auto overlap = [](std::pair<Ns, Ns> a, std::pair<Ns, Ns> b) {
    return std::max<Ns>(0, std::min(a.second, b.second) - std::max(a.first, b.first));
  };
  std::vector<FasterOp> faster;
  for (std::size_t i = 0; i < n; ++i) {
    if (holders[i].empty() || held[i] * 2 < runs.length(i)) continue;
    const std::optional<Ns> alone = runs.slowedFrom(view, i);
    if (!alone) continue;
    const bool away = std::all_of(holders[i].begin(), holders[i].end(), [&](std::size_t j) {
      return KernelRuns::isAlone(overlap(runs.moved[i], runs.moved[j]), runs.length(i));
    });
    if (away) faster.push_back({runs.kernels[i], *alone});
  }
  return faster;
}

Ns spanFreedOfSlotHolders(const DeviceView& view, const ScheduleModel& model,
                          const std::vector<OrderEdge>& edges) {
  ScheduledHost times;
  const Ns span = spanWithTurns(model, HostTurns{}, edges, {}, {}, {}, &times);
  const std::vector<FasterOp> faster = kernelsFreedOfSlotHolders(view, model, times);
  return faster.empty() ? span : spanWithTurns(model, HostTurns{}, edges, {}, faster, {});
}

}  // namespace cuoverlap::diagnosis
