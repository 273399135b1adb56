// The view every gap and finding rule works on: one device's ops inside the scope (clipped to the
// window, sorted by start), the runtime calls of the processes that used the device, lookups
// between them, and the device's idle intervals. Built once per device and scope; rules only read.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "cuoverlap/intervals.h"
#include "cuoverlap/report.h"
#include "diagnosis/api_names.h"

namespace cuoverlap::diagnosis {

// An op of the view: its index in Trace::ops and its times clipped to the scope's window.
struct ScopedOp {
  std::size_t index = 0;
  Ns start = 0;
  Ns end = 0;
};

class DeviceView {
 public:
  DeviceView(const Trace& trace, const Scope& scope, std::uint16_t device_id);

  const Trace& trace() const { return trace_; }
  std::uint16_t deviceId() const { return device_id_; }
  const std::vector<ScopedOp>& ops() const { return ops_; }
  const GpuOp& op(const ScopedOp& scoped) const { return trace_.ops[scoped.index]; }
  bool empty() const { return ops_.empty(); }
  Ns spanStart() const { return ops_.empty() ? 0 : ops_.front().start; }
  Ns spanEnd() const { return span_end_; }
  Ns spanLength() const { return spanEnd() - spanStart(); }

  // Runtime calls (indices into Trace::runtime_calls) of the processes that have ops on this
  // device, inside the window, sorted by start.
  const std::vector<std::size_t>& calls() const { return calls_; }
  const RuntimeCall& call(std::size_t index) const { return trace_.runtime_calls[index]; }
  ApiKind callKind(std::size_t index) const { return call_kinds_[index]; }
  std::string_view callName(std::size_t index) const;
  bool hasRuntimeData() const { return !calls_.empty(); }

  // The call that launched `op` (by correlation id; runtime calls preferred over driver calls).
  std::optional<std::size_t> launchCall(const GpuOp& op) const;

  // When the op at `position` of ops() could have started: its launch call returned and the
  // previous op of its stream ended. Empty without a launch call.
  std::optional<Ns> readyTime(std::size_t position) const;
  // Ops of the same stream (pid, context, stream) share a key.
  static std::uint64_t streamKey(const GpuOp& op);

  // Synchronization records of the view's processes inside the window.
  const std::vector<const SyncEvent*>& syncs() const { return syncs_; }

  const Device* device() const;
  const Stream* stream(const GpuOp& op) const;
  // The legacy default (null) stream: flag NULL in the stream table or the context's nullStreamId.
  bool onLegacyDefaultStream(const GpuOp& op) const;

  // Maximal intervals inside the span with no op active, in time order.
  const std::vector<Interval>& idle() const { return idle_; }
  // The start of the idle interval that contains `time`, or `time` when the device is busy then.
  Ns idleSince(Ns time) const;
  // Idle time of the device inside [from, to).
  Ns idleWithin(Ns from, Ns to) const;
  // Position in ops() of the first op starting at or after `time`, if any.
  std::optional<std::size_t> firstOpStartingAtOrAfter(Ns time) const;

 private:
  void selectOps(const Scope& scope);
  void selectCalls(const Scope& scope);
  void computeIdle();

  const Trace& trace_;
  std::uint16_t device_id_;
  std::vector<ScopedOp> ops_;
  Ns span_end_ = 0;
  std::vector<std::size_t> calls_;
  std::vector<ApiKind> call_kinds_;  // per Trace::runtime_calls index (only scoped ones set)
  std::unordered_map<std::uint32_t, std::size_t> call_by_correlation_;
  std::vector<const SyncEvent*> syncs_;
  std::map<std::tuple<std::uint32_t, std::uint32_t, std::uint32_t>, const Stream*> streams_;  // pid, ctx, stream
  std::vector<Interval> idle_;
  std::vector<Ns> previous_on_stream_end_;  // per position of ops(); 0 for a stream's first op
};

// Keeps the `limit` items with the largest key, returned in time order (by `time`).
template <typename T, typename Key, typename Time>
std::vector<T> largestInTimeOrder(std::vector<T> items, std::size_t limit, Key key, Time time);

}  // namespace cuoverlap::diagnosis

#include <algorithm>

namespace cuoverlap::diagnosis {

template <typename T, typename Key, typename Time>
std::vector<T> largestInTimeOrder(std::vector<T> items, std::size_t limit, Key key, Time time) {
  std::stable_sort(items.begin(), items.end(),
                   [&](const T& a, const T& b) { return key(a) > key(b); });
  if (items.size() > limit) items.resize(limit);
  std::stable_sort(items.begin(), items.end(),
                   [&](const T& a, const T& b) { return time(a) < time(b); });
  return items;
}

}  // namespace cuoverlap::diagnosis
