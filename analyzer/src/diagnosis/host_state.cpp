// Host state: a per-thread timeline of what each host thread was doing, from its CUDA calls.
//
// Each thread's calls (those of the view: the processes that used the device, inside the scope's
// window) become disjoint segments sorted by start, built once:
//   - calls nest (a runtime call runs driver calls; a call may overlap the next one in odd data):
//     the outermost call owns its whole extent (up to the latest end among the calls nested in
//     it), so no time is counted twice;
//   - a nested call refines the part of the outer call it covers when it says more: module
//     loading inside anything (lazy loading inside a launch), and a pageable copy, blocking or
//     allocating call inside a call that is none of these;
//   - a lazy first launch: the first launch of a kernel (by name) that took at least 10x the
//     median of the view's repeat launch calls (5 µs when no kernel is launched twice) and at
//     least 50 µs more than it spent that excess loading the kernel's module
//     (CUDA_MODULE_LOADING=LAZY, the default since CUDA 11.7): the first part of the call is
//     module loading, the rest an ordinary launch;
//   - time between segments is kCpu: the thread ran its own code (or slept) in no CUDA call.
// A call's activity: the call of a copy from or to pageable memory -> kPageableCopy (the driver
// stages it through a pinned buffer, also after the DMA ended), host-blocking calls (synchronize,
// synchronous memcpy/memset) -> kBlocking, allocations -> kAllocation,
// cuModuleLoad*/cuLibraryLoad*/cudaLibraryLoad*/cuLink* -> kModuleLoad, anything else -> kApi.
// Queries binary-search a thread's segments by time: O(log n + parts returned).
#include "diagnosis/host_state.h"

#include <algorithm>
#include <limits>
#include <unordered_map>

#include "diagnosis/device_view.h"
#include "diagnosis/host_timeline.h"

