// host-busy: the device idled while the thread that issued the next op ran its own code, in no
// CUDA call (the host-busy parts of the idle gaps, docs/gaps.md): data generation or loading,
// Python and framework overhead, compilation outside CUDA, sleeping. Each stretch of at least
// 10 µs in one gap is an instance, except in a gap between two kernels shorter than 50 µs where
// the run of the thread's own code the stretch ends (from its previous call, before the gap too)
// is under 100 µs: that is the per-launch overhead of a launch loop, host-launch-bound's.
// Cost: the stretches' total length, the device idle time the host's own work left uncovered.
// Fires when the cost reaches 1% of the device span.
// Fix alone (lab transform overlap-host; Finding::fix_alone_ns): what overlapping the host's work
// with the GPU's saves in the what-if schedule with the host (schedule_estimate.h, event waits
// kept), less the replay's error where the fix takes it off the critical path (replay_error.h).
// The work moved is all of the threads' own code (each piece of at least 10 µs in no CUDA
// call, idle device or not: ownCode): each piece runs after its thread's launches up to the next
// blocking call instead of between them (those launches are released that much sooner; an
// asynchronous copy out whose call blocked, to pageable memory, is such a blocking call: the piece
// stays before it, where it runs beside the GPU work the copy waits for), and never
// past the end of its loop's iteration (loopsComeRound): a loop without a blocking call shows no
// other iteration boundary, and work moved there would leave the device span. Not capped at the
// stretches' total: launches the work held back while the device was busy (another stream's
// kernel running) reach the device sooner too. A piece right after a
// blocking call that goes on to copy an input in (a loader's next batch) begins the next
// iteration and runs one iteration ahead, before that call (before the downloads to pageable
// memory right before it, whose calls return only once the GPU's work is done), while the GPU
// still has the work issued before it (the call begins that much later, the thread's
// launches after the piece and its next blocking call that much sooner), when the step that call
// ended is one of the same loop: it too began by copying an input in, the same copy (kind and
// size; its first launch after the thread's previous synchronize). After another step (a phase
// before the loop) the piece makes the loop's first batch, which pipelining leaves in place: no
// step of its loop runs before it; so
// does a batch copied in by a synchronous call (cudaMemcpy) or from pageable memory, a blocking
// step with no launch before it in its iteration for the work to move after. A piece
// that goes on to launch kernels instead may use what the call waited for (a loss checked, an
// optimizer step) and stays,
// as in the lab's transform, which never moves work after a synchronize or a host read. A piece
// right before a copy from host memory may make its data: it moves only a step ahead, never past
// that copy. It saves at most the GPU work there was to hide the stretch under: a loader that takes
// 17 ms a step beside 2 ms of GPU work saves 2 ms a step by overlapping, the rest only by running
// the host work on several workers or faster.
// Severity by share of the span: info below 5%, warning from 5%, error from 25%.
// Evidence: the longest stretches, with the thread, the NVTX range they fall in and the CUDA
// calls around them.
// Needs: runtime calls (the thread that launched each op).
#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include <fmt/format.h>

#include "cuoverlap/units.h"
#include "diagnosis/finding_builder.h"
#include "diagnosis/host_timeline.h"
#include "diagnosis/idle_gaps.h"
#include "diagnosis/replay_error.h"
#include "diagnosis/rules/rules.h"
#include "diagnosis/schedule_estimate.h"
#include "diagnosis/stream_waits.h"

