// The view every gap and finding rule works on: one device's ops inside the scope (the ops the
// metrics count, clipped to the window, sorted by start), the runtime calls of the processes that
// used the device, lookups between them, and the device's idle intervals. Built once per device
// and scope and shared by the gaps and every rule; rules only read.
//
// Memory: the view must stay small next to Trace::ops (10^7 ops in <= 100 bytes each), so it keeps
// one 32-bit index per op and yields ScopedOp values (clipped times) on the fly; per-op launch
// data (readyTime) exists only when the trace has runtime calls.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "cuoverlap/intervals.h"
#include "cuoverlap/report.h"
#include "cuoverlap/trace_index.h"
#include "diagnosis/api_names.h"
#include "diagnosis/call_index.h"

namespace cuoverlap::diagnosis {

class HostState;
struct PinnedRate;
struct PinnedRates;
class PinnedRateSample;
struct HostTimeline;
struct OrderEdge;

// An op of the view: its index in Trace::ops and its times clipped to the scope's window.
struct ScopedOp {
  std::size_t index = 0;
  Ns start = 0;
  Ns end = 0;
};

// The view's ops in start order, as ScopedOp values made from 32-bit indices into Trace::ops.
class ScopedOps {
 public:
  class Iterator {
   public:
    Iterator(const ScopedOps& ops, std::size_t pos) : ops_(&ops), pos_(pos) {}
    ScopedOp operator*() const { return (*ops_)[pos_]; }
    Iterator& operator++() { ++pos_; return *this; }
    bool operator!=(const Iterator& other) const { return pos_ != other.pos_; }

   private:
    const ScopedOps* ops_;
    std::size_t pos_;
  };

  ScopedOps(const std::vector<GpuOp>& all, const std::vector<std::uint32_t>& indices,
            Ns window_start, Ns window_end)
      : all_(all), indices_(indices), window_start_(window_start), window_end_(window_end) {}

  std::size_t size() const { return indices_.size(); }
  bool empty() const { return indices_.empty(); }
  ScopedOp operator[](std::size_t pos) const {
    const GpuOp& op = all_[indices_[pos]];
    return {indices_[pos], op.start < window_start_ ? window_start_ : op.start,
            op.end > window_end_ ? window_end_ : op.end};
  }
  ScopedOp front() const { return (*this)[0]; }
  Iterator begin() const { return {*this, 0}; }
  Iterator end() const { return {*this, size()}; }

 private:
  const std::vector<GpuOp>& all_;
  const std::vector<std::uint32_t>& indices_;
  Ns window_start_;
  Ns window_end_;
};

class WindowIndex;

class DeviceView {
 public:
  DeviceView(const Trace& trace, const Scope& scope, std::uint16_t device_id);
  // The same view restricted to [window_start, window_end) (intersected with whole's window),
  // equal to a view built with that window, but answered by binary search over `index` (built
  // once from `whole`, which must outlive this view): O(ops and calls in the window). Lookups
  // that do not depend on the window (launch calls, call kinds, streams) go to `whole`.
  // Defined in device_window.cpp.
  DeviceView(const DeviceView& whole, const WindowIndex& index, Ns window_start, Ns window_end);

  const Trace& trace() const { return trace_; }
  std::uint16_t deviceId() const { return device_id_; }
  ScopedOps ops() const { return {trace_.ops, op_indices_, window_start_, window_end_}; }
  const GpuOp& op(const ScopedOp& scoped) const { return trace_.ops[scoped.index]; }
  // The kind of the op at `position` of ops(), and whether it ran on a legacy default stream
  // (onLegacyDefaultStream), from a byte per op kept by the view: a pass that wants one kind of op
  // tests it before it reads the op (a cache miss per op at 10^7 ops), and passes that ask every
  // op for its stream make no search of the trace's legacy streams each.
  OpKind kindAt(std::size_t position) const { return static_cast<OpKind>(op_bits_[position] & kKindBits); }
  bool onLegacyDefaultStreamAt(std::size_t position) const { return (op_bits_[position] & kLegacyBit) != 0; }
  // Whether any op of ops() ran on a legacy default stream: a scan of the bytes, not of the ops.
  bool anyOnLegacyDefaultStream() const;
  // Positions in ops(), in order, of the copies with pageable host memory on either side; and of
  // the copies and memsets issued synchronously (a cudaMemcpy or cudaMemset launched them, or,
  // without a launch call, the trace says they were not asynchronous). Each listed from the view's
  // bytes per op on first use and kept: several rules ask.
  const std::vector<std::uint32_t>& pageableCopyPositions() const;
  const std::vector<std::uint32_t>& synchronousTransferPositions() const;
  bool empty() const { return op_indices_.empty(); }
  Ns spanStart() const { return empty() ? 0 : ops().front().start; }
  Ns spanEnd() const { return span_end_; }
  Ns spanLength() const { return spanEnd() - spanStart(); }