namespace cuoverlap::diagnosis {
namespace {

constexpr Ns kLazyLaunchMinExcessNs = 50'000;
constexpr Ns kLazyLaunchFactor = 10;
// The launch call's own cost when no kernel is launched twice (a program of one or two launches):
// a launch that loads nothing takes a few µs on current drivers (2-10 µs measured here).
constexpr Ns kLaunchCostWithoutRepeatsNs = 5'000;
constexpr std::size_t kMedianSample = 100'000;

HostActivity activityOfKind(ApiKind kind) {
  if (isHostBlocking(kind)) return HostActivity::kBlocking;
  if (kind == ApiKind::kAllocation) return HostActivity::kAllocation;
  if (kind == ApiKind::kModuleLoad) return HostActivity::kModuleLoad;
  return HostActivity::kApi;
}

// Whether a call nested in an outer call of activity `outer` names what the thread was doing
// better than the outer call does.
bool refines(HostActivity outer, HostActivity nested) {
  if (nested == HostActivity::kModuleLoad) return outer != HostActivity::kModuleLoad;
  if (nested == HostActivity::kPageableCopy) return outer == HostActivity::kApi;
  return outer == HostActivity::kApi &&
         (nested == HostActivity::kBlocking || nested == HostActivity::kAllocation);
}

std::uint64_t key(std::uint32_t pid, std::uint32_t tid) {
  return (static_cast<std::uint64_t>(pid) << 32) | tid;
}

// Median of `values` (sampled evenly when there are many); 0 when empty.
Ns medianOf(const std::vector<Ns>& values) {
  if (values.empty()) return 0;
  std::vector<Ns> sample;
  const std::size_t step = values.size() / kMedianSample + 1;
  for (std::size_t i = 0; i < values.size(); i += step) sample.push_back(values[i]);
  auto mid = sample.begin() + static_cast<std::ptrdiff_t>(sample.size() / 2);
  std::nth_element(sample.begin(), mid, sample.end());
  return *mid;
}

}  // namespace

HostState::HostState(const DeviceView& view) {
  findLazyFirstLaunches(view);
  findPageableCopyCalls(view);
  buildTimelines(view);
}

void HostState::findPageableCopyCalls(const DeviceView& view) {
  const std::vector<std::size_t> calls = pageableCopyCalls(view);  // sorted
  pageable_calls_.assign(calls.begin(), calls.end());
}

HostActivity HostState::activityOf(const DeviceView& view, std::uint32_t call) const {
  if (!pageable_calls_.empty() &&
      std::binary_search(pageable_calls_.begin(), pageable_calls_.end(), call)) {
    return HostActivity::kPageableCopy;
  }
  return activityOfKind(view.callKind(call));
}

// The reference is the median of the repeat launches (every launch but each kernel's first): what a
// launch costs once its module is loaded. A kernel's first launch would put the slow calls into
// it, and with one or two launches in all make the slow call its own reference.
void HostState::findLazyFirstLaunches(const DeviceView& view) {
  std::vector<std::uint32_t> launches;
  std::unordered_map<StringId, std::uint32_t> first_call;  // per kernel name (not per string:
                                                           // one view per device of many)
  for (std::size_t pos = 0; pos < view.ops().size(); ++pos) {
    if (view.kindAt(pos) != OpKind::kKernel) continue;
    const GpuOp& op = view.op(view.ops()[pos]);
    if ((op.flags & op_flag::kFromGraph) != 0) continue;
    const auto launch = view.launchCall(op);
    if (!launch || view.callKind(*launch) != ApiKind::kLaunch) continue;
    const RuntimeCall& call = view.call(*launch);
    launches.push_back(static_cast<std::uint32_t>(*launch));
    auto [it, added] = first_call.emplace(op.name, static_cast<std::uint32_t>(*launch));
    if (!added && call.start < view.call(it->second).start) {
      it->second = static_cast<std::uint32_t>(*launch);
    }
  }
  std::vector<std::uint32_t> firsts;
  for (const auto& entry : first_call) firsts.push_back(entry.second);
  std::sort(firsts.begin(), firsts.end());
  std::vector<Ns> durations;
  for (std::uint32_t launch : launches) {
    if (std::binary_search(firsts.begin(), firsts.end(), launch)) continue;
    durations.push_back(view.call(launch).end - view.call(launch).start);
  }
  const Ns median = durations.empty() ? kLaunchCostWithoutRepeatsNs : medianOf(durations);
  for (const auto& [name, call] : first_call) {
    const Ns duration = view.call(call).end - view.call(call).start;
    if (duration >= kLazyLaunchFactor * median && duration - median >= kLazyLaunchMinExcessNs) {
      lazy_launches_.emplace_back(call, duration - median);
    }
  }
  std::sort(lazy_launches_.begin(), lazy_launches_.end());
  lazy_launches_.erase(std::unique(lazy_launches_.begin(), lazy_launches_.end()),
                       lazy_launches_.end());
}

Ns HostState::moduleLoadWithin(std::size_t call) const {
  auto it = std::lower_bound(lazy_launches_.begin(), lazy_launches_.end(),
                             std::make_pair(static_cast<std::uint32_t>(call), Ns{0}));
  return it != lazy_launches_.end() && it->first == call ? it->second : 0;
}

void HostState::buildTimelines(const DeviceView& view) {
  const Trace& trace = view.trace();
  const std::vector<std::size_t>& calls = view.calls();
  // Thread of each call, in a first-seen numbering, then renumbered in (pid, tid) order.
  std::unordered_map<std::uint64_t, std::uint32_t> numbering;
  std::vector<std::uint32_t> thread_of_call(calls.size());
  std::uint64_t last_key = std::numeric_limits<std::uint64_t>::max();
  std::uint32_t last_thread = 0;
  for (std::size_t i = 0; i < calls.size(); ++i) {
    const RuntimeCall& call = trace.runtime_calls[calls[i]];
    const std::uint64_t k = key(call.pid, call.tid);
    if (k != last_key) {
      auto [it, added] = numbering.emplace(k, static_cast<std::uint32_t>(numbering.size()));
      if (added) thread_ids_.emplace_back(call.pid, call.tid);
      last_key = k;
      last_thread = it->second;
    }
    thread_of_call[i] = last_thread;
  }
  std::vector<std::uint32_t> rank(thread_ids_.size());
  std::vector<std::uint32_t> order(thread_ids_.size());
  for (std::uint32_t t = 0; t < order.size(); ++t) order[t] = t;
  std::sort(order.begin(), order.end(),
            [&](std::uint32_t a, std::uint32_t b) { return thread_ids_[a] < thread_ids_[b]; });
  for (std::uint32_t r = 0; r < order.size(); ++r) rank[order[r]] = r;
  std::sort(thread_ids_.begin(), thread_ids_.end());
  // Counting sort by thread keeps each thread's calls in start order.
  std::vector<std::size_t> begin(thread_ids_.size() + 1, 0);
  for (std::uint32_t& t : thread_of_call) {
    t = rank[t];
    ++begin[t + 1];
  }
  for (std::size_t t = 1; t < begin.size(); ++t) begin[t] += begin[t - 1];
  std::vector<std::uint32_t> by_thread(calls.size());
  std::vector<std::size_t> fill(begin.begin(), begin.end() - 1);
  for (std::size_t i = 0; i < calls.size(); ++i) {
    by_thread[fill[thread_of_call[i]]++] = static_cast<std::uint32_t>(calls[i]);
  }
  thread_begin_.push_back(0);
  for (std::size_t t = 0; t < thread_ids_.size(); ++t) {
    appendThread(view, by_thread.data() + begin[t], by_thread.data() + begin[t + 1]);
    thread_begin_.push_back(segments_.size());
  }
}

// Appends [from, to) of `call` as a segment of `activity`, the lazy-loading head of a first
// launch as module loading.
void HostState::appendPiece(const DeviceView& view, std::uint32_t call, HostActivity activity,
                            Ns from, Ns to) {
  if (to <= from) return;
  if (const Ns lazy = activity == HostActivity::kApi ? moduleLoadWithin(call) : 0; lazy > 0) {
    const Ns lazy_end = std::min(to, view.call(call).start + lazy);
    if (lazy_end > from) {
      segments_.push_back({from, lazy_end, call, HostActivity::kModuleLoad});
      from = lazy_end;
    }
    if (to <= from) return;
  }
  if (!segments_.empty() && segments_.back().end == from && segments_.back().call == call &&
      segments_.back().activity == activity) {
    segments_.back().end = to;
    return;
  }
  segments_.push_back({from, to, call, activity});
}

// The segments of one thread from its calls in start order: outermost calls, refined by the
// calls nested in them.
void HostState::appendThread(const DeviceView& view, const std::uint32_t* first,
                             const std::uint32_t* last) {
  while (first != last) {
    const std::uint32_t outer = *first++;
    const HostActivity outer_activity = activityOf(view, outer);
    Ns outer_end = view.call(outer).end;
    Ns cursor = view.call(outer).start;
    for (; first != last && view.call(*first).start < outer_end; ++first) {
      const RuntimeCall& nested = view.call(*first);
      const HostActivity activity = activityOf(view, *first);
      if (refines(outer_activity, activity)) {
        const Ns from = std::max(nested.start, cursor);
        const Ns to = std::min(nested.end, outer_end);
        if (to > from) {
          appendPiece(view, outer, outer_activity, cursor, from);
          appendPiece(view, *first, activity, from, to);
          cursor = to;
        }
      }
      outer_end = std::max(outer_end, nested.end);
    }
    appendPiece(view, outer, outer_activity, cursor, outer_end);
  }
}

std::optional<std::uint32_t> HostState::threadOf(const RuntimeCall& call) const {
  const auto id = std::make_pair(call.pid, call.tid);
  auto it = std::lower_bound(thread_ids_.begin(), thread_ids_.end(), id);
  if (it == thread_ids_.end() || *it != id) return std::nullopt;
  return static_cast<std::uint32_t>(it - thread_ids_.begin());
}

std::optional<std::size_t> HostState::lastCallBefore(std::uint32_t thread, Ns time) const {
  const auto first = segments_.begin() + static_cast<std::ptrdiff_t>(thread_begin_[thread]);
  const auto last = segments_.begin() + static_cast<std::ptrdiff_t>(thread_begin_[thread + 1]);
  auto it = std::partition_point(first, last, [&](const HostSegment& s) { return s.end <= time; });
  if (it == first) return std::nullopt;
  return (it - 1)->call;
}

std::optional<std::size_t> HostState::firstCallAfter(std::uint32_t thread, Ns time) const {
  const auto first = segments_.begin() + static_cast<std::ptrdiff_t>(thread_begin_[thread]);
  const auto last = segments_.begin() + static_cast<std::ptrdiff_t>(thread_begin_[thread + 1]);
  auto it = std::partition_point(first, last, [&](const HostSegment& s) { return s.start < time; });
  if (it == last) return std::nullopt;
  return it->call;
}

std::vector<HostPart> HostState::partsWithin(std::uint32_t thread, Ns from, Ns to) const {
  std::vector<HostPart> parts;
  if (to <= from) return parts;
  const auto first = segments_.begin() + static_cast<std::ptrdiff_t>(thread_begin_[thread]);
  const auto last = segments_.begin() + static_cast<std::ptrdiff_t>(thread_begin_[thread + 1]);
  auto it = std::partition_point(first, last, [&](const HostSegment& s) { return s.end <= from; });
  Ns cursor = from;
  for (; it != last && it->start < to; ++it) {
    const Ns start = std::max(it->start, from);
    const Ns end = std::min(it->end, to);
    if (start > cursor) parts.push_back({cursor, start, HostActivity::kCpu, std::nullopt});
    parts.push_back({start, end, it->activity, it->call});
    cursor = end;
  }
  if (cursor < to) parts.push_back({cursor, to, HostActivity::kCpu, std::nullopt});
  return parts;
}

}  // namespace cuoverlap::diagnosis
