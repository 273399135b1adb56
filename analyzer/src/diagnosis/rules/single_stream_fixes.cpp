#include "diagnosis/rules/single_stream_fixes.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <set>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "diagnosis/api_names.h"
#include "diagnosis/legacy_barriers.h"
#include "diagnosis/pinned_rate.h"
#include "diagnosis/rules/device_chunks.h"
#include "diagnosis/rules/legacy_threads.h"
#include "diagnosis/rules/pinned_chunks.h"
#include "diagnosis/rules/single_stream_advice.h"
#include "diagnosis/rules/single_stream_threads.h"
#include "diagnosis/rules/split_sweeps.h"
#include "diagnosis/rules/staging_holds.h"
#include "diagnosis/schedule_turns.h"

namespace cuoverlap::diagnosis {
namespace {

// Each chunk's op positions, in order (chunks[pos] < 0: no chunk).
std::vector<std::vector<std::size_t>> chunkMembers(const std::vector<std::int64_t>& chunks) {
  std::vector<std::vector<std::size_t>> members;
  for (std::size_t pos = 0; pos < chunks.size(); ++pos) {
    if (chunks[pos] < 0) continue;
    const auto c = static_cast<std::size_t>(chunks[pos]);
    if (members.size() <= c) members.resize(c + 1);
    members[c].push_back(pos);
  }
  return members;
}

// Whether the ops at positions a and b are the same step's op: kind, engine, grid, block, bytes,
// name.
bool sameChunkOp(const DeviceView& view, std::size_t a, std::size_t b) {
  const GpuOp& x = view.op(view.ops()[a]);
  const GpuOp& y = view.op(view.ops()[b]);
  return x.kind == y.kind && engineOf(x) == engineOf(y) && x.grid_blocks == y.grid_blocks &&
         x.block_threads == y.block_threads && x.bytes == y.bytes && x.name == y.name;
}

// How many ops `head` (a chunk's positions) holds before it ends with `step`'s ops (sameChunkOp, in
// order): a loop's first step carrying the stream's work before the loop. 0 where it does not end
// so or holds no more than `step`.
std::size_t opsBeforeStep(const DeviceView& view, const std::vector<std::size_t>& head,
                          const std::vector<std::size_t>& step) {
  if (step.empty() || head.size() <= step.size()) return 0;
  const std::size_t extra = head.size() - step.size();
  for (std::size_t i = 0; i < step.size(); ++i) {
    if (!sameChunkOp(view, head[extra + i], step[i])) return 0;
  }
  return extra;
}

// The host time of the copy-ahead's event calls (copyAheadSaving): each chunk waits for an event
// before its copies and one before its kernels, and records one after its copies and one after
// its kernels, on the loop's thread between its launches. In the fixed programs' own traces of
// the copy-ahead (vt36, nvidia-h100-x1: 8 programs, their loops' threads blocking nowhere in the
// loop), each such call delayed the thread's later launches against the one stream's program by
// a median 2.45 µs (45 steps; q1 1.75, q3 3.45); the calls' own medians with the gap before the
// next call agree (4,209 cudaEventRecord calls 2.64 + 0.89 µs, 3,387 cudaStreamWaitEvent 1.06 +
// 0.59). A thread's first record and wait take longer: 10.76 and 4.67 µs (medians of 284 and 178
// threads) with the same gaps. The lab's copy-ahead over-claimed where the host paced the loop
// (g000275: 91 µs claimed for 39, each step's calls 65 µs apart against 81 µs of device work) or
// reached its first kernel late (g006069: 34 for 8). From 1.8 to 2.5 µs a call the corpora score
// alike (2.59, the calls' own sum, leaves c1's g000275 2 µs short), the first calls at 0.75 and 1
// times theirs (1.25 times loses c2's g001040, 72 -> 52 µs for 74; 0.5 times c5's g003009).
constexpr Ns kEventCallNs = 2'450;
constexpr Ns kFirstEventRecordCallNs = 11'650;
constexpr Ns kFirstStreamWaitCallNs = 5'260;

// The stream a stream synchronize waited on (its synchronization record's), if the trace has it.
std::optional<std::uint64_t> synchronizedStream(const DeviceView& view, std::size_t call) {
  const RuntimeCall& c = view.call(call);
  for (const SyncEvent* sync : view.syncs()) {
    if (sync->correlation_id == c.correlation_id && sync->pid == c.pid) {
      return DeviceView::streamKey(sync->pid, sync->context_id, sync->stream_id);
    }
  }
  return std::nullopt;
}

// Whether the stream's synchronizes between its chunks open the steps (true: `synchronize; copy;
// kernels`) or end them (false: `copy; kernels; synchronize`), where the trace tells: a loop whose
// body begins with the synchronize has one before its first chunk too, and none after its last;
// one whose body ends with it, one after its last chunk and none before its first. What stands
// before the first chunk's first launch and after the last chunk's last launch on the launching
// thread (its nearest blocking call on each side) is taken as such a synchronize when it is one of
// the stream's. Nothing where both or neither stand there (the host's gaps decide then). g008112
// (the forty-sixth session's fresh sample): `host 29 µs; copy; kernel; host 5; kernel; host 45;
// synchronize` three times, whose synchronizes the gaps took for the next steps' (45 µs before,
// 29 after): the split claimed 465 µs where its lanes could not overlap (-24 ± 27 measured).
std::optional<bool> chunkSyncsOpenSteps(const DeviceView& view, const HostTimeline& host,
                                        const std::vector<std::pair<Ns, std::size_t>>& issued,
                                        std::uint64_t stream) {
  if (issued.empty()) return std::nullopt;
  const auto first_launch = view.launchCall(view.op(view.ops()[issued.front().second]));
  const auto last_launch = view.launchCall(view.op(view.ops()[issued.back().second]));
  if (!first_launch || !last_launch) return std::nullopt;
  const std::uint64_t thread = threadKey(view.call(*first_launch));
  const Ns first_start = view.call(*first_launch).start;
  const Ns last_end = view.call(*last_launch).end;
  std::optional<std::size_t> before, after;  // the thread's nearest blocking calls (barrier indices)
  for (std::size_t b = 0; b < host.barriers.size(); ++b) {
    const HostBarrier& barrier = host.barriers[b];
    if (threadKey(view.call(barrier.call)) != thread) continue;
    if (barrier.end <= first_start && (!before || host.barriers[*before].end < barrier.end)) before = b;
    if (barrier.start >= last_end && (!after || host.barriers[*after].start > barrier.start)) after = b;
  }
  const auto isStreamSync = [&](std::optional<std::size_t> b) {
    return b && view.callKind(host.barriers[*b].call) == ApiKind::kStreamSync &&
           synchronizedStream(view, host.barriers[*b].call) == stream;
  };
  const bool opens = isStreamSync(before);
  const bool ends = isStreamSync(after);
  if (opens == ends) return std::nullopt;
  return opens;
}

// The host's waits in the split: a call that waited for the split stream's work as a whole (a
// device synchronize or an allocation call, or a synchronize of the stream after its last op:
// the loop's end) still waits for all of it, now the last op issued before it on every lane;
// on the one stream, its last op there stood for all of them. A synchronize of the stream with
// more of its work after it (inside the loop) synchronizes the iteration's stream: its own lane,
// which is the next chunk's where it stands between two chunks and opens the next step: as the
// loop's first and last chunks show (chunkSyncsOpenSteps), else where the host's time before it,
// since the previous chunk's last launch returned, exceeds its time after it, until the next
// chunk's first launch (c1 g000201's steps `host 402 µs; synchronize; copy; kernels`, whose
// synchronize the lab's split turns into one of the step's own new stream). The ratio's 1 scores
// as 10 and 100 do; 0.5 loses g000057, 0.1 adds six false findings.
HostTimeline waitingForEveryLane(const DeviceView& view, const HostTimeline& host,
                                 const std::vector<std::uint64_t>& keys, std::uint64_t stream,
                                 const std::vector<std::uint64_t>& lanes) {
  const auto& ops = view.ops();
  // The split stream's ops in issue order (launch call start): (issued, position).
  std::vector<std::pair<Ns, std::size_t>> issued;
  for (std::size_t pos = 0; pos < ops.size(); ++pos) {
    const GpuOp& op = view.op(ops[pos]);
    if (keys[pos] != stream) continue;
    const auto launch = view.launchCall(op);
    issued.emplace_back(launch ? view.call(*launch).start : ops[pos].start, pos);
  }
  std::sort(issued.begin(), issued.end());
  const std::optional<bool> syncs_open = chunkSyncsOpenSteps(view, host, issued, stream);
  HostTimeline changed = host;
  for (HostBarrier& barrier : changed.barriers) {
    const bool on_stream = std::any_of(barrier.waited_for.begin(), barrier.waited_for.end(),
                                       [&](std::size_t p) { return keys[p] == stream; });
    if (!on_stream) continue;
    const auto end =
        std::lower_bound(issued.begin(), issued.end(), std::make_pair(barrier.start, std::size_t{0}));
    const ApiKind kind = view.callKind(barrier.call);
    const bool whole = kind == ApiKind::kDeviceSync || kind == ApiKind::kAllocation ||
                       (kind == ApiKind::kStreamSync && end == issued.end());
    if (!whole && kind == ApiKind::kStreamSync && end != issued.begin() &&
        lanes[std::prev(end)->second] != lanes[end->second]) {
      // A synchronize between two chunks opens the next step where the host's time before it
      // (since the previous chunk's last launch returned) exceeds its time after it (until the
      // next chunk's first launch): the step's own work begins with it, and the split
      // synchronizes that step's lane, not the previous step's.
      const auto launched = [&](std::size_t p) { return view.launchCall(view.op(ops[p])); };
      const auto before_call = launched(std::prev(end)->second);
      const auto after_call = launched(end->second);
      if (before_call && after_call) {
        const Ns before_gap = barrier.start - view.call(*before_call).end;
        const Ns after_gap = view.call(*after_call).start - barrier.end;
        if (syncs_open.value_or(before_gap > after_gap)) {
          const std::uint64_t lane = lanes[end->second];
          std::vector<std::size_t> kept;
          for (std::size_t p : barrier.waited_for) {
            if (keys[p] != stream) kept.push_back(p);
          }
          for (auto it = end; it != issued.begin();) {
            --it;
            if (lanes[it->second] == lane) {
              kept.push_back(it->second);
              break;
            }
          }
          barrier.waited_for = std::move(kept);
        }
      }
      continue;
    }
    if (!whole) continue;
    std::unordered_set<std::uint64_t> lanes_seen;
    for (auto it = end; it != issued.begin() && lanes_seen.size() < kSplitStreams;) {
      --it;
      if (lanes_seen.insert(lanes[it->second]).second) barrier.waited_for.push_back(it->second);
    }
  }
  return changed;
}

// Host time a fix adds on threads (`added`: per thread, (time, host time added there)): each op
// launched after such a time is released that much later, counted since the blocking call before
// it (which the schedule re-times), and each blocking call begins that much later (`changed`).
void addHostTime(const DeviceView& view, const HostTimeline& host,
                 std::unordered_map<std::uint64_t, std::vector<std::pair<Ns, Ns>>> added,
                 std::vector<Ns>& earlier, std::vector<CallChange>& changed) {
  const auto& calls = view.trace().runtime_calls;
  if (added.empty()) return;
  for (auto& [thread, times] : added) {
    std::sort(times.begin(), times.end());
    // Prefix sums: each entry the host time added up to it.
    for (std::size_t k = 1; k < times.size(); ++k) times[k].second += times[k - 1].second;
  }
  // The host time added on `thread` by `time` (calls at or before it).
  const auto addedBy = [&](std::uint64_t thread, Ns time) -> Ns {
    const auto it = added.find(thread);
    if (it == added.end()) return 0;
    const auto after = std::upper_bound(it->second.begin(), it->second.end(),
                                        std::pair<Ns, Ns>(time, std::numeric_limits<Ns>::max()));
    return after == it->second.begin() ? 0 : std::prev(after)->second;
  };
  const std::size_t n = view.ops().size();
  if (earlier.empty()) earlier.assign(n, 0);
  for (std::size_t pos = 0; pos < n; ++pos) {
    const auto launch = view.launchCall(view.op(view.ops()[pos]));
    if (!launch) continue;
    const std::uint64_t thread = threadKey(calls[*launch]);
    const std::int64_t barrier = pos < host.barrier_of.size() ? host.barrier_of[pos] : -1;
    const Ns since =
        barrier < 0 ? 0 : addedBy(thread, host.barriers[static_cast<std::size_t>(barrier)].end);
    earlier[pos] -= addedBy(thread, calls[*launch].start) - since;
  }
  std::unordered_map<std::size_t, std::size_t> change_of;  // call -> its entry in `changed`
  for (std::size_t k = 0; k < changed.size(); ++k) change_of.emplace(changed[k].call, k);
  for (const HostBarrier& barrier : host.barriers) {
    const std::uint64_t thread = threadKey(calls[barrier.call]);
    const Ns since =
        barrier.previous < 0
            ? 0
            : addedBy(thread, host.barriers[static_cast<std::size_t>(barrier.previous)].end);
    const Ns later = addedBy(thread, barrier.start) - since;
    if (later == 0) continue;
    if (const auto same = change_of.find(barrier.call); same != change_of.end()) {
      changed[same->second].earlier -= later;
    } else {
      changed.push_back({barrier.call, true, barrier.own, -later});
    }
  }
}

// The split's fork where the stream ran work before the loop (lastLoopFirstChunk found an earlier
// one): the loop's thread records an event on the stream and makes each lane wait for it before
// the loop's first launch, as the lab's multi-stream transform does (`_wait_for_earlier`), which
// delays what the thread issues from there by those calls' host time: a record and a wait at a
// thread's first such calls' times (kFirstEventRecordCallNs, kFirstStreamWaitCallNs; where the
// thread had made no stream wait before), the other waits kEventCallNs each. Lab: c4 g001001 102.7
// -> 80.9 µs claimed for 71.3 saved (within); five more claims 22 µs lower, four toward their savings.
void addForkCalls(const DeviceView& view, const HostTimeline& host, const std::vector<std::uint64_t>& keys,
                  std::uint64_t stream, const std::vector<std::int64_t>& chunks, std::int64_t first_split,
                  const std::vector<std::uint64_t>& lanes, std::vector<Ns>& earlier,
                  std::vector<CallChange>& changed) {
  std::optional<std::size_t> first;
  std::unordered_set<std::uint64_t> loop_lanes;
  for (std::size_t pos = 0; pos < chunks.size(); ++pos) {
    if (chunks[pos] < first_split) continue;
    if (!first) first = pos;
    loop_lanes.insert(lanes[pos]);
  }
  if (!first || loop_lanes.size() < 2) return;
  const auto launch = view.launchCall(view.op(view.ops()[*first]));
  if (!launch) return;
  // The ops are in start order: the stream's work before the loop is at the positions before it.
  if (std::find(keys.begin(), keys.begin() + static_cast<std::ptrdiff_t>(*first), stream) ==
      keys.begin() + static_cast<std::ptrdiff_t>(*first)) {
    return;
  }
  const RuntimeCall& call = view.call(*launch);
  const std::uint64_t thread = threadKey(call);
  const bool waited_before = std::any_of(view.calls().begin(), view.calls().end(), [&](std::size_t c) {
    return view.callKind(c) == ApiKind::kStreamWaitEvent && threadKey(view.call(c)) == thread &&
           view.call(c).start < call.start;
  });
  const Ns fork = (waited_before ? 2 * kEventCallNs : kFirstEventRecordCallNs + kFirstStreamWaitCallNs) +
                  static_cast<Ns>(loop_lanes.size() - 1) * kEventCallNs;
  std::unordered_map<std::uint64_t, std::vector<std::pair<Ns, Ns>>> added;
  added[thread].emplace_back(call.start, fork);
  addHostTime(view, host, std::move(added), earlier, changed);
}

// The copy-ahead's event calls (kEventCallNs) delay what the loop's thread issues after
// them: per op, the host time those calls add between its launch and the blocking call it follows
// (taken off `earlier`), and per blocking call of that thread, what they add since the previous
// one (a change that begins it later). Chunk c's calls: a wait before its first copy, a record and
// a wait after its last copy, a record after its last kernel; the first chunk's waits and first
// record take a first call's time.
void addEventCalls(const DeviceView& view, const HostTimeline& host,
                   const std::vector<std::int64_t>& chunks, std::vector<Ns>& earlier,
                   std::vector<CallChange>& changed) {
  const auto& calls = view.trace().runtime_calls;
  // Per thread: (time, host time added there).
  std::unordered_map<std::uint64_t, std::vector<std::pair<Ns, Ns>>> added;
  const std::vector<std::vector<std::size_t>> members = chunkMembers(chunks);
  for (std::size_t c = 0; c < members.size(); ++c) {
    std::optional<std::size_t> first_copy, last_copy, last_kernel;
    for (const std::size_t pos : members[c]) {
      const GpuOp& op = view.op(view.ops()[pos]);
      const auto launch = view.launchCall(op);
      if (!launch) continue;
      if (op.kind == OpKind::kKernel) {
        last_kernel = *launch;
      } else if (hostDeviceTransfer(op) && engineOf(op) == Engine::kH2D) {
        if (!first_copy) first_copy = *launch;
        last_copy = *launch;
      }
    }
    const bool first = c == 0;
    const Ns wait = first ? kFirstStreamWaitCallNs : kEventCallNs;
    if (first_copy) {
      added[threadKey(calls[*first_copy])].emplace_back(calls[*first_copy].start, wait);
      const Ns record = first ? kFirstEventRecordCallNs : kEventCallNs;
      added[threadKey(calls[*last_copy])].emplace_back(calls[*last_copy].end, record + wait);
    }
    if (last_kernel) {
      added[threadKey(calls[*last_kernel])].emplace_back(calls[*last_kernel].end, kEventCallNs);
    }
  }
  addHostTime(view, host, std::move(added), earlier, changed);
}

// The fix's copies and memsets issued asynchronously: the calls of `moved` no longer wait for the
// device (except those in `read`, whose result the host reads right there), and one of a pageable
// copy the fix pins no longer stages (it takes a pinned call's time, PinnedCopies::call_ns).
std::vector<CallChange> asynchronousCalls(const DeviceView& view, const HostTimeline& host,
                                          const std::unordered_set<std::size_t>& moved,
                                          const PinnedCopies& pinned,
                                          const std::unordered_set<std::size_t>& read = {}) {
  std::vector<CallChange> changes;
  for (const HostBarrier& barrier : host.barriers) {
    const ApiKind kind = view.callKind(barrier.call);
    if ((kind == ApiKind::kMemcpySync || kind == ApiKind::kMemsetSync ||
         kind == ApiKind::kMemcpyAsync || kind == ApiKind::kMemsetAsync) &&
        moved.count(barrier.call) != 0) {
      const auto staged = pinned.call_ns.find(barrier.call);
      changes.push_back({barrier.call, read.count(barrier.call) != 0,
                         staged != pinned.call_ns.end() ? staged->second : barrier.own});
    }
  }
  return changes;
}

// The kernels of each lane's first run of a step of the loop, with the longer durations they take
// in the split: the split gives each lane its own device buffers (the advice: one device buffer
// per stream), so the first step a lane runs touches buffers no kernel of the loop touched before,
// as the loop's first step did on the one stream, while the one stream's later steps found the
// previous step's data in the caches (L2, TLB). Such a kernel runs as long as its counterpart in
// the step's first chunk did where that was longer: chunks are runs of one step where they issue
// the same ops (kind, engine, grid, block, bytes, name), the counterpart the op at the same place
// in the first such chunk. A lane's later runs of the step reuse its buffers and keep their
// durations. The counterpart's time counts where no other stream's kernel that fills the device
// ran beside it (else its time may be that kernel's SMs', which the split's lanes need not meet:
// g000067's first step beside the main thread's 2112-block kernels). Beside copies and kernels
// that leave SMs free, a kernel's extra time is the memory system's — a cold buffer, or other
// work's traffic through the L2 — which the split's lanes meet too, side by side with their own
// buffers (g000172's main thread: 1-4-block kernels sweeping a 26 MB buffer ran 1.557 and 1.656
// ms in the first step, beside the workers' few-block kernels and copies, 1.12-1.20 ms in the
// later ones; its split, each lane with a buffer of its own, ran 0.71 ms slower than the one
// stream, 1.85 ms claimed before). There the counterpart must be longer by more than
// kBesideJitter of the kernel's own time: the other work's jitter, not a cold buffer.
// `chunks`: chunksOf's; `lanes`: the split's streams (chunk c on lane c % lanes).
std::vector<FasterOp> coldLaneKernels(const DeviceView& view, const std::vector<std::int64_t>& chunks,
                                      std::uint64_t lanes) {
  const auto& ops = view.ops();
  // Per op, the latest end of another stream's op (of such a kernel that fills the device) that
  // started before it, and the next start of one after it (ops come in start order): whether it
  // ran alone, and whether it ran beside no device-filling kernel.
  struct Beside {
    std::vector<Ns> end_before, start_after;
    bool none(const ScopedOp& op, std::size_t p) const { return end_before[p] <= op.start && start_after[p] >= op.end; }
  };
  Beside any{std::vector<Ns>(ops.size(), std::numeric_limits<Ns>::min()),
             std::vector<Ns>(ops.size(), std::numeric_limits<Ns>::max())};
  Beside filling = any;
  const auto fillsDevice = [&](std::size_t p) {
    const GpuOp& op = view.op(ops[p]);
    return op.kind == OpKind::kKernel && wavesOf(view.device(), op) >= 1.0;  // unknown limits: all do
  };
  for (std::size_t pos = 1; pos < ops.size(); ++pos) {
    any.end_before[pos] = any.end_before[pos - 1];
    filling.end_before[pos] = filling.end_before[pos - 1];
    if (chunks[pos - 1] >= 0) continue;
    any.end_before[pos] = std::max(any.end_before[pos], ops[pos - 1].end);
    if (fillsDevice(pos - 1)) filling.end_before[pos] = std::max(filling.end_before[pos], ops[pos - 1].end);
  }
  for (std::size_t pos = ops.size(); pos-- > 1;) {
    const bool other = chunks[pos] < 0;
    any.start_after[pos - 1] = other ? ops[pos].start : any.start_after[pos];
    filling.start_after[pos - 1] = other && fillsDevice(pos) ? ops[pos].start : filling.start_after[pos];
  }
  const std::vector<std::vector<std::size_t>> members = chunkMembers(chunks);
  const auto sameOp = [&](std::size_t a, std::size_t b) { return sameChunkOp(view, a, b); };
  const auto sameStep = [&](std::size_t a, std::size_t b) {
    return members[a].size() == members[b].size() &&
           std::equal(members[a].begin(), members[a].end(), members[b].begin(), sameOp);
  };
  // A chunk's step: the chunks that begin each step, by their ops' count and first op's kind.
  std::unordered_map<std::uint64_t, std::vector<std::size_t>> steps;
  std::unordered_set<std::uint64_t> run_on_lane;  // (step's first chunk, lane) run already
  std::vector<FasterOp> longer;
  for (std::size_t c = 0; c < members.size(); ++c) {
    if (members[c].empty()) continue;
    const GpuOp& head = view.op(ops[members[c].front()]);
    const std::uint64_t shape = members[c].size() * 16 + static_cast<std::uint64_t>(engineOf(head));
    std::vector<std::size_t>& firsts = steps[shape];
    const auto found = std::find_if(firsts.begin(), firsts.end(), [&](std::size_t d) { return sameStep(d, c); });
    if (found == firsts.end()) {
      firsts.push_back(c);
      run_on_lane.insert(c * lanes + c % lanes);
      continue;
    }
    const std::size_t first = *found;
    if (!run_on_lane.insert(first * lanes + c % lanes).second) continue;
    for (std::size_t i = 0; i < members[c].size(); ++i) {
      const ScopedOp& op = ops[members[c][i]];
      const std::size_t at = members[first][i];
      const ScopedOp& counterpart = ops[at];
      if (view.op(op).kind != OpKind::kKernel || !filling.none(counterpart, at)) continue;
      const Ns own = op.end - op.start;
      const Ns jitter = any.none(counterpart, at) ? 0 : static_cast<Ns>(kBesideJitter * static_cast<double>(own));
      if (counterpart.end - counterpart.start > own + jitter) {
        longer.push_back({members[c][i], counterpart.end - counterpart.start});
      }
    }
  }
  return longer;
}

}  // namespace

bool hostDeviceTransfer(const GpuOp& op) {
  const Engine engine = engineOf(op);
  return op.kind == OpKind::kMemcpy && (engine == Engine::kH2D || engine == Engine::kD2H);
}

// The stream's chunks: a chunk starts at each host-to-device copy that follows a kernel or a
// device-to-host copy (ops before the first chunk go with it). Per position, the chunk of an op
// of the stream (-1 for other streams' ops); empty when the stream holds fewer than two chunks:
// then no loop shows how to cut.
std::vector<std::int64_t> chunksOf(const DeviceView& view, const std::vector<std::uint64_t>& keys,
                                   std::uint64_t stream) {
  const auto& ops = view.ops();
  std::vector<std::int64_t> chunks(ops.size(), -1);
  std::int64_t chunk = 0;
  bool seen_kernel = false;
  std::optional<Engine> previous;
  for (std::size_t pos = 0; pos < ops.size(); ++pos) {
    const GpuOp& op = view.op(ops[pos]);
    if (keys[pos] != stream) continue;
    const Engine engine = engineOf(op);
    if (op.kind == OpKind::kMemcpy && engine == Engine::kH2D && seen_kernel && previous &&
        *previous != Engine::kH2D) {
      ++chunk;
    }
    if (op.kind == OpKind::kKernel) seen_kernel = true;
    previous = engine;
    chunks[pos] = chunk;
  }
  if (chunk == 0) return {};
  return chunks;
}

// The split covers the stream's last loop: the first chunk of its run of equal steps (chunks of
// the same ops: kind, engine, grid, block, bytes, name; the last chunk may carry the ops after the
// loop), or the chunk before that run where that chunk ends with the loop's step (the loop's first
// step, carrying the stream's work before the loop: loopPrologue); 0, the whole stream, where no
// two chunks are equal. The advice splits a loop, as the lab's multi-stream splits it (the stream's
// last loop, the only one with no more of the stream's work after it): the steps before it, an
// earlier loop or setup steps unlike each other, stay on the one stream, the loop's lanes waiting
// for them. c1 g000221: eight steps of a 2.5 MB upload and kernels, then six of a 620 KB upload, a
// 2-block kernel and a download; the fixed program split the six and saved 411 µs; the what-if
// split all fourteen and claimed 877 (now 456). g000020: five setup steps of other grids, then a
// loop of three; 178 µs claimed for 129 (now 137).
std::int64_t lastLoopFirstChunk(const DeviceView& view, const std::vector<std::int64_t>& chunks) {
  if (chunks.empty()) return 0;
  const std::vector<std::vector<std::size_t>> members = chunkMembers(chunks);
  const auto sameOp = [&](std::size_t a, std::size_t b) { return sameChunkOp(view, a, b); };
  const auto same = [&](std::size_t a, std::size_t b) {
    return !members[a].empty() && members[a].size() == members[b].size() &&
           std::equal(members[a].begin(), members[a].end(), members[b].begin(), sameOp);
  };
  const std::size_t n = members.size();
  if (n < 4) return 0;
  // The last loop: back from the chunk before the last (the last may carry ops after the loop).
  std::size_t first = n - 2;
  while (first > 0 && same(first - 1, first)) --first;
  if (first == n - 2 && !same(n - 2, n - 1)) return 0;
  // The chunk before that ends with the loop's step: the loop's first, carrying the work before it.
  if (first > 0 && opsBeforeStep(view, members[first - 1], members[first]) > 0) --first;
  return static_cast<std::int64_t>(first);
}

namespace {

// The ops of the split's first chunk (`first`) that come before the loop: where that chunk holds
// more ops than the next and ends with the next one's ops (sameChunkOp, in order), its leading
// ops repeat in no later chunk (chunksOf puts the stream's ops before the first chunk with it:
// a cudaMemset of the loop's buffer before its first upload). The fix splits the loop, not them:
// their calls stay as they were (the lab's multi-stream leaves the steps before the loop alone).
std::vector<std::size_t> loopPrologue(const DeviceView& view, const std::vector<std::int64_t>& chunks,
                                      std::int64_t first) {
  const std::vector<std::vector<std::size_t>> members = chunkMembers(chunks);
  const auto at = static_cast<std::size_t>(first);
  if (at + 1 >= members.size()) return {};
  const std::vector<std::size_t>& head = members[at];
  const std::size_t extra = opsBeforeStep(view, head, members[at + 1]);
  return {head.begin(), head.begin() + static_cast<std::ptrdiff_t>(extra)};
}

// chunkLanes' lanes of `chunks` (chunksOf's, not empty) split from chunk `first` on.
std::vector<std::uint64_t> lanesOfChunks(const DeviceView& view, const std::vector<std::int64_t>& chunks,
                                         std::int64_t first) {
  const auto& ops = view.ops();
  std::vector<std::uint64_t> lanes(ops.size());
  for (std::size_t pos = 0; pos < ops.size(); ++pos) {
    // Lanes of the split: above every stream key in use (keys are (context, stream) packed).
    lanes[pos] = chunks[pos] < first ? DeviceView::streamKey(view.op(ops[pos]))
                                 : ~std::uint64_t{0} - static_cast<std::uint64_t>(chunks[pos]) % kSplitStreams;
  }
  return lanes;
}

}  // namespace

// The split the fix makes (the lab's multi-stream): chunk c of the stream's last loop
// (lastLoopFirstChunk) issued to stream c % kSplitStreams (earlier chunks and other streams' ops
// keep their streams). Empty without two chunks.
std::vector<std::uint64_t> chunkLanes(const DeviceView& view, const std::vector<std::uint64_t>& keys,
                                      std::uint64_t stream) {
  const std::vector<std::int64_t> chunks = chunksOf(view, keys, stream);
  if (chunks.empty()) return {};
  return lanesOfChunks(view, chunks, lastLoopFirstChunk(view, chunks));
}


namespace {

// The bytes of the smallest pageable copy that `pinned` pins (0: none).
std::uint64_t smallestPinned(const DeviceView& view, const PinnedCopies& pinned) {
  std::uint64_t smallest = 0;
  for (const std::uint32_t at : view.pageableCopyPositions()) {
    const GpuOp& op = view.op(view.ops()[at]);
    const auto launch = view.launchCall(op);
    if (!launch || pinned.calls.count(*launch) == 0 || op.bytes == 0) continue;
    if (smallest == 0 || op.bytes < smallest) smallest = op.bytes;
  }
  return smallest;
}

}  // namespace

namespace {

// The copy calls the fix pins (`pinned`: now asynchronous, a `moved` one to a created stream, the
// others where they were) that the schedule begins while another thread's cudaMemcpy holds the
// context take a turn (legacy_threads.h, withTurnsBesideSynchronousCopies); the calls it leaves
// keep their recorded time, any turn they took included. `earlier` and `changed` come out with the
// turns; returns the span.
Ns pinnedWithTurns(const DeviceView& view, const HostTimeline& host, const ScheduleModel& model,
                   const std::vector<OrderEdge>& edges, const std::vector<FasterOp>& faster, const PinnedCopies& pinned,
                   const std::unordered_set<std::size_t>& moved, std::vector<Ns>& earlier,
                   std::vector<CallChange>& changed) {
  HostTurns turns;
  recordLaunchCalls(view, {}, turns);
  for (const HostBarrier& barrier : host.barriers) turns.call_thread[barrier.call] = threadKey(view.call(barrier.call));
  ScheduledHost times;
  const Ns after = spanWithTurns(model, turns, edges, earlier, faster, changed, &times);
  std::vector<std::uint8_t> candidate(view.ops().size(), 0);
  for (std::size_t p = 0; p < view.ops().size(); ++p) {
    const GpuOp& op = view.op(view.ops()[p]);
    const auto call = view.launchCall(op);
    if (!call || op.kind != OpKind::kMemcpy) continue;
    const auto pinned_call = pinned.call_ns.find(*call);
    if (pinned_call == pinned.call_ns.end()) continue;
    const bool moved_here = moved.count(*call) != 0;
    if (!moved_here && view.callKind(*call) != ApiKind::kMemcpyAsync) continue;
    if (view.onLegacyDefaultStreamAt(p) && !moved_here) continue;
    candidate[p] = 1;
    turns.op_call_start[p] = times.recorded_release[p] - pinned_call->second;  // its pinned call
    turns.op_call_end[p] = times.recorded_release[p];
  }
  return withTurnsBesideSynchronousCopies(view, host, model, turns, edges, candidate, faster, earlier, changed,
                                          times, after);
}

// The split's loop (the stream's ops of the split chunks) and how many lanes it has beyond the
// first: the lab's multi-stream gives each lane beyond the first its own copy of each device
// buffer the loop writes (device_chunks.h prices what they do to the device allocator).
std::pair<std::vector<std::size_t>, std::size_t> splitLoop(const DeviceView& view, const std::vector<std::uint64_t>& keys,
                                                           std::uint64_t stream, const std::vector<std::int64_t>& chunks,
                                                           std::int64_t first_split, const std::vector<bool>& before_loop) {
  std::vector<std::size_t> loop;
  std::set<std::int64_t> loop_chunks;
  for (std::size_t pos = 0; pos < view.ops().size() && pos < keys.size(); ++pos) {
    if (keys[pos] != stream || chunks[pos] < first_split || before_loop[pos]) continue;
    loop.push_back(pos);
    loop_chunks.insert(chunks[pos]);
  }
  const std::size_t lanes = std::min<std::size_t>(kSplitStreams, loop_chunks.size());
  return {std::move(loop), lanes > 0 ? lanes - 1 : 0};
}

}  // namespace

// What splitting `stream`'s chunks over three streams saves (0 without two chunks).
Ns splitSaving(const DeviceView& view, const std::vector<std::uint64_t>& keys, const HostTimeline& host,
               const ScheduleModel& model, const std::vector<OrderEdge>& waits,
               const std::vector<OrderEdge>& order, const std::vector<StagingHold>& holds,
               std::uint64_t stream, bool pin, bool kernels_in_order, bool others_freed) {
  const std::vector<std::int64_t> split_chunks = chunksOf(view, keys, stream);
  if (split_chunks.empty()) return 0;
  const std::int64_t first_split = lastLoopFirstChunk(view, split_chunks);
  const std::vector<std::uint64_t> lanes = lanesOfChunks(view, split_chunks, first_split);
  // The advice issues each chunk's copies and memsets asynchronously (pinned buffers): their
  // calls no longer wait for the device. Those of the split stream only: other streams' blocking
  // copies stay as they were (sync-memcpy's and pageable-memcpy's fixes, not this one).
  std::unordered_set<std::size_t> split_calls;
  // The stream's work before the loop that the first chunk carries stays as it was (loopPrologue).
  const std::vector<std::size_t> prologue = loopPrologue(view, split_chunks, first_split);
  std::vector<bool> before_loop_op(view.ops().size(), false);
  for (const std::size_t pos : prologue) before_loop_op[pos] = true;
  for (std::size_t pos = 0; pos < view.ops().size(); ++pos) {
    const GpuOp& op = view.op(view.ops()[pos]);
    if (op.kind == OpKind::kKernel || keys[pos] != stream) continue;
    if (split_chunks[pos] < first_split) continue;
    if (before_loop_op[pos]) continue;
    if (const auto launch = view.launchCall(op)) split_calls.insert(*launch);
  }
  // The loop's lanes wait for the stream's work before the loop.
  std::vector<OrderEdge> before_loop;
  if (first_split > 0 || !prologue.empty()) {
    std::optional<std::size_t> last_before;
    std::unordered_set<std::uint64_t> lanes_begun;
    for (std::size_t pos = 0; pos < view.ops().size(); ++pos) {
      if (split_chunks[pos] < 0) continue;
      if (split_chunks[pos] < first_split || before_loop_op[pos]) {
        last_before = pos;
        continue;
      }
      if (last_before && lanes_begun.insert(lanes[pos]).second) {
        before_loop.push_back({*last_before, pos, 0});
      }
    }
  }
  const std::unordered_set<std::size_t> read_calls = resultsReadMidChunk(view, keys, stream);
  const PinnedCopies pinned = pin ? pinnedCopies(view, keys, stream) : PinnedCopies{};
  std::vector<CallChange> async_calls = asynchronousCalls(view, host, split_calls, pinned, read_calls);
  // Its buffers pinned at setup keep the pinned allocator's chunk alive (pinned_chunks.h).
  addChunkKeptAlive(view, host, smallestPinned(view, pinned), async_calls);
  // Its lanes' device buffers, allocated at setup, can open a device allocator chunk that a
  // loop's allocation then shares (device_chunks.h; only traces with op buffers size them).
  if (!view.trace().op_buffers.empty()) {
    const auto [split_loop, more_lanes] = splitLoop(view, keys, stream, split_chunks, first_split, before_loop_op);
    for (const CallChange& c : deviceChunkKeptAlive(view, host, split_loop, more_lanes)) {
      const auto same = [&](const CallChange& x) { return x.call == c.call; };
      if (std::none_of(async_calls.begin(), async_calls.end(), same)) async_calls.push_back(c);
    }
  }
  // Both schedules let a multi-wave kernel's last wave drain into later kernels (on the one
  // stream nothing can use it, in the split the next chunk's kernel does), and carry the
  // device's hand-off between a stream's queued ops, which the split's other lanes fill.
  // Both keep the legacy stream's barriers they have (splitBarriers): the split's lanes of a
  // legacy or blocking stream's work are created blocking streams.
  std::vector<OrderEdge> split_edges = waits;
  split_edges.insert(split_edges.end(), before_loop.begin(), before_loop.end());
  const std::vector<OrderEdge> split_barriers = splitBarriers(view, lanes, blockingWork(view, keys, stream));
  split_edges.insert(split_edges.end(), split_barriers.begin(), split_barriers.end());
  // On a device the stream shared with other streams' work, its kernels keep their order: the
  // lanes' kernels are not credited side by side (each after the previous one, the stream's
  // kernel-to-kernel hand-off after it), only its copies, memsets and host waits move.
  if (kernels_in_order) {
    const Ns to_kernel = view.streamHandoff(Engine::kCompute, Engine::kCompute);
    std::optional<std::size_t> previous;
    for (std::size_t pos = 0; pos < view.ops().size(); ++pos) {
      if (keys[pos] != stream || view.op(view.ops()[pos]).kind != OpKind::kKernel) continue;
      if (previous) split_edges.push_back({*previous, pos, to_kernel});
      previous = pos;
    }
  }
  // A legacy-stream call of another thread's held in the driver behind staged pageable copies
  // (staging_holds.h) waited for them as recorded; the split keeps that hold unless it issues the
  // call asynchronously itself (a copy or memset of the split stream's work).
  const std::vector<OrderEdge> with_holds = withHoldEdges(order, holds);
  std::vector<OrderEdge> before_edges = order;
  const Ns before = holds.empty() ? model.span(order)
                                  : keepHolds(ScheduleModel(view, host, with_holds), holds,
                                              [](const StagingHold&) { return true; }, before_edges)
                                        .span(before_edges);
  const HostTimeline split_host = waitingForEveryLane(view, host, keys, stream, lanes);
  std::vector<Ns> earlier = pinned.earlier;
  // What the split's holds (its staging, its legacy calls) freed other threads' calls of, given
  // back in one pass (one hold's amounts at a blocking call no longer replace the other's).
  if (others_freed) {
    std::vector<HostTimeGiven> freed;
    std::vector<CallChange> held_calls;
    heldBySplitCopies(view, split_host, pinned.calls, async_calls, earlier, &freed, &held_calls);
    heldBySplitLegacyCalls(view, split_host, keys, stream, async_calls, earlier, &freed);
    giveBackOnce(view, split_host, std::move(freed), async_calls, earlier);
    mergeShorter(held_calls, async_calls);
  }
  addForkCalls(view, split_host, keys, stream, split_chunks, first_split, lanes, earlier, async_calls);
  // (The one stream's schedule is the same with or without them: its kernels wait for the filler.)
  const AloneFillers alone = aloneFillers(view, keys, stream);
  ScheduleModel lanes_model = ScheduleModel(view, split_host, with_holds).withLanes(lanes);
  if (!alone.fillers.empty()) {
    lanes_model = lanes_model.withSlotsFreeingAt(alone.fillers, kAloneFillerSlotsFreeAt, alone.takers);
  }
  const ScheduleModel split = keepHolds(
      lanes_model, holds,
      [&](const StagingHold& h) {
        return split_calls.count(*view.launchCall(view.op(view.ops()[h.position]))) == 0;
      },
      split_edges);
  std::vector<FasterOp> durations = pinned.faster;
  const std::vector<FasterOp> cold = coldLaneKernels(view, split_chunks, kSplitStreams);
  durations.insert(durations.end(), cold.begin(), cold.end());
  Ns free_span = split.span(split_edges, earlier, durations, async_calls);
  if (pin) {
    free_span = pinnedWithTurns(view, split_host, split, split_edges, durations, pinned, split_calls, earlier,
                                async_calls);
  }
  // The long few-block kernels of different lanes share what the memory system gives them: side
  // by side they run somewhere between their own durations (free) and one after another (in
  // order), by how their buffers fit the L2 together, which a trace without op buffers does not
  // tell (with them, sweepingKernelsInOrder keeps out the ones that fit: lanesFitTheL2). The split is
  // priced at the middle of the two (the lab's over-claimed splits measured 0.38-0.60 of the way
  // from in order to free, the others 0.85-1.0; 0.3-0.6 of the way score the same). So are the
  // kernels of half the device or more, whose room beside each other the trace does not tell
  // either (halfDeviceKernelsInOrder; each kind in its own order, a kernel of one never waiting
  // for one of the other). Sweeps that thrash the L2 side by side are no faster beside each other
  // than in order: their order is kept in the free schedule too; sweeps that already ran from
  // memory beside other streams' sweeps run side by side at their own pace: the free schedule
  // alone (sweepsSideBySide).
  std::vector<OrderEdge> unsure;  // keeps the kernels whose room beside each other is unknown in order
  if (!kernels_in_order) {
    const bool cache_bound =
        std::any_of(cold.begin(), cold.end(),
                    [&](const FasterOp& first) { return firstRunLonger(view, first, kBesideJitter); }) ||
        repeatsVary(view, keys, stream);
    unsure = sweepingKernelsInOrder(view, keys, lanes, stream, cache_bound);
    if (cache_bound && !unsure.empty()) {
      std::vector<OrderEdge> sweeps_in_order = unsure;
      sweeps_in_order.insert(sweeps_in_order.end(), split_edges.begin(), split_edges.end());
      const std::vector<FasterOp> slower = sweepsFromMemory(view, unsure, cold);
      if (!slower.empty() && split.span(sweeps_in_order, earlier, durations, async_calls) == free_span) {
        std::unordered_set<std::size_t> slowed;
        for (const FasterOp& op : slower) slowed.insert(op.position);
        durations.erase(std::remove_if(durations.begin(), durations.end(),
                                       [&](const FasterOp& op) { return slowed.count(op.position) > 0; }),
                        durations.end());
        durations.insert(durations.end(), slower.begin(), slower.end());
        free_span = split.span(split_edges, earlier, durations, async_calls);
      }
    }
    const SweepsSideBySide side_by_side =
        cache_bound ? sweepsSideBySide(view, keys, lanes, stream, unsure) : SweepsSideBySide::kUnknown;
    if (side_by_side == SweepsSideBySide::kThrash) {
      split_edges.insert(split_edges.end(), unsure.begin(), unsure.end());
      free_span = split.span(split_edges, earlier, durations, async_calls);
    }
    if (side_by_side != SweepsSideBySide::kUnknown) unsure.clear();
    const std::vector<OrderEdge> half_device = halfDeviceKernelsInOrder(view, keys, lanes, stream);
    unsure.insert(unsure.end(), half_device.begin(), half_device.end());
  }
  if (unsure.empty()) return std::max<Ns>(0, before - free_span);
  unsure.insert(unsure.end(), split_edges.begin(), split_edges.end());
  const Ns unsure_in_order = split.span(unsure, earlier, durations, async_calls);
  return std::max<Ns>(0, before - (free_span + unsure_in_order) / 2);
}

// What copying the stream's input one chunk ahead saves: its host-to-device copies moved to
// a stream of their own (kept in their order), each kernel waiting for the copies issued before it
// (an event recorded after them; released the stream's copy-to-kernel hand-off after they end),
// and chunk c's copies waiting for the last kernel of chunk c - 2, which read the input buffer they
// overwrite (two input buffers; the hand-off back to the copy). The kernels stay in their order on
// the stream, so device state one chunk leaves for the next is read as before: it holds for an
// accumulator too. The advice's input buffers are pinned: a pageable copy runs at the trace's
// pinned rate, without the host's staging, its call asynchronous (pinnedCopies, as the split's);
// without `pin`, as it ran. 0 without two chunks.
Ns copyAheadSaving(const DeviceView& view, const std::vector<std::uint64_t>& keys, const HostTimeline& host,
                   const ScheduleModel& model, const std::vector<OrderEdge>& waits, std::uint64_t stream,
                   bool pin) {
  const std::vector<std::int64_t> chunks = chunksOf(view, keys, stream);
  if (chunks.empty()) return 0;
  const auto& ops = view.ops();
  const std::uint64_t copy_lane = ~std::uint64_t{0};  // above every stream key in use
  const Ns to_kernel = view.streamHandoff(Engine::kH2D, Engine::kCompute);
  const Ns to_copy = view.streamHandoff(Engine::kCompute, Engine::kH2D);
  std::vector<std::uint64_t> lanes(ops.size());
  std::vector<OrderEdge> edges = waits;
  std::vector<std::size_t> waiting_copies;  // copied since the stream's last kernel
  std::unordered_map<std::int64_t, std::size_t> last_kernel;  // per chunk
  std::unordered_set<std::size_t> moved_calls;
  for (std::size_t pos = 0; pos < ops.size(); ++pos) {
    const GpuOp& op = view.op(ops[pos]);
    lanes[pos] = DeviceView::streamKey(op);
    if (chunks[pos] < 0) continue;
    if (op.kind == OpKind::kKernel) {
      for (std::size_t copy : waiting_copies) edges.push_back({copy, pos, to_kernel});
      waiting_copies.clear();
      last_kernel[chunks[pos]] = pos;
    } else if (hostDeviceTransfer(op) && engineOf(op) == Engine::kH2D) {
      lanes[pos] = copy_lane;
      if (const auto reader = last_kernel.find(chunks[pos] - 2); reader != last_kernel.end()) {
        edges.push_back({reader->second, pos, to_copy});
      }
      waiting_copies.push_back(pos);
      if (const auto launch = view.launchCall(op)) moved_calls.insert(*launch);
    }
  }
  // The moved copies are issued asynchronously (pinned buffers): their calls no longer wait, and
  // a pageable one's no longer stages.
  const PinnedCopies pinned = pin ? pinnedCopies(view, keys, stream, true) : PinnedCopies{};
  std::vector<CallChange> async_calls = asynchronousCalls(view, host, moved_calls, pinned);
  addChunkKeptAlive(view, host, smallestPinned(view, pinned), async_calls);
  std::vector<Ns> earlier = pinned.earlier;
  addEventCalls(view, host, chunks, earlier, async_calls);
  const Ns before = model.span(waits);
  if (!pin) return std::max<Ns>(0, before - model.withLanes(lanes).span(edges, earlier, pinned.faster, async_calls));
  return std::max<Ns>(0, before - pinnedWithTurns(view, host, model.withLanes(lanes), edges, pinned.faster, pinned,
                                                  moved_calls, earlier, async_calls));
}

}  // namespace cuoverlap::diagnosis