  // Runtime calls (indices into Trace::runtime_calls) of the processes that have ops on this
  // device, sorted by start, that overlap the view's host range: from the start of the first
  // launch call of its ops (or its first op) to the end of its last op, inside the window. Host
  // activity outside that range cannot shape this device's timeline, and taking only that range
  // keeps one process on N devices linear (each view a binary search in the CallIndex).
  const std::vector<std::size_t>& calls() const { return calls_; }
  const RuntimeCall& call(std::size_t index) const { return trace_.runtime_calls[index]; }
  ApiKind callKind(std::size_t index) const { return call_index_->kind(index); }
  std::string_view callName(std::size_t index) const;
  bool hasRuntimeData() const { return !calls_.empty(); }

  // The call that launched `op` (by correlation id; runtime calls preferred over driver calls).
  std::optional<std::size_t> launchCall(const GpuOp& op) const {
    return call_index_->launchCall(op.pid, op.correlation_id);
  }

  // When the op at `position` of ops() could have started: its launch call returned and the
  // previous op of its stream ended. Empty without a launch call.
  std::optional<Ns> readyTime(std::size_t position) const;
  // Ops of the same stream (pid, context, stream) share a key.
  static std::uint64_t streamKey(const GpuOp& op) { return streamKey(op.pid, op.context_id, op.stream_id); }
  static std::uint64_t streamKey(std::uint32_t pid, std::uint32_t context_id, std::uint32_t stream_id) {
    // Context ids and stream ids are small in practice; pid keeps processes apart.
    return (static_cast<std::uint64_t>(pid) << 40) ^ (static_cast<std::uint64_t>(context_id) << 24) ^ stream_id;
  }

  // What each host thread of the view's processes was doing (host_state.h); built on first use.
  const HostState& hostState() const;

  // A copy or memset engine's turnaround: the median time from one op's end to the next op's
  // start on that engine where the next was already waiting (readyTime by the first one's end)
  // and no other op ended in between (an event wait may have held it); 0 when no such pair.
  // On the H100, queued pinned HtoD copies start about 1.3 µs after the previous one ends.
  // Built on first use: O(n log n).
  Ns engineTurnaround(Engine engine) const;

  // A stream's handoff from an op on engine `from` to the next op of the same stream on engine
  // `to`, when that op was already waiting (its launch call returned, plus its engine's
  // launchLatency, by the first's end: as the schedule releases it): the median time from the
  // first's end to the second's start over such pairs with no other op ending in between and,
  // into a kernel, no kernel of another stream running through the gap (it may have waited for
  // the SMs, which the schedule shares on its own) (the device signals the first's
  // completion before the second may start: on an H100 about 1.2 µs kernel to kernel, 4-6 µs
  // between a copy and a kernel). Engines group as the schedule's (compute with communication,
  // device-to-device with other copies). A pair the trace never shows queued takes the median of
  // the handoffs into `to` from other engines; into a copy over the host link that the trace
  // never shows queued behind any engine, the H100's 5 µs (below), as out of one; but out of a
  // copy over the host link (HtoD, DtoH), whose end the device signals over that link, another
  // engine's handoff into `to` says nothing: such a pair takes the H100's 5 µs, never more than
  // the trace shows between two ops of a stream on those engines (the lab corpus: DtoH to kernel
  // 7.9 µs where measured, against the 3.3-3.5 µs HtoD to kernel of traces that never queue one).
  // Nor does a host-link copy's handoff measure one between two engines on the device (kernels,
  // device-to-device copies, memsets), which the device signals itself: such a pair takes the
  // handoffs into `to` from other on-device engines, else those between on-device engines, else
  // 0 (in the lab's fixed programs on an H100, a device-to-device copy starts 1.3-1.4 µs after a
  // kernel and a kernel as soon after it, where HtoD copy to kernel takes 5-9 µs).
  // A trace that shows none (a program whose host waited for every copy) still pays one between
  // a copy over the host link and another engine: the H100's 5 µs; other pairs 0 (same-engine
  // pairs: 0).
  // Built on first use: O(n log n).
  Ns streamHandoff(Engine from, Engine to) const;
  // The handoff between two kernel nodes of one CUDA graph launch on a stream, when the second was
  // already waiting: the median time from a node's end to the next node's start over such pairs
  // with no other op ending in between (a graph's nodes are submitted together and start sooner
  // after each other than stream-launched kernels: on an H100 about 0.4 µs against the stream's
  // 1.0-1.2 µs). 0 when the trace replays no graph. Built with streamHandoff's.
  Ns graphNodeHandoff() const;

  // How long after its launch call returns an op on `engine` starts when nothing holds it: the
  // median of start - call end over the ops whose call returned before they started onto an idle
  // device (no op of the view running from the call's end to the op's start), so that the delay
  // is the submission's own (on an H100 about 5-9 µs for a kernel). An op the device holds
  // behind others never shows it, and the schedule lets such an op start at its hand-off. 0 when
  // the trace shows no such op on that engine (or has no launch calls). Built on first use: O(n).
  Ns launchLatency(Engine engine) const;

