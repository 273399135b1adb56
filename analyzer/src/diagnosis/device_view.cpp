#include "diagnosis/device_view.h"

#include <algorithm>
#include <set>

namespace cuoverlap::diagnosis {

DeviceView::DeviceView(const Trace& trace, const Scope& scope, std::uint16_t device_id)
    : trace_(trace), device_id_(device_id) {
  selectOps(scope);
  selectCalls(scope);
  for (const Stream& s : trace_.streams) {
    streams_[{s.pid, s.context_id, s.stream_id}] = &s;
  }
  computeIdle();
  std::unordered_map<std::uint64_t, Ns> stream_end;
  for (const ScopedOp& scoped : ops_) {
    Ns& end = stream_end[streamKey(op(scoped))];
    previous_on_stream_end_.push_back(end);
    end = std::max(end, scoped.end);
  }
}

std::uint64_t DeviceView::streamKey(const GpuOp& op) {
  // Context ids and stream ids are small in practice; pid keeps processes apart.
  return (static_cast<std::uint64_t>(op.pid) << 40) ^
         (static_cast<std::uint64_t>(op.context_id) << 24) ^ op.stream_id;
}

std::optional<Ns> DeviceView::readyTime(std::size_t position) const {
  const std::optional<std::size_t> launch = launchCall(op(ops_[position]));
  if (!launch) return std::nullopt;
  return std::max(call(*launch).end, previous_on_stream_end_[position]);
}

void DeviceView::selectOps(const Scope& scope) {
  for (std::size_t i = 0; i < trace_.ops.size(); ++i) {
    const GpuOp& op = trace_.ops[i];
    if (op.device_id != device_id_ || (scope.pid && op.pid != *scope.pid)) continue;
    if (op.end < op.start) continue;
    if (op.start >= scope.window_end || op.end <= scope.window_start) {
      // Zero-length ops at the window start still belong to it.
      if (!(op.start == op.end && op.start == scope.window_start)) continue;
    }
    ops_.push_back({i, std::max(op.start, scope.window_start), std::min(op.end, scope.window_end)});
  }
  std::stable_sort(ops_.begin(), ops_.end(),
                   [](const ScopedOp& a, const ScopedOp& b) { return a.start < b.start; });
  for (const ScopedOp& op : ops_) span_end_ = std::max(span_end_, op.end);
}

void DeviceView::selectCalls(const Scope& scope) {
  std::set<std::uint32_t> pids;
  for (const ScopedOp& op : ops_) pids.insert(trace_.ops[op.index].pid);
  call_kinds_.assign(trace_.runtime_calls.size(), ApiKind::kOther);
  for (std::size_t i = 0; i < trace_.runtime_calls.size(); ++i) {
    const RuntimeCall& call = trace_.runtime_calls[i];
    if (pids.count(call.pid) == 0) continue;
    // Correlation lookups see every call, so that an op in the window finds a launch made
    // before the window began.
    auto [it, inserted] = call_by_correlation_.try_emplace(call.correlation_id, i);
    if (!inserted && trace_.runtime_calls[it->second].is_driver && !call.is_driver) it->second = i;
    call_kinds_[i] = classifyApi(trace_.str(call.name));
    if (call.start >= scope.window_end || call.end <= scope.window_start) continue;
    calls_.push_back(i);
  }
  call_by_correlation_.erase(0);
  std::stable_sort(calls_.begin(), calls_.end(), [&](std::size_t a, std::size_t b) {
    return trace_.runtime_calls[a].start < trace_.runtime_calls[b].start;
  });
  for (const SyncEvent& sync : trace_.syncs) {
    if (pids.count(sync.pid) == 0) continue;
    if (sync.start >= scope.window_end || sync.end < scope.window_start) continue;
    syncs_.push_back(&sync);
  }
}

void DeviceView::computeIdle() {
  Ns covered_until = spanStart();
  for (const ScopedOp& op : ops_) {
    if (op.start > covered_until) idle_.push_back({covered_until, op.start});
    covered_until = std::max(covered_until, op.end);
  }
}

std::string_view DeviceView::callName(std::size_t index) const {
  return apiBaseName(trace_.str(trace_.runtime_calls[index].name));
}

std::optional<std::size_t> DeviceView::launchCall(const GpuOp& op) const {
  if (op.correlation_id == 0) return std::nullopt;
  auto it = call_by_correlation_.find(op.correlation_id);
  if (it == call_by_correlation_.end()) return std::nullopt;
  return it->second;
}

const Device* DeviceView::device() const {
  for (const Device& d : trace_.devices) {
    if (d.device_id == device_id_) return &d;
  }
  return nullptr;
}

const Stream* DeviceView::stream(const GpuOp& op) const {
  auto it = streams_.find({op.pid, op.context_id, op.stream_id});
  return it == streams_.end() ? nullptr : it->second;
}

bool DeviceView::onLegacyDefaultStream(const GpuOp& op) const {
  if (const Stream* s = stream(op); s && s->flag == StreamFlag::kNull) return true;
  for (const Context& c : trace_.contexts) {
    if (c.context_id == op.context_id && (c.pid == op.pid || c.pid == 0) && c.null_stream_id &&
        *c.null_stream_id == op.stream_id) {
      return true;
    }
  }
  return false;
}

Ns DeviceView::idleSince(Ns time) const {
  auto it = std::lower_bound(idle_.begin(), idle_.end(), time,
                             [](const Interval& gap, Ns t) { return gap.end <= t; });
  return it != idle_.end() && it->start <= time ? it->start : time;
}

Ns DeviceView::idleWithin(Ns from, Ns to) const {
  Ns total = 0;
  auto it = std::lower_bound(idle_.begin(), idle_.end(), from,
                             [](const Interval& gap, Ns t) { return gap.end <= t; });
  for (; it != idle_.end() && it->start < to; ++it) {
    total += std::max<Ns>(0, std::min(to, it->end) - std::max(from, it->start));
  }
  return total;
}

std::optional<std::size_t> DeviceView::firstOpStartingAtOrAfter(Ns time) const {
  auto it = std::lower_bound(ops_.begin(), ops_.end(), time,
                             [](const ScopedOp& op, Ns t) { return op.start < t; });
  if (it == ops_.end()) return std::nullopt;
  return static_cast<std::size_t>(it - ops_.begin());
}

}  // namespace cuoverlap::diagnosis
