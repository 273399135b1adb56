#include "diagnosis/device_view.h"

#include <fmt/core.h>

#include <algorithm>
#include <limits>
#include <unordered_map>

#include "cuoverlap/error.h"
#include "cuoverlap/metrics.h"
#include "diagnosis/call_index.h"
#include "diagnosis/host_state.h"
#include "diagnosis/median.h"
#include "diagnosis/pinned_rate.h"

namespace cuoverlap::diagnosis {

DeviceView::DeviceView(const Trace& trace, const Scope& scope, std::uint16_t device_id)
    : trace_(trace), call_index_(&callIndex(trace)), device_id_(device_id),
      window_start_(scope.window_start), window_end_(scope.window_end),
      legacy_streams_(&legacyDefaultStreams(trace)) {
  std::vector<std::uint32_t> pids;
  PinnedRateSample pinned;
  const bool idle_found = selectOps(scope, pids, pinned);
  pinned_rates_ = std::make_shared<const PinnedRates>(pinned.rates(device()));
  selectCalls(pids);
  computeIdle(idle_found);
  computePreviousOnStreamEnds();
}

std::optional<Ns> DeviceView::readyTime(std::size_t position) const {
  const std::optional<std::size_t> launch = launchCall(op(ops()[position]));
  if (!launch) return std::nullopt;
  return std::max(call(*launch).end, previous_on_stream_end_[position]);
}

bool DeviceView::selectOps(const Scope& scope, std::vector<std::uint32_t>& pids, PinnedRateSample& pinned) {
  if (trace_.ops.size() > std::numeric_limits<std::uint32_t>::max()) {
    throw UserError(fmt::format("{}: more than 2^32 GPU ops", trace_.path));
  }
  // The device's ops only (opsOnDevice): a scan of every op per device is quadratic in devices.
  const std::vector<std::uint32_t>& on_device = opsOnDevice(trace_, device_id_);
  op_indices_.reserve(on_device.size());
  op_bits_.reserve(on_device.size());
  // One pass (each op is a cache miss at 10^7 ops): the ops in scope, whether they come sorted by
  // clipped start, the span's end, the processes (viewPids'), while they come sorted, the idle
  // intervals (computeIdle's), and the device's pinned copies (pinnedRate's).
  bool sorted = true;
  Ns last_start = std::numeric_limits<Ns>::min();
  Ns covered_until = 0;
  for (std::uint32_t i : on_device) {
    const GpuOp& op = trace_.ops[i];
    pinned.add(op);
    // The metrics' rule (opInScope), so that gaps, findings and metrics count the same ops.
    if (!opInScope(op, scope)) continue;
    op_indices_.push_back(i);
    op_bits_.push_back(opBits(op));
    if (pids.empty() || pids.back() != op.pid) pids.push_back(op.pid);  // runs of one pid are common
    const Ns start = clippedStart(op, scope);
    const Ns end = clippedEnd(op, scope);
    sorted = sorted && start >= last_start;
    last_start = start;
    span_end_ = std::max(span_end_, end);
    if (op_indices_.size() == 1) covered_until = start;
    if (start > covered_until) idle_.push_back({covered_until, start});
    covered_until = std::max(covered_until, end);
  }
  std::sort(pids.begin(), pids.end());
  pids.erase(std::unique(pids.begin(), pids.end()), pids.end());
  // The reader returns ops sorted by start and clipping keeps that order; test-built traces may not.
  if (!sorted) {
    std::stable_sort(op_indices_.begin(), op_indices_.end(), [&](std::uint32_t a, std::uint32_t b) {
      return clippedStart(trace_.ops[a], scope) < clippedStart(trace_.ops[b], scope);
    });
    for (std::size_t pos = 0; pos < op_indices_.size(); ++pos) op_bits_[pos] = opBits(trace_.ops[op_indices_[pos]]);
    idle_.clear();  // found out of order: computeIdle's pass
  }
  return sorted;
}

std::vector<std::uint32_t> DeviceView::viewPids() const {
  std::vector<std::uint32_t> pids;
  for (std::uint32_t i : op_indices_) {
    const std::uint32_t pid = trace_.ops[i].pid;
    if (pids.empty() || pids.back() != pid) pids.push_back(pid);  // runs of one pid are common
  }
  std::sort(pids.begin(), pids.end());
  pids.erase(std::unique(pids.begin(), pids.end()), pids.end());
  return pids;
}

Interval DeviceView::hostRange() const {
  if (empty()) return {0, 0};
  Ns from = spanStart();
  if (!has_launch_calls_) return {std::max(from, window_start_), span_end_};
  for (std::uint32_t i : op_indices_) {
    const GpuOp& op = trace_.ops[i];
    if (const auto launch = call_index_->launchCall(op.pid, op.correlation_id)) {
      from = std::min(from, call(*launch).start);
    }
  }
  return {std::max(from, window_start_), span_end_};
}

void DeviceView::selectHostRecords(const std::vector<std::uint32_t>& pids,
                                   std::vector<std::size_t> calls,
                                   std::vector<const SyncEvent*> syncs) {
  // Several processes' calls interleave: by start, then by index (the order of one process's).
  if (pids.size() > 1) {
    std::sort(calls.begin(), calls.end(), [&](std::size_t a, std::size_t b) {
      const Ns sa = trace_.runtime_calls[a].start;
      const Ns sb = trace_.runtime_calls[b].start;
      return sa != sb ? sa < sb : a < b;
    });
  }
  calls_ = std::move(calls);
  std::sort(syncs.begin(), syncs.end());  // pointers into Trace::syncs: trace order
  syncs_ = std::move(syncs);
}

void DeviceView::selectCalls(const std::vector<std::uint32_t>& pids) {
  for (std::uint32_t pid : pids) {
    has_launch_calls_ = has_launch_calls_ || call_index_->hasLaunchCalls(pid);
  }
  const Interval range = hostRange();
  std::vector<std::size_t> calls;
  std::vector<const SyncEvent*> syncs;
  for (std::uint32_t pid : pids) {
    call_index_->appendCallsOverlapping(pid, range.start, range.end, calls);
    call_index_->appendSyncsOverlapping(pid, range.start, range.end, syncs);
  }
  selectHostRecords(pids, std::move(calls), std::move(syncs));
}

void DeviceView::computePreviousOnStreamEnds() {
  if (!has_launch_calls_) return;
  previous_on_stream_end_.reserve(op_indices_.size());
  std::unordered_map<std::uint64_t, Ns> stream_end;
  for (const ScopedOp scoped : ops()) {
    Ns& end = stream_end[streamKey(op(scoped))];
    previous_on_stream_end_.push_back(end);
    end = std::max(end, scoped.end);
  }
}

void DeviceView::computeIdle(bool found) {
  if (!found) {
    Ns covered_until = spanStart();
    for (const ScopedOp op : ops()) {
      if (op.start > covered_until) idle_.push_back({covered_until, op.start});
      covered_until = std::max(covered_until, op.end);
    }
  }
  idle_before_.reserve(idle_.size() + 1);
  idle_before_.push_back(0);
  for (const Interval& gap : idle_) idle_before_.push_back(idle_before_.back() + gap.length());
}

const HostState& DeviceView::hostState() const {
  if (!host_state_) host_state_ = std::make_shared<const HostState>(*this);
  return *host_state_;
}

namespace {

std::vector<Ns> measureTurnaround(const DeviceView& view) {
  constexpr std::size_t kEngineValues = static_cast<std::size_t>(Engine::kComm) + 1;
  // Without launch calls no op has a known ready time, so no gap is measured.
  if (view.trace().runtime_calls.empty()) return std::vector<Ns>(kEngineValues, 0);
  const auto& ops = view.ops();
  const auto endsWithin = [&](Ns from, Ns to) { return view.opsEndingIn(from, to, false); };
  std::vector<std::vector<Ns>> gaps(kEngineValues);
  std::vector<std::int64_t> last(kEngineValues, -1);
  for (std::size_t pos = 0; pos < ops.size(); ++pos) {
    const Engine engine = engineOf(view.op(ops[pos]));
    if (engine == Engine::kCompute || engine == Engine::kComm) continue;
    const auto e = static_cast<std::size_t>(engine);
    if (last[e] >= 0) {
      const Ns previous_end = ops[static_cast<std::size_t>(last[e])].end;
      const std::optional<Ns> ready = view.readyTime(pos);
      if (ready && *ready <= previous_end && endsWithin(previous_end, ops[pos].start) == 0) {
        gaps[e].push_back(std::max<Ns>(0, ops[pos].start - previous_end));
      }
    }
    last[e] = static_cast<std::int64_t>(pos);
  }
  std::vector<Ns> turnaround(kEngineValues, 0);
  for (std::size_t e = 0; e < kEngineValues; ++e) {
    std::vector<Ns>& g = gaps[e];
    if (g.empty()) continue;
    std::nth_element(g.begin(), g.begin() + static_cast<std::ptrdiff_t>(g.size() / 2), g.end());
    turnaround[e] = g[g.size() / 2];
  }
  return turnaround;
}

bool isGraphNode(const GpuOp& op) {
  return op.kind == OpKind::kKernel && (op.flags & op_flag::kFromGraph) != 0;
}

// The handoff between engine slots `from` and `to` (different) where the trace knows when its ops
// were ready (their launch calls) but shows no stream's op queued behind another's on a different
// engine (a program whose host waited for every copy), or none queued behind a host-link copy on
// that pair (a DtoH copy the host always synchronized on): a copy over the host link (HtoD, DtoH)
// and an op on another engine still signal each other through the device, about 5 µs on an H100 (the
// lab corpus' medians: HtoD to kernel 5.3 µs, kernel to DtoH 5.0, kernel to HtoD 3.9, DtoH to
// HtoD 5.4), never more than the trace shows between two consecutive ops of a stream on those
// engines; other pairs (a device-to-device copy or a memset and a kernel: 1.4 µs) stay 0, as
// does every pair of a trace without launch calls.
constexpr Ns kHostLinkHandoffNs = 5'000;

// How long before the previous op's end an op must have been released for its gap to be a handoff
// sample between two engines (measureHandoff).
constexpr Ns kSettledReleaseNs = 3'000;

bool overHostLink(std::size_t slot) {
  return slot == engineSlot(Engine::kH2D) || slot == engineSlot(Engine::kD2H);
}

Ns unmeasuredHandoff(std::size_t from, std::size_t to) {
  return overHostLink(from) || overHostLink(to) ? kHostLinkHandoffNs : 0;
}

// Per (from, to) engine slot, row-major: streamHandoff's medians with their fallbacks; then, last,
// graphNodeHandoff's median (0 without graph nodes). A pair of nodes of one graph launch counts
// toward both: a trace that replays graphs hands off between its kernels that fast.
std::vector<Ns> measureHandoff(const DeviceView& view) {
  const auto& ops = view.ops();
  // Ops ending in (from, to]: one ending right when the next op starts may have released it.
  const auto endsWithin = [&](Ns from, Ns to) { return view.opsEndingIn(from, to, true); };
  std::vector<std::vector<Ns>> gaps(kEngineSlots * kEngineSlots);
  std::vector<Ns> node_gaps;  // kernel node to kernel node of one graph launch
  std::unordered_map<std::uint64_t, std::size_t> last_on_stream;
  bool timed = false;  // some op after another of its stream has a known ready time
  // per (from, to) slot: the shortest time between consecutive ops of a stream, queued or not
  std::vector<Ns> shortest(kEngineSlots * kEngineSlots, std::numeric_limits<Ns>::max());
  Ns kernels_end = std::numeric_limits<Ns>::min();  // the latest end of the kernels before pos
  for (std::size_t pos = 0; pos < ops.size(); ++pos) {
    const GpuOp& op = view.op(ops[pos]);
    const Ns kernels_end_before = kernels_end;
    if (op.kind == OpKind::kKernel) kernels_end = std::max(kernels_end, ops[pos].end);
    const auto [it, first] = last_on_stream.try_emplace(DeviceView::streamKey(op), pos);
    if (first) continue;
    const std::size_t previous = it->second;
    it->second = pos;
    const Ns previous_end = ops[previous].end;
    const GpuOp& previous_op = view.op(ops[previous]);
    const std::size_t pair = engineSlot(engineOf(previous_op)) * kEngineSlots + engineSlot(engineOf(op));
    if (ops[pos].start >= previous_end) shortest[pair] = std::min(shortest[pair], ops[pos].start - previous_end);
    const std::optional<Ns> ready = view.readyTime(pos);
    timed = timed || ready.has_value();
    if (!ready || *ready > previous_end || ops[pos].start < previous_end ||
        endsWithin(previous_end, ops[pos].start) != 0) {
      continue;
    }
    if (isGraphNode(op) && isGraphNode(previous_op)) {
      const auto launch = view.launchCall(op);
      if (launch && launch == view.launchCall(previous_op)) node_gaps.push_back(ops[pos].start - previous_end);
    }
    // A sample is the stream's own handoff only where nothing else explains the gap: the op was
    // released by the time the previous one ended, or started sooner after its call than its
    // engine's launch latency (the schedule releases an op at its call's return plus that
    // latency: one whose call returned just before, and that then took the latency, was still
    // being submitted, and its gap holds the submission, which the schedule adds as its release);
    // and, into a kernel, no kernel of another stream ran through the gap (the kernel may have
    // waited for the SMs that one held, which the schedule's SM sharing adds).
    // Between two engines the op must also have been released well before the previous one ended
    // (kSettledReleaseNs): the next engine's wait on the previous one's end (a semaphore the
    // previous engine releases) is the handoff only for an op already waiting there; one released
    // within 3 µs of the end was still being taken in, and its gap is 2-3 µs longer than the
    // same pair's gap where queued earlier (the lab's fixed programs' traces: +2.3 to +3.4 µs for
    // ops whose call returned 0-3 µs before the end, +1.3 at 3-4 µs, none from 4 µs on). Two ops
    // of one engine hand off in that engine's own queue and show no such difference (HtoD -> HtoD
    // 1.31 µs, kernel -> kernel 1.18-1.31 at every lead from 0.3 µs on): their samples stay, or
    // a trace whose only HtoD -> HtoD sample was released late would lose the handoff altogether.
    const Ns returned = view.call(*view.launchCall(op)).end;
    const Ns latency = view.launchLatency(engineOf(op));
    const bool between_engines = engineSlot(engineOf(previous_op)) != engineSlot(engineOf(op));
    if ((returned + latency > previous_end && ops[pos].start >= returned + latency) ||
        (between_engines && returned + latency + kSettledReleaseNs > previous_end) ||
        (op.kind == OpKind::kKernel && kernels_end_before > previous_end)) {
      continue;
    }
    gaps[pair].push_back(ops[pos].start - previous_end);
  }
  std::vector<Ns> handoff(kEngineSlots * kEngineSlots, 0);
  // Handoffs between two on-device engines: a host-link copy's handoff does not measure them.
  std::vector<Ns> between_on_device;
  for (std::size_t from = 0; from < kEngineSlots; ++from) {
    for (std::size_t to = 0; to < kEngineSlots; ++to) {
      if (from == to || overHostLink(from) || overHostLink(to)) continue;
      between_on_device.insert(between_on_device.end(), gaps[from * kEngineSlots + to].begin(),
                               gaps[from * kEngineSlots + to].end());
    }
  }
  const Ns on_device = medianOf(between_on_device);
  for (std::size_t to = 0; to < kEngineSlots; ++to) {
    std::vector<Ns> into;
    std::vector<Ns> into_on_device;
    for (std::size_t from = 0; from < kEngineSlots; ++from) {
      if (from == to) continue;
      const std::vector<Ns>& pair = gaps[from * kEngineSlots + to];
      into.insert(into.end(), pair.begin(), pair.end());
      if (!overHostLink(from)) {
        into_on_device.insert(into_on_device.end(), pair.begin(), pair.end());
      }
    }
    const bool into_measured = !into.empty();
    const Ns any_into = medianOf(std::move(into));
    const Ns any_into_on_device =
        into_on_device.empty() ? on_device : medianOf(std::move(into_on_device));
    for (std::size_t from = 0; from < kEngineSlots; ++from) {
      const std::size_t at = from * kEngineSlots + to;
      // Out of a host-link copy the device signals the copy's end over that link: another
      // engine's handoff into `to` (an HtoD copy's, a kernel's) does not measure it; nor does
      // a host-link copy's handoff measure one between two engines on the device (the device
      // signals those ends itself; unmeasured, about a microsecond, unmodelled as below).
      // Into a host-link copy that the trace never shows queued behind any engine, the
      // handoffs between other engines (an HtoD copy into a kernel) do not measure it either: it
      // takes the host link's 5 µs, as out of one. In the lab's fixed programs (remove-sync)
      // whose recorded trace had no queued kernel -> DtoH pair (every DtoH after a synchronize),
      // that handoff is 2.8-7.1 µs (median 4.9, 16 programs); the other pairs' median had taken
      // 2.6-9.0 (median error 2.0 µs, 0.7 high), the 5 µs takes 1.4-5 (error 1.5 µs).
      const bool out_of_host_link = overHostLink(from);
      const Ns unmeasured = !out_of_host_link && !overHostLink(to) ? any_into_on_device
                            : into_measured && !out_of_host_link ? any_into
                            : timed ? std::min(unmeasuredHandoff(from, to), shortest[at])
                                    : 0;
      handoff[at] = !gaps[at].empty() ? medianOf(gaps[at]) : (from == to ? 0 : unmeasured);
    }
  }
  handoff.push_back(medianOf(std::move(node_gaps)));
  return handoff;
}

// Per engine slot: launchLatency's median (0 without a sample).
std::vector<Ns> measureLaunchLatency(const DeviceView& view) {
  std::vector<std::vector<Ns>> delays(kEngineSlots);
  const auto& ops = view.ops();
  for (std::size_t pos = 0; pos < ops.size(); ++pos) {
    const ScopedOp scoped = ops[pos];
    const auto launch = view.launchCall(view.op(scoped));
    if (!launch) continue;
    const Ns returned = view.call(*launch).end;
    if (returned > scoped.start || returned < view.spanStart()) continue;
    if (view.idleWithin(returned, scoped.start) != scoped.start - returned) continue;  // something ran
    delays[engineSlot(engineOf(view.op(scoped)))].push_back(scoped.start - returned);
  }
  std::vector<Ns> latency(kEngineSlots, 0);
  for (std::size_t slot = 0; slot < kEngineSlots; ++slot) latency[slot] = medianOf(std::move(delays[slot]));
  return latency;
}

}  // namespace

std::ptrdiff_t DeviceView::opsEndingIn(Ns from, Ns to, bool through) const {
  if (!sorted_ends_) {
    std::vector<Ns> ends;
    ends.reserve(ops().size());
    for (const ScopedOp& op : ops()) ends.push_back(op.end);
    std::sort(ends.begin(), ends.end());
    sorted_ends_ = std::make_shared<const std::vector<Ns>>(std::move(ends));
  }
  const std::vector<Ns>& ends = *sorted_ends_;
  const auto last = through ? std::upper_bound(ends.begin(), ends.end(), to)
                            : std::lower_bound(ends.begin(), ends.end(), to);
  return last - std::upper_bound(ends.begin(), ends.end(), from);
}

Ns DeviceView::launchLatency(Engine engine) const {
  if (!launch_latency_) launch_latency_ = std::make_shared<const std::vector<Ns>>(measureLaunchLatency(*this));
  return (*launch_latency_)[engineSlot(engine)];
}

Ns DeviceView::streamHandoff(Engine from, Engine to) const {
  if (!handoff_) handoff_ = std::make_shared<const std::vector<Ns>>(measureHandoff(*this));
  return (*handoff_)[engineSlot(from) * kEngineSlots + engineSlot(to)];
}

Ns DeviceView::graphNodeHandoff() const {
  if (!handoff_) handoff_ = std::make_shared<const std::vector<Ns>>(measureHandoff(*this));
  return handoff_->back();
}

Ns DeviceView::engineTurnaround(Engine engine) const {
  if (!turnaround_) turnaround_ = std::make_shared<const std::vector<Ns>>(measureTurnaround(*this));
  return (*turnaround_)[static_cast<std::size_t>(engine)];
}

std::string_view DeviceView::callName(std::size_t index) const {
  return apiBaseName(trace_.str(trace_.runtime_calls[index].name));
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
  return call_index_->stream(op.pid, op.context_id, op.stream_id);
}

std::uint8_t DeviceView::opBits(const GpuOp& op) const {
  std::uint8_t bits = static_cast<std::uint8_t>(op.kind);
  if (onLegacyDefaultStream(op)) bits |= kLegacyBit;
  if (op.kind == OpKind::kKernel) return bits;
  if (op.kind == OpKind::kMemcpy && (op.src_kind == MemKind::kPageable || op.dst_kind == MemKind::kPageable)) {
    bits |= kPageableBit;
  }
  const bool synchronous = [&] {
    if (const auto call = launchCall(op)) {
      return callKind(*call) == (op.kind == OpKind::kMemcpy ? ApiKind::kMemcpySync : ApiKind::kMemsetSync);
    }
    return (op.flags & op_flag::kAsyncKnown) != 0 && (op.flags & op_flag::kAsync) == 0;
  }();
  if (synchronous) bits |= kSynchronousBit;
  return bits;
}

const std::vector<std::uint32_t>& DeviceView::positionsWith(
    std::uint8_t bit, std::shared_ptr<const std::vector<std::uint32_t>>& kept) const {
  if (!kept) {
    std::vector<std::uint32_t> positions;
    for (std::size_t pos = 0; pos < op_bits_.size(); ++pos) {
      if ((op_bits_[pos] & bit) != 0) positions.push_back(static_cast<std::uint32_t>(pos));
    }
    kept = std::make_shared<const std::vector<std::uint32_t>>(std::move(positions));
  }
  return *kept;
}

bool DeviceView::anyOnLegacyDefaultStream() const {
  return std::any_of(op_bits_.begin(), op_bits_.end(), [](std::uint8_t bits) { return (bits & kLegacyBit) != 0; });
}

const std::vector<std::uint32_t>& DeviceView::pageableCopyPositions() const {
  return positionsWith(kPageableBit, pageable_copies_);
}

const std::vector<std::uint32_t>& DeviceView::synchronousTransferPositions() const {
  return positionsWith(kSynchronousBit, synchronous_transfers_);
}

bool DeviceView::onLegacyDefaultStream(const GpuOp& op) const {
  // The stream table's flag NULL, or the context's nullStreamId (isContextNullStream's rule).
  return legacy_streams_->contains(op);
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

std::vector<std::int64_t> previousOnStream(const DeviceView& view) {
  std::vector<std::int64_t> previous(view.ops().size(), -1);
  std::unordered_map<std::uint64_t, std::int64_t> last;
  for (std::size_t p = 0; p < view.ops().size(); ++p) {
    const auto [it, added] = last.try_emplace(DeviceView::streamKey(view.op(view.ops()[p])), -1);
    previous[p] = it->second;
    it->second = static_cast<std::int64_t>(p);
  }
  return previous;
}

std::optional<std::size_t> DeviceView::firstOpStartingAtOrAfter(Ns time) const {
  auto it = std::lower_bound(op_indices_.begin(), op_indices_.end(), time, [&](std::uint32_t i, Ns t) {
    return std::max(trace_.ops[i].start, window_start_) < t;
  });
  if (it == op_indices_.end()) return std::nullopt;
  return static_cast<std::size_t>(it - op_indices_.begin());
}

}  // namespace cuoverlap::diagnosis