  // How many of the view's ops end after `from` and before `to` (at `to` too where `through`):
  // whether another op's end may have released an op instead. The sorted ends are built on the
  // first question (a trace without launch calls or waits asks none) and kept: O(n log n) once,
  // then O(log n).
  std::ptrdiff_t opsEndingIn(Ns from, Ns to, bool through) const;

  // Synchronization records of the view's processes inside the host range, in Trace::syncs order.
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
  // Indices into Trace::ops of ops(), in the same order.
  const std::vector<std::uint32_t>& opIndices() const { return op_indices_; }
  Ns windowStart() const { return window_start_; }
  Ns windowEnd() const { return window_end_; }

 private:
  // Returns whether idle_ was found on the way (the ops came sorted). Every op of the device
  // goes to `pinned`, in scope or not.
  bool selectOps(const Scope& scope, std::vector<std::uint32_t>& pids, PinnedRateSample& pinned);
  void selectCalls(const std::vector<std::uint32_t>& pids);
  std::vector<std::uint32_t> viewPids() const;
  Interval hostRange() const;
  void selectHostRecords(const std::vector<std::uint32_t>& pids, std::vector<std::size_t> calls,
                         std::vector<const SyncEvent*> syncs);
  // idle_ (unless `found`) and its prefix sums.
  void computeIdle(bool found = false);
  void computePreviousOnStreamEnds();

  const Trace& trace_;
  const CallIndex* call_index_;  // callIndex(trace_): launch lookups, call kinds, streams
  std::uint16_t device_id_;
  Ns window_start_;
  Ns window_end_;
  std::vector<std::uint32_t> op_indices_;  // into Trace::ops, sorted by clipped start
  // Per position of ops(): the OpKind in kKindBits, kLegacyBit when on a legacy default stream,
  // kPageableBit for a copy with pageable host memory, kSynchronousBit for a copy or memset
  // issued synchronously: found where the view selects its ops, which reads each op anyway.
  static constexpr std::uint8_t kKindBits = 0x3;
  static constexpr std::uint8_t kLegacyBit = 0x4;
  static constexpr std::uint8_t kPageableBit = 0x8;
  static constexpr std::uint8_t kSynchronousBit = 0x10;
  std::uint8_t opBits(const GpuOp& op) const;
  const std::vector<std::uint32_t>& positionsWith(std::uint8_t bit,
                                                  std::shared_ptr<const std::vector<std::uint32_t>>& kept) const;
  std::vector<std::uint8_t> op_bits_;
  Ns span_end_ = 0;
  std::vector<std::size_t> calls_;
  bool has_launch_calls_ = false;  // some process of the view has a call with a correlation id
  std::vector<const SyncEvent*> syncs_;
  std::vector<Interval> idle_;
  std::vector<Ns> idle_before_;  // [i] = total length of idle_[0 .. i): idleWithin in O(log n)
  mutable std::shared_ptr<const HostState> host_state_;
  mutable std::shared_ptr<const std::vector<Ns>> turnaround_;  // per Engine value
  // per engine group pair (from, to), then the graph node handoff
  mutable std::shared_ptr<const std::vector<Ns>> handoff_;
  mutable std::shared_ptr<const std::vector<Ns>> launch_latency_;  // per engine slot
  mutable std::shared_ptr<const std::vector<Ns>> sorted_ends_;     // opsEndingIn's
  mutable std::shared_ptr<const std::vector<std::uint32_t>> pageable_copies_;         // positions
  mutable std::shared_ptr<const std::vector<std::uint32_t>> synchronous_transfers_;  // positions
  // Per position of ops(); 0 for a stream's first op. Empty without launch calls (readyTime
  // needs one, so nothing would read it).
  std::vector<Ns> previous_on_stream_end_;
  // The trace's legacy default streams (legacyDefaultStreams): onLegacyDefaultStream's answer.
  const LegacyDefaultStreams* legacy_streams_ = nullptr;

  // The device's pinned copy rate per direction (pinned_rate.h): the device's ops decide it, and
  // several rules ask for it; found by the view's pass over them (a window's: its whole view's),
  // else on the first question.
  mutable std::shared_ptr<const PinnedRates> pinned_rates_;

  friend class WindowIndex;
  // buildHostTimeline(view)'s, built on the first question.
  mutable std::shared_ptr<const HostTimeline> host_timeline_;

  friend PinnedRate pinnedRate(const DeviceView& view, Engine direction);
  friend const HostTimeline& buildHostTimeline(const DeviceView& view);
  mutable std::shared_ptr<const std::vector<OrderEdge>> engine_holds_;
  friend const std::vector<OrderEdge>& engineHolds(const DeviceView& view);
};

// Per position of view.ops(): the position of the previous op on its stream (DeviceView::streamKey),
// -1 for a stream's first op.
std::vector<std::int64_t> previousOnStream(const DeviceView& view);

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
