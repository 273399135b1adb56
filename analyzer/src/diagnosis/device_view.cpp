#include "diagnosis/device_view.h"

#include <fmt/core.h>

#include <algorithm>
#include <limits>
#include <unordered_map>

#include "cuoverlap/error.h"
#include "cuoverlap/metrics.h"
#include "diagnosis/host_state.h"

namespace cuoverlap::diagnosis {

DeviceView::DeviceView(const Trace& trace, const Scope& scope, std::uint16_t device_id)
    : trace_(trace), device_id_(device_id), window_start_(scope.window_start),
      window_end_(scope.window_end) {
  selectOps(scope);
  selectCalls(scope);
  for (const Stream& s : trace_.streams) {
    streams_[{s.pid, s.context_id, s.stream_id}] = &s;
  }
  computeIdle();
  computePreviousOnStreamEnds();
}

std::uint64_t DeviceView::streamKey(const GpuOp& op) {
  // Context ids and stream ids are small in practice; pid keeps processes apart.
  return (static_cast<std::uint64_t>(op.pid) << 40) ^
         (static_cast<std::uint64_t>(op.context_id) << 24) ^ op.stream_id;
}

std::optional<Ns> DeviceView::readyTime(std::size_t position) const {
  const std::optional<std::size_t> launch = launchCall(op(ops()[position]));
  if (!launch) return std::nullopt;
  return std::max(call(*launch).end, previous_on_stream_end_[position]);
}

void DeviceView::selectOps(const Scope& scope) {
  if (trace_.ops.size() > std::numeric_limits<std::uint32_t>::max()) {
    throw UserError(fmt::format("{}: more than 2^32 GPU ops", trace_.path));
  }
  // The device's ops only (opsOnDevice): a scan of every op per device is quadratic in devices.
  const std::vector<std::uint32_t>& on_device = opsOnDevice(trace_, device_id_);
  op_indices_.reserve(on_device.size());
  for (std::uint32_t i : on_device) {
    // The metrics' rule (opInScope), so that gaps, findings and metrics count the same ops.
    if (opInScope(trace_.ops[i], scope)) op_indices_.push_back(i);
  }
  const auto clipped_start = [&](std::uint32_t i) { return clippedStart(trace_.ops[i], scope); };
  const auto before = [&](std::uint32_t a, std::uint32_t b) {
    return clipped_start(a) < clipped_start(b);
  };
  // The reader returns ops sorted by start and clipping keeps that order; test-built traces may not.
  if (!std::is_sorted(op_indices_.begin(), op_indices_.end(), before)) {
    std::stable_sort(op_indices_.begin(), op_indices_.end(), before);
  }
  for (std::uint32_t i : op_indices_) span_end_ = std::max(span_end_, clippedEnd(trace_.ops[i], scope));
}

void DeviceView::selectCalls(const Scope& scope) {
  std::vector<std::uint32_t> pids;
  for (std::uint32_t i : op_indices_) {
    const std::uint32_t pid = trace_.ops[i].pid;
    if (pids.empty() || pids.back() != pid) pids.push_back(pid);  // runs of one pid are common
  }
  std::sort(pids.begin(), pids.end());
  pids.erase(std::unique(pids.begin(), pids.end()), pids.end());
  const auto in_view = [&](std::uint32_t pid) {
    return std::binary_search(pids.begin(), pids.end(), pid);
  };
  indexLaunchCalls(pids);
  call_kinds_.assign(trace_.runtime_calls.size(), ApiKind::kOther);
  for (std::size_t i = 0; i < trace_.runtime_calls.size(); ++i) {
    const RuntimeCall& call = trace_.runtime_calls[i];
    if (!in_view(call.pid)) continue;
    call_kinds_[i] = classifyApi(trace_.str(call.name));
    if (call.start >= scope.window_end || call.end <= scope.window_start) continue;
    calls_.push_back(i);
  }
  std::stable_sort(calls_.begin(), calls_.end(), [&](std::size_t a, std::size_t b) {
    return trace_.runtime_calls[a].start < trace_.runtime_calls[b].start;
  });
  for (const SyncEvent& sync : trace_.syncs) {
    if (!in_view(sync.pid)) continue;
    if (sync.start >= scope.window_end || sync.end < scope.window_start) continue;
    syncs_.push_back(&sync);
  }
}

// Correlation lookups see every call of the view's processes, so that an op in the window finds
// a launch made before the window began. Per id, the first runtime call wins, else the first
// driver call.
void DeviceView::indexLaunchCalls(const std::vector<std::uint32_t>& pids) {
  for (std::size_t i = 0; i < trace_.runtime_calls.size(); ++i) {
    const RuntimeCall& call = trace_.runtime_calls[i];
    if (call.correlation_id == 0 || !std::binary_search(pids.begin(), pids.end(), call.pid)) continue;
    call_by_correlation_.emplace_back(call.correlation_id, static_cast<std::uint32_t>(i));
  }
  std::stable_sort(call_by_correlation_.begin(), call_by_correlation_.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::size_t kept = 0;
  for (std::size_t first = 0; first < call_by_correlation_.size();) {
    std::size_t last = first;
    std::size_t chosen = first;
    while (last < call_by_correlation_.size() &&
           call_by_correlation_[last].first == call_by_correlation_[first].first) {
      if (trace_.runtime_calls[call_by_correlation_[chosen].second].is_driver &&
          !trace_.runtime_calls[call_by_correlation_[last].second].is_driver) {
        chosen = last;
      }
      ++last;
    }
    call_by_correlation_[kept++] = call_by_correlation_[chosen];
    first = last;
  }
  call_by_correlation_.resize(kept);
  call_by_correlation_.shrink_to_fit();
}

void DeviceView::computePreviousOnStreamEnds() {
  if ((whole_ ? whole_->call_by_correlation_ : call_by_correlation_).empty()) return;
  previous_on_stream_end_.reserve(op_indices_.size());
  std::unordered_map<std::uint64_t, Ns> stream_end;
  for (const ScopedOp scoped : ops()) {
    Ns& end = stream_end[streamKey(op(scoped))];
    previous_on_stream_end_.push_back(end);
    end = std::max(end, scoped.end);
  }
}

void DeviceView::computeIdle() {
  Ns covered_until = spanStart();
  for (const ScopedOp op : ops()) {
    if (op.start > covered_until) idle_.push_back({covered_until, op.start});
    covered_until = std::max(covered_until, op.end);
  }
  idle_before_.reserve(idle_.size() + 1);
  idle_before_.push_back(0);
  for (const Interval& gap : idle_) idle_before_.push_back(idle_before_.back() + gap.length());
}

const HostState& DeviceView::hostState() const {
  if (!host_state_) host_state_ = std::make_shared<const HostState>(*this);
  return *host_state_;
}

std::string_view DeviceView::callName(std::size_t index) const {
  return apiBaseName(trace_.str(trace_.runtime_calls[index].name));
}

std::optional<std::size_t> DeviceView::launchCall(const GpuOp& op) const {
  if (whole_) return whole_->launchCall(op);
  if (op.correlation_id == 0) return std::nullopt;
  auto it = std::lower_bound(call_by_correlation_.begin(), call_by_correlation_.end(),
                             op.correlation_id,
                             [](const auto& entry, std::uint32_t id) { return entry.first < id; });
  if (it == call_by_correlation_.end() || it->first != op.correlation_id) return std::nullopt;
  return it->second;
}

const Device* DeviceView::device() const {
  // Trace::devices is sorted by id (the reader's order): a scan per view is quadratic in devices.
  const auto by_id = [](const Device& d, std::uint16_t id) { return d.device_id < id; };
  auto it = std::lower_bound(trace_.devices.begin(), trace_.devices.end(), device_id_, by_id);
  if (it != trace_.devices.end() && it->device_id == device_id_) return &*it;
  for (const Device& d : trace_.devices) {  // a hand-built trace need not be sorted
    if (d.device_id == device_id_) return &d;
  }
  return nullptr;
}

const Stream* DeviceView::stream(const GpuOp& op) const {
  if (whole_) return whole_->stream(op);
  auto it = streams_.find({op.pid, op.context_id, op.stream_id});
  return it == streams_.end() ? nullptr : it->second;
}

bool DeviceView::onLegacyDefaultStream(const GpuOp& op) const {
  if (const Stream* s = stream(op); s && s->flag == StreamFlag::kNull) return true;
  return isContextNullStream(trace_, op.pid, op.context_id, op.stream_id);
}

Ns DeviceView::idleSince(Ns time) const {
  auto it = std::lower_bound(idle_.begin(), idle_.end(), time,
                             [](const Interval& gap, Ns t) { return gap.end <= t; });
  return it != idle_.end() && it->start <= time ? it->start : time;
}

Ns DeviceView::idleWithin(Ns from, Ns to) const {
  if (to <= from) return 0;
  // Idle intervals are disjoint and sorted: whole ones between the two ends come from the prefix
  // sums, the ends are clipped (calls spanning the trace stay O(log n)).
  const auto first = std::lower_bound(idle_.begin(), idle_.end(), from,
                                      [](const Interval& gap, Ns t) { return gap.end <= t; });
  const auto last = std::lower_bound(first, idle_.end(), to,
                                     [](const Interval& gap, Ns t) { return gap.start < t; });
  if (first >= last) return 0;
  const auto i = static_cast<std::size_t>(first - idle_.begin());
  const auto j = static_cast<std::size_t>(last - idle_.begin());
  Ns total = idle_before_[j] - idle_before_[i];
  total -= std::max<Ns>(0, from - first->start);
  total -= std::max<Ns>(0, (last - 1)->end - to);
  return total;
}

std::optional<std::size_t> DeviceView::firstOpStartingAtOrAfter(Ns time) const {
  auto it = std::lower_bound(op_indices_.begin(), op_indices_.end(), time, [&](std::uint32_t i, Ns t) {
    return std::max(trace_.ops[i].start, window_start_) < t;
  });
  if (it == op_indices_.end()) return std::nullopt;
  return static_cast<std::size_t>(it - op_indices_.begin());
}

}  // namespace cuoverlap::diagnosis