namespace cuoverlap::diagnosis {
namespace {

constexpr double kWarningShareOfSpan = 0.05;
// One-off host time below this share of the span (the lazy load of the first kernel, a short
// pause) is not worth a finding; the gap parts still show it.
constexpr double kMinimumShareOfSpan = 0.01;
constexpr Ns kLaunchLoopStretchNs = 100'000;
constexpr Ns kShortKernelNs = 50'000;

struct Stretch {
  Interval time;
  std::size_t launch = 0;         // the launch call of the op that ended the gap
  bool before_module_load = false;  // module loading followed it in the same gap
  bool feeds_copy = false;        // that op copies host memory to the device: the stretch may
                                  // have made its data (a loader's batch)
};

// Where `stretch` of the thread's own code sits among its NVTX ranges (push/pop ranges of the
// thread, start/end ranges of its process): in the innermost range that covers most of it, else
// after the range that ended in it (the latest to end) and before the range that began in it (the
// first), when there are such. (The range open at the stretch's start alone misleads: a training
// loop loads the next batch after `step N` ends and before `step N+1` begins, but the stretch
// starts inside `step N`.)
std::string nvtxContext(const Trace& trace, std::uint32_t pid, std::uint32_t tid, Interval stretch) {
  const NvtxRange* covering = nullptr;
  Ns covered = 0;
  const NvtxRange* before = nullptr;  // began before the stretch and ended in it, the latest
  const NvtxRange* next = nullptr;    // the first to begin in it
  for (const NvtxRange& range : trace.nvtx) {  // sorted by start
    if (range.pid != pid || range.end <= range.start) continue;
    if (range.tid != tid && range.event_type != static_cast<std::int32_t>(
                                                    schema::NvtxEventType::kStartEndRange)) {
      continue;
    }
    if (range.start >= stretch.end) break;
    if (range.start >= stretch.start) {
      if (next == nullptr) next = &range;
    } else if (range.end > stretch.start && range.end < stretch.end &&
               (before == nullptr || range.end >= before->end)) {
      before = &range;
    }
    const Ns overlap = std::min(range.end, stretch.end) - std::max(range.start, stretch.start);
    if (overlap > 0 && (covering == nullptr || overlap >= covered)) {  // equal: the inner one
      covering = &range;
      covered = overlap;
    }
  }
  const auto name = [&](const NvtxRange* range) { return std::string(trace.str(range->text)); };
  if (covering != nullptr && 2 * covered >= stretch.length()) {
    return fmt::format(", in NVTX range \"{}\"", name(covering));
  }
  if (before != nullptr && next != nullptr) {
    return fmt::format(", between NVTX ranges \"{}\" and \"{}\"", name(before), name(next));
  }
  if (before != nullptr) return fmt::format(", after NVTX range \"{}\"", name(before));
  if (next != nullptr) return fmt::format(", before NVTX range \"{}\"", name(next));
  return {};
}

Evidence describeStretch(const DeviceView& view, const Stretch& stretch, bool detailed) {
  const RuntimeCall& launch = view.call(stretch.launch);
  Evidence evidence;
  evidence.api = fmt::format("host thread {}", launch.tid);
  evidence.has_stream = false;  // the host's own code: no call, no stream
  evidence.time = stretch.time.start;
  evidence.detail = fmt::format("ran its own code for {} in no CUDA call while the device idled",
                                units::formatDuration(stretch.time.length()));
  if (!detailed) return evidence;
  const HostState& host = view.hostState();
  const auto thread = host.threadOf(launch);
  const auto before = thread ? host.lastCallBefore(*thread, stretch.time.start) : std::nullopt;
  evidence.detail += nvtxContext(view.trace(), launch.pid, launch.tid, stretch.time);
  evidence.detail += fmt::format("; after {}, before {}",
                                 before ? std::string(view.callName(*before)) : "its first CUDA call",
                                 view.callName(stretch.launch));
  // Code loaded right after the host's own work: a JIT compiler (NVRTC, NVVM, XLA, Triton) ran
  // in the program's own code and produced it.
  if (stretch.before_module_load) evidence.detail += "; module loading followed: likely JIT compilation";
  return evidence;
}

bool isShortKernel(const DeviceView& view, std::optional<std::size_t> position) {
  if (!position) return false;
  const ScopedOp op = view.ops()[*position];
  return view.op(op).kind == OpKind::kKernel && op.end - op.start < kShortKernelNs;
}

// Whether `gap` lies between two short kernels (the op that ended it and the op after it).
bool inLaunchLoop(const DeviceView& view, const Interval& gap) {
  const auto next = view.firstOpStartingAtOrAfter(gap.end);
  if (!isShortKernel(view, next)) return false;
  // The op that ended at the gap's start: the last op starting before it that ends there.
  const auto after_start = view.firstOpStartingAtOrAfter(gap.start);
  for (std::size_t pos = after_start ? *after_start : view.ops().size(); pos-- > 0;) {
    if (view.ops()[pos].end == gap.start) return isShortKernel(view, pos);
    if (pos + 64 < (after_start ? *after_start : view.ops().size())) break;  // bounded search
  }
  return false;
}

// The length of the run of the thread's own code that `part` (a piece of it inside an idle gap,
// cut at the gap's start) ends: from the end of the thread's call before it. Per-launch overhead
// is short however little of it the device's queued work left uncovered; a long run is the
// program's own work even where the kernels before it hid all but its tail.
Ns ownCodeRun(const DeviceView& view, const HostPart& part, std::size_t launch) {
  const HostState& host = view.hostState();
  const auto thread = host.threadOf(view.call(launch));
  const auto before = thread ? host.lastCallBefore(*thread, part.start) : std::nullopt;
  const Ns start = before ? std::min(view.call(*before).end, part.start) : part.start;
  return part.end - start;
}

using ThreadKey = std::pair<std::uint32_t, std::uint32_t>;  // (pid, tid)

// Per thread, its launches in call order: (call start, the launch call).
struct ThreadLaunches {
  std::map<ThreadKey, std::vector<std::pair<Ns, std::size_t>>> by_thread;
  std::unordered_set<std::size_t> calls;  // every launch call
};

ThreadLaunches launchesByThread(const DeviceView& view) {
  ThreadLaunches out;
  for (const ScopedOp& scoped : view.ops()) {
    const GpuOp& op = view.op(scoped);
    const auto launch = view.launchCall(op);
    if (!launch) continue;
    const RuntimeCall& call = view.call(*launch);
    out.by_thread[{call.pid, call.tid}].push_back({call.start, *launch});
    out.calls.insert(*launch);
  }
  for (auto& [thread, launches] : out.by_thread) std::sort(launches.begin(), launches.end());
  return out;
}

// A stretch moved later in its thread's program, past the launches that followed it.
struct MovedStretch {
  Ns end = 0;     // where it ended in the trace
  Ns length = 0;
  Ns until = std::numeric_limits<Ns>::max();  // where its loop came round again
};

// A call as a point in its thread's program: the op it launched (kernel name and launch shape, or
// copy or memset kind and size), else the call's name.
using CallPoint = std::tuple<StringId, int, std::uint64_t, std::uint32_t, std::uint16_t>;

CallPoint pointOf(const DeviceView& view, std::size_t call,
                  const std::unordered_map<std::size_t, const GpuOp*>& op_of_call) {
  const auto op = op_of_call.find(call);
  if (op == op_of_call.end()) return {view.call(call).name, -1, 0, 0, 0};
  const GpuOp& g = *op->second;
  return {g.name, static_cast<int>(g.kind) * 16 + static_cast<int>(g.copy_kind), g.bytes,
          g.grid_blocks, g.block_threads};
}

// Whether the thread's first launch in [from, to) is the copy `copy_in` makes too (the same copy
// kind and size): a step of the loop whose input `copy_in` copies in next, the loader's previous
// step. A step that begins with another copy is another phase's (g005022: a loop of two 1 MB
// copies in, synchronized, before a loader loop of 16 KB batches).
bool loaderStep(const DeviceView& view, const std::vector<std::pair<Ns, std::size_t>>& launches,
                Ns from, Ns to, std::size_t copy_in,
                const std::unordered_map<std::size_t, const GpuOp*>& op_of_call) {
  const auto first = std::lower_bound(
      launches.begin(), launches.end(), from,
      [](const std::pair<Ns, std::size_t>& launch, Ns t) { return launch.first < t; });
  return first != launches.end() && first->first < to &&
         pointOf(view, first->second, op_of_call) == pointOf(view, copy_in, op_of_call);
}

// Where a stretch lies in its thread's program: between the call before it (none: the thread's
// first) and the call after it.
using ProgramPoint = std::pair<std::optional<CallPoint>, CallPoint>;

ProgramPoint pointOf(const DeviceView& view, const Stretch& stretch,
                     const std::unordered_map<std::size_t, const GpuOp*>& op_of_call) {
  const HostState& state = view.hostState();
  const auto thread = state.threadOf(view.call(stretch.launch));
  const auto before = thread ? state.lastCallBefore(*thread, stretch.time.start) : std::nullopt;
  return {before ? std::optional<CallPoint>(pointOf(view, *before, op_of_call)) : std::nullopt,
          pointOf(view, stretch.launch, op_of_call)};
}

// Per stretch: where its thread's loop came round, the start of the thread's next stretch at the
// same point of its program (between the same two launches), or never. The fix moves host work
// within its iteration: a loop without a blocking call shows no other boundary, and moving a
// stretch past that one would move it into a later iteration, out of the device span altogether.
// Per stretch also where its iteration ends (`iteration_end`), sooner: the fix moves the stretch
// to the end of its iteration, and the next iteration's launches, which follow it there, are
// released no sooner (g000162: 14 iterations of 13 kernels and 269 µs of host work, host-bound
// before and after the fix, which saved 173 µs: the last iteration's kernels run beside its host
// work; releasing each next iteration's first launches as well claimed 271 µs). The iteration is
// found from the thread's launches: their program points repeat with the period of the launches
// between the stretch and its next (or previous) stretch at the same point; the loop begins where
// that repetition, followed back from the stretch, begins, never before the thread's last blocking
// call before the stretch (`step_floor`: a loop without one in its body began after it); and the
// stretch's iteration ends at the next multiple of the period from there (a stretch before the
// iteration's first launch, which the fix leaves where it is, releases none).
struct ComesRound {
  std::vector<Ns> until;          // the next stretch at the same point of the thread's program
  std::vector<Ns> iteration_end;  // the first launch of the stretch's next iteration
};

ComesRound loopsComeRound(const DeviceView& view, const std::vector<Stretch>& stretches,
                          const std::vector<Ns>& step_floor) {
  std::unordered_map<std::size_t, const GpuOp*> op_of_call;
  for (const ScopedOp& scoped : view.ops()) {
    const GpuOp& op = view.op(scoped);
    if (const auto launch = view.launchCall(op)) op_of_call.emplace(*launch, &op);
  }
  // Per thread, its launch calls in start order with their program points.
  std::map<ThreadKey, std::vector<std::pair<Ns, CallPoint>>> launches_of;
  for (const auto& [call, op] : op_of_call) {
    const RuntimeCall& c = view.call(call);
    launches_of[{c.pid, c.tid}].push_back({c.start, pointOf(view, call, op_of_call)});
  }
  for (auto& [thread, list] : launches_of) {
    std::sort(list.begin(), list.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
  }
  std::vector<Ns> previous_end(stretches.size(), std::numeric_limits<Ns>::min());
  std::vector<Ns> until(stretches.size(), std::numeric_limits<Ns>::max());
  std::vector<Ns> iteration_end(stretches.size(), std::numeric_limits<Ns>::max());
  std::map<std::pair<ThreadKey, ProgramPoint>, std::size_t> last_at;  // the latest stretch there
  std::vector<std::size_t> order(stretches.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return stretches[a].time.start < stretches[b].time.start;
  });
  for (std::size_t i : order) {
    const RuntimeCall& launch = view.call(stretches[i].launch);
    const auto key = std::make_pair(ThreadKey{launch.pid, launch.tid},
                                    pointOf(view, stretches[i], op_of_call));
    if (const auto previous = last_at.find(key); previous != last_at.end()) {
      until[previous->second] = stretches[i].time.start;
      previous_end[i] = stretches[previous->second].time.end;
    }
    last_at[key] = i;
  }
  // Per (thread, period, floor): a run of the thread's launches [begin, upto) that repeat.
  std::map<std::tuple<ThreadKey, std::size_t, Ns>, std::pair<std::size_t, std::size_t>> repetition;
  for (std::size_t i = 0; i < stretches.size(); ++i) {
    const RuntimeCall& launch = view.call(stretches[i].launch);
    const auto list = launches_of.find({launch.pid, launch.tid});
    if (list == launches_of.end()) continue;
    const auto& l = list->second;
    const auto index_at = [&](Ns t) {
      return static_cast<std::size_t>(
          std::lower_bound(l.begin(), l.end(), t,
                           [](const auto& e, Ns v) { return e.first < v; }) - l.begin());
    };
    const std::size_t a = index_at(stretches[i].time.end);  // the first launch after it
    std::size_t period = 0;
    if (until[i] != std::numeric_limits<Ns>::max()) {
      period = index_at(until[i]) - a;
    } else if (previous_end[i] != std::numeric_limits<Ns>::min()) {
      period = index_at(stretches[i].time.start) - index_at(previous_end[i]);
    }
    if (period == 0 || a >= l.size()) continue;
    const auto repeats = [&](std::size_t j) {  // the same point one period later or earlier
      return (j + period < l.size() && l[j].second == l[j + period].second) ||
             (j >= period && l[j].second == l[j - period].second);
    };
    // Where the repetition begins, followed back from the stretch; the run [begin, upto) found
    // for an earlier stretch of the thread (same period and floor) is not walked again.
    auto& [memo_begin, memo_upto] =
        repetition[{{launch.pid, launch.tid}, period, step_floor[i]}];
    std::size_t begin = a;
    const std::size_t stop = memo_upto > memo_begin && memo_begin <= a ? std::min(a, memo_upto) : 0;
    while (begin > stop && l[begin - 1].first >= step_floor[i] && repeats(begin - 1)) --begin;
    if (stop > 0 && begin == stop) {
      begin = memo_begin;
      memo_upto = std::max(memo_upto, a);
    } else {
      memo_begin = begin;
      memo_upto = a;
    }
    const std::size_t end = begin + (a - begin + period - 1) / period * period;
    if (end < l.size()) iteration_end[i] = l[end].first;
  }
  return {until, iteration_end};
}

// Whether `call` is an asynchronous copy or memset call (a launch in the program) that blocked its
// thread (the host timeline's blocking call: pageable host memory), other than a copy in from
// host memory (host work before it may make its data).
bool launchedCopyOut(const DeviceView& view, std::size_t call,
                     const std::unordered_map<std::size_t, const GpuOp*>& op_of_call) {
  const ApiKind kind = view.callKind(call);
  if (kind != ApiKind::kMemcpyAsync && kind != ApiKind::kMemsetAsync) return false;
  const auto op = op_of_call.find(call);
  return op != op_of_call.end() &&
         !(op->second->kind == OpKind::kMemcpy && op->second->copy_kind == CopyKind::kHtoD);
}

// Whether a call of `kind` is a copy or memset its thread waits in (cudaMemcpy, cudaMemset): a
// blocking step of its thread's program, never a launch the host's work can move past.
bool synchronousCall(ApiKind kind) {
  return kind == ApiKind::kMemcpySync || kind == ApiKind::kMemsetSync;
}

// What overlapping the stretches with the GPU's work saves (the file's comment, "Fix alone").
Ns overlapSaving(const DeviceView& view, const std::vector<Stretch>& stretches,
                 bool after_allocation_stays = false) {
  const HostTimeline& host = buildHostTimeline(view);
  if (host.empty()) return 0;
  std::unordered_map<std::size_t, const GpuOp*> op_of_call;
  for (const ScopedOp& scoped : view.ops()) {
    const GpuOp& op = view.op(scoped);
    if (const auto launch = view.launchCall(op)) op_of_call.emplace(*launch, &op);
  }
  std::map<ThreadKey, std::vector<std::size_t>> barriers_of;  // in start order, so in end order
  for (std::size_t b = 0; b < host.barriers.size(); ++b) {
    const RuntimeCall& call = view.call(host.barriers[b].call);
    barriers_of[{call.pid, call.tid}].push_back(b);
  }
  const HostState& state = view.hostState();
  const ThreadLaunches launches = launchesByThread(view);
  std::vector<Ns> later(host.barriers.size(), 0);   // the call begins this much later
  std::vector<Ns> sooner(host.barriers.size(), 0);  // the thread's host time removed before it
  // By the thread and the blocking call its launches after the stretch follow (-1: none yet).
  std::map<std::pair<ThreadKey, std::int64_t>, std::vector<MovedStretch>> moved;
  // Per stretch, the end of its thread's last blocking call before it: no loop without a blocking
  // call in its body began before that.
  std::vector<Ns> step_floor(stretches.size(), std::numeric_limits<Ns>::min());
  for (std::size_t s = 0; s < stretches.size(); ++s) {
    const RuntimeCall& launch = view.call(stretches[s].launch);
    const auto thread = barriers_of.find({launch.pid, launch.tid});
    if (thread == barriers_of.end()) continue;
    const std::vector<std::size_t>& list = thread->second;  // in end order: the last ended before
    const auto next = std::upper_bound(list.begin(), list.end(), stretches[s].time.start,
                                       [&](Ns t, std::size_t b) { return t < host.barriers[b].end; });
    if (next != list.begin()) step_floor[s] = host.barriers[*std::prev(next)].end;
  }
  const ComesRound round = loopsComeRound(view, stretches, step_floor);
  std::unordered_map<std::size_t, bool> after_allocation_of;  // by call: see below
  for (std::size_t s = 0; s < stretches.size(); ++s) {
    const Stretch& stretch = stretches[s];
    const RuntimeCall& launch = view.call(stretch.launch);
    const ThreadKey key{launch.pid, launch.tid};
    std::int64_t before = -1;
    std::int64_t after = -1;
    // Where the step that `before` ended began: the end of the thread's wait before it (a
    // blocking call that launched nothing: a synchronize, not a pageable copy).
    Ns step_start = 0;
    if (const auto thread = barriers_of.find(key); thread != barriers_of.end()) {
      const std::vector<std::size_t>& list = thread->second;
      const auto next = std::upper_bound(list.begin(), list.end(), stretch.time.start,
                                         [&](Ns t, std::size_t b) { return t < host.barriers[b].end; });
      if (next != list.begin()) before = static_cast<std::int64_t>(*std::prev(next));
      if (next != list.end()) after = static_cast<std::int64_t>(*next);
      for (auto wait = std::prev(next, next != list.begin() ? 1 : 0); wait != list.begin();) {
        --wait;
        if (launches.calls.count(host.barriers[*wait].call) == 0) {
          step_start = host.barriers[*wait].end;
          break;
        }
      }
    }
    // Right after a blocking call, the stretch begins the next iteration: it runs one iteration
    // ahead, before that call. After launches it moves past the iteration's later launches,
    // unless it may have made the data of the copy that followed it (no reordering moves work
    // past what reads its result).
    const auto thread = state.threadOf(launch);
    const auto last = thread ? state.lastCallBefore(*thread, stretch.time.start) : std::nullopt;
    // Moved to the end of its iteration (not a step ahead): it releases no launch of the next.
    Ns until = std::min(round.until[s], round.iteration_end[s]);
    if (after_allocation_stays && thread) {
      // The thread's calls back from the stretch to its last wait: an allocation or free among
      // them (cudaHostAlloc, cudaFreeHost, cudaMalloc, cudaFree) is a step of the program that
      // no launch is (a pinned allocation waits for nothing on the device, so it is no wait of
      // the host timeline): the work after it lies past the step's first blocking step, where
      // the lab's transform, like a programmer moving work after a step's launches, does not
      // reach (the launches it would move past follow a call that may hand them memory).
      // Each call's answer is kept (`after_allocation_of`): stretches of one thread walk back
      // through the same calls (64k launches of one thread: one walk in all, not one a stretch).
      bool after_allocation = false;
      std::vector<std::size_t> walked;
      auto call = last;
      for (int n = 0; call && n < 512; ++n) {
        if (const auto known = after_allocation_of.find(*call); known != after_allocation_of.end()) {
          after_allocation = known->second;
          break;
        }
        const ApiKind kind = view.callKind(*call);
        if (isExplicitSync(kind) || synchronousCall(kind)) break;
        walked.push_back(*call);
        if (kind == ApiKind::kAllocation) {
          after_allocation = true;
          break;
        }
        call = state.lastCallBefore(*thread, view.call(*call).start);
      }
      for (const std::size_t c : walked) after_allocation_of[c] = after_allocation;
      if (after_allocation) continue;
    }
    if (before >= 0 && last && *last == host.barriers[static_cast<std::size_t>(before)].call) {
      // Work after a wait that launches kernels rather than copying a next input in may use what
      // the wait waited for (a loss checked, an optimizer step): it stays where it is.
      if (!stretch.feeds_copy) continue;
      // A batch copied in by a synchronous call (cudaMemcpy: the thread waits in it) begins with a
      // blocking step, not a launch: its iteration has no launch before its first wait for the
      // work to move after, and pipelining, which makes the next batch after the launches of the
      // step before, leaves it where it is, as the lab's transform does (g000314: the main
      // thread's 80 µs before each synchronous copy, moved a step ahead, claimed 81 µs where the
      // fixed program, which keeps them, saved nothing).
      if (synchronousCall(view.callKind(stretch.launch))) continue;
      // So does a batch copied in by an asynchronous call that blocked (pageable host memory: the
      // call returns once the driver has staged the batch), a blocking step too, as the lab's
      // transform counts it (g009177: its 288 µs batch before a pageable upload stays; moved a
      // step ahead it would claim 581 µs where the fix saved 14).
      // (Such a call is a wait of the host timeline: the thread's first after the stretch.)
      if (after >= 0 && host.barriers[static_cast<std::size_t>(after)].call == stretch.launch) continue;
      // Pipelining makes batch k during step k - 1: a step of the same loop, which also began by
      // copying its input in, the same copy. After another step (a phase before the loop, which
      // may begin with a copy in of its own) the batch is the loop's first, with no step of its
      // own to hide under: it stays.
      const auto thread_launches = launches.by_thread.find(key);
      const Ns wait_start = host.barriers[static_cast<std::size_t>(before)].start;
      if (thread_launches == launches.by_thread.end() ||
          !loaderStep(view, thread_launches->second, step_start, wait_start, stretch.launch,
                      op_of_call)) {
        continue;
      }
      // It lands after the previous step's launches, before that step's first blocking call:
      // where the wait ended a run of blocking calls right after one another that begins with
      // copies out to pageable memory (a result downloaded, then a synchronize), before the first
      // of those copies, whose call returns only once the step's GPU work is done (g010126: the
      // next 306 µs batch, landed before the synchronize after such a download, hid under
      // nothing; before the download it claims 309 µs for 323 saved).
      std::size_t land = static_cast<std::size_t>(before);
      const std::vector<std::size_t>& waits = barriers_of.at(key);  // ascending, as host.barriers
      for (auto at = std::lower_bound(waits.begin(), waits.end(), land); at != waits.begin(); --at) {
        const std::size_t previous = *std::prev(at);
        const auto call_before = state.lastCallBefore(*thread, host.barriers[*at].start);
        if (!call_before || *call_before != host.barriers[previous].call ||
            !launchedCopyOut(view, host.barriers[previous].call, op_of_call)) {
          break;
        }
        land = previous;
      }
      later[land] += stretch.time.length();
      if (after >= 0) sooner[static_cast<std::size_t>(after)] += stretch.time.length();
      until = round.until[s];
    } else if (stretch.feeds_copy) {
      continue;
    } else if (after >= 0) {
      // It moves past the thread's launches up to its next blocking call and lands before that
      // call. An asynchronous copy out whose call blocked (pageable host memory: the call returns
      // once the GPU work before it and the copy are done) is such a call too: work moved past
      // it would run after that GPU work, not beside it, so the fix keeps the work before it (the
      // lab's overlap-host counts a pageable copy as a blocking call), and its op, which that
      // call launched, is released no sooner. (Until the fifty-fifth session the work passed such
      // a copy and landed before the synchronize after it, the copy beginning that much sooner.)
      const HostBarrier& next = host.barriers[static_cast<std::size_t>(after)];
      if (next.start < until && launchedCopyOut(view, next.call, op_of_call)) until = next.start;
    }
    moved[{key, before}].push_back({stretch.time.end, stretch.time.length(), until});
  }
  if (moved.empty()) return 0;  // nothing could move: no schedule to build
  // The thread's launches after a moved stretch are released that much sooner.
  // A launch begun at t is released the lengths of its group's stretches with end <= t < until:
  // those ended by t less those whose loop came round by t (until > end for every one that can
  // count), each a prefix sum over the group's stretches sorted by that time.
  struct Released {
    std::vector<std::pair<Ns, Ns>> ended;  // (end, lengths of the stretches ended by it)
    std::vector<std::pair<Ns, Ns>> round;  // (until, lengths of those come round by it)
    static Ns by(const std::vector<std::pair<Ns, Ns>>& sums, Ns t) {
      const auto it = std::upper_bound(sums.begin(), sums.end(), t,
                                       [](Ns v, const std::pair<Ns, Ns>& e) { return v < e.first; });
      return it == sums.begin() ? 0 : std::prev(it)->second;
    }
  };
  std::map<std::pair<ThreadKey, std::int64_t>, Released> released;
  for (const auto& [group, list] : moved) {
    Released& r = released[group];
    for (const MovedStretch& stretch : list) {
      if (stretch.until <= stretch.end) continue;  // no launch lies in [end, until)
      r.ended.emplace_back(stretch.end, stretch.length);
      r.round.emplace_back(stretch.until, stretch.length);
    }
    for (auto* sums : {&r.ended, &r.round}) {
      std::sort(sums->begin(), sums->end());
      for (std::size_t k = 1; k < sums->size(); ++k) (*sums)[k].second += (*sums)[k - 1].second;
    }
  }
  const ScopedOps ops = view.ops();
  std::vector<Ns> earlier(ops.size(), 0);
  for (std::size_t p = 0; p < ops.size(); ++p) {
    const auto launch = view.launchCall(view.op(ops[p]));
    if (!launch) continue;
    const RuntimeCall& call = view.call(*launch);
    const std::int64_t b = host.barrier_of.empty() ? -1 : host.barrier_of[p];
    const auto it = released.find({{call.pid, call.tid}, b});
    if (it == released.end()) continue;
    earlier[p] = Released::by(it->second.ended, call.start) - Released::by(it->second.round, call.start);
  }
  std::vector<CallChange> changed;
  for (std::size_t b = 0; b < host.barriers.size(); ++b) {
    if (later[b] == 0 && sooner[b] == 0) continue;
    changed.push_back({host.barriers[b].call, true, host.barriers[b].own, sooner[b] - later[b]});
  }
  const ScheduleModel model(view, host);
  const std::vector<OrderEdge> waits = waitEdges(streamWaits(view));
  return savingLessReplayError(view, model, waits, waits, earlier, {}, changed);
}

// All of the threads' own code the fix moves, idle device or not: each stretch of at least
// kMinimumCostNs in no CUDA call inside the span, with the call that followed it. Host work
// between launches delays the later launches even while the device is busy: moved after them,
// they reach the device sooner.
std::vector<Stretch> ownCode(const DeviceView& view) {
  std::unordered_map<std::size_t, const GpuOp*> op_of_call;
  for (const ScopedOp& scoped : view.ops()) {
    const GpuOp& op = view.op(scoped);
    if (const auto launch = view.launchCall(op)) op_of_call.emplace(*launch, &op);
  }
  const HostState& state = view.hostState();
  std::vector<Stretch> out;
  for (std::uint32_t thread = 0; thread < state.threadCount(); ++thread) {
    for (const HostPart& part : state.partsWithin(thread, view.spanStart(), view.spanEnd())) {
      if (part.activity != HostActivity::kCpu || part.end - part.start < kMinimumCostNs) continue;
      const auto next = state.firstCallAfter(thread, part.end);
      if (!next) continue;
      const auto op = op_of_call.find(*next);
      const bool feeds_copy = op != op_of_call.end() && op->second->kind == OpKind::kMemcpy &&
                              op->second->copy_kind == CopyKind::kHtoD;
      out.push_back({{part.start, part.end}, *next, false, feeds_copy});
    }
  }
  return out;
}

// The stretches as the finding's evidence (none empty). Only the longest can become evidence:
// those are described in full (NVTX lookups).
void addStretches(const DeviceView& view, const std::vector<Stretch>& stretches,
                  FindingBuilder& builder) {
  std::vector<Ns> lengths;
  for (const Stretch& s : stretches) lengths.push_back(s.time.length());
  const std::size_t shown = std::min(kMaxEvidence, lengths.size());
  std::nth_element(lengths.begin(), lengths.begin() + static_cast<std::ptrdiff_t>(shown - 1),
                   lengths.end(), std::greater<>());
  const Ns detailed_from = lengths[shown - 1];
  for (const Stretch& s : stretches) {
    builder.add(s.time, describeStretch(view, s, s.time.length() >= detailed_from));
  }
}

// The device idled under kMinimumShareOfSpan of the span for the launching thread's own code, but
// that code ran between the thread's launches while the device was still busy with the work queued
// before them: moved after the launches (overlapSaving, the fix's own what-if), it releases them
// sooner and the span ends sooner all the same (c1 g000228: 66 kernels of 3-15 µs with host steps
// of 7-94 µs between launches, every stretch a launch loop's by the exclusion above; the fixed
// program saved 107 µs). Fires where that what-if saves kMinimumShareOfSpan of the span, the
// finding's own floor.
std::optional<Finding> heldBackLaunches(const DeviceView& view) {
  const double span = static_cast<double>(view.spanLength());
  // One host thread makes every launch: with several, a thread's launches released sooner
  // land among the other threads' work, whose kernels then share the device with them (c2
  // g001089: a worker's batch a step ahead slowed the main thread's 3168-block kernel 146 ->
  // 298 µs in the fixed program's trace), which the schedule does not charge.
  if (launchesByThread(view).by_thread.size() != 1) return std::nullopt;
  const std::vector<Stretch> own = ownCode(view);
  if (own.empty()) return std::nullopt;
  const Ns overlapped = overlapSaving(view, own, true);
  if (static_cast<double>(overlapped) < kMinimumShareOfSpan * span) return std::nullopt;
  const bool warn = static_cast<double>(overlapped) >= kWarningShareOfSpan * span;
  FindingBuilder builder(view, "host-busy", warn ? Severity::kWarning : Severity::kInfo);
  Ns total = 0;
  for (const Stretch& s : own) total += s.time.length();
  addStretches(view, own, builder);
  builder.estimateSaving(overlapped);
  builder.fixAlone(overlapped);
  return builder.build(
      fmt::format("the thread that makes every launch ran {} of its own code in {} stretches, in "
                  "no CUDA call, between its launches while the device still ran the work queued "
                  "before them (it idled under 1% of the span for it): the launches after each "
                  "stretch reached the device that much later; run after the launches it held "
                  "back, beside the GPU's work, it would save {}",
                  units::formatDuration(total), builder.count(), units::formatDuration(overlapped)),
      "Overlap host work with GPU work: issue a step's launches before its host work (prepare "
      "the next batch while the current one runs), move setup out of the measured region");
}

}  // namespace

std::optional<Finding> findHostBusy(const DeviceView& view) {
  std::vector<Stretch> stretches;
  Ns total = 0;
  std::size_t gap_first = 0;  // the first stretch of the current gap
  Ns current_gap = -1;
  forEachGapHostPart(view, [&](const Interval& gap, const HostPart& part, std::size_t launch) {
    if (gap.start != current_gap) {
      current_gap = gap.start;
      gap_first = stretches.size();
    }
    if (part.activity == HostActivity::kModuleLoad) {
      for (std::size_t i = gap_first; i < stretches.size(); ++i) stretches[i].before_module_load = true;
      gap_first = stretches.size();
    }
    const Ns length = part.end - part.start;
    if (part.activity != HostActivity::kCpu || length < kMinimumCostNs) return;
    // The run of own code is at least the stretch: only a short stretch needs it looked up.
    if (length < kLaunchLoopStretchNs && ownCodeRun(view, part, launch) < kLaunchLoopStretchNs &&
        inLaunchLoop(view, gap)) {
      return;
    }
    const auto next = view.firstOpStartingAtOrAfter(gap.end);
    const GpuOp* op = next ? &view.op(view.ops()[*next]) : nullptr;
    const bool feeds_copy = op != nullptr && op->kind == OpKind::kMemcpy &&
                            op->copy_kind == CopyKind::kHtoD;
    stretches.push_back({{part.start, part.end}, launch, false, feeds_copy});
    total += part.end - part.start;
  });
  const double span = static_cast<double>(view.spanLength());
  if (stretches.empty() || static_cast<double>(total) < kMinimumShareOfSpan * span) {
    return heldBackLaunches(view);
  }
  const bool warn = static_cast<double>(total) >= kWarningShareOfSpan * span;
  FindingBuilder builder(view, "host-busy", warn ? Severity::kWarning : Severity::kInfo);
  addStretches(view, stretches, builder);
  const Ns overlapped = overlapSaving(view, ownCode(view));
  builder.fixAlone(overlapped);
  std::string saving = "; run after the launches it held back (a step ahead when it follows a "
                       "synchronize), beside the GPU's work, ";
  if (overlapped > total) {
    saving += fmt::format("it would hide all of that and save {} in all (the launches it held back "
                          "would reach the device sooner even where the device was busy)",
                          units::formatDuration(overlapped));
  } else if (overlapped == total) {
    saving += "it would hide all of that";
  } else if (overlapped == 0) {
    saving = "; no GPU work was left to hide it under: only doing the host work on other threads "
             "or processes, or faster, saves that time";
  } else {
    saving += fmt::format("it would hide {} (the GPU work there was to hide it under); the rest "
                          "only by doing the host work on other threads or processes, or faster",
                          units::formatDuration(overlapped));
  }
  return builder.build(
      fmt::format("the device idled {} in {} stretches while the host thread that issued the "
                  "next op ran its own code, in no CUDA call{}",
                  units::formatDuration(total), builder.count(), saving),
      "Overlap host work with GPU work: prepare the next batch while the current one runs "
      "(prefetch, asynchronous data loading with worker processes and pinned memory), move "
      "setup out of the measured region, and cut per-step host overhead with CUDA graphs");
}

}  // namespace cuoverlap::diagnosis
