// implicit-sync-call: allocation and free calls between GPU work (cudaMalloc, cudaFree,
// cudaMallocHost, cudaHostAlloc, cudaFreeHost, cudaHostRegister/Unregister, cudaMallocManaged
// and their driver equivalents, made after the device's first op started and before its last op
// started). They synchronize the device implicitly, or at least hold their thread for their own
// time (pinning pages for cudaMallocHost takes milliseconds for large buffers) while the device
// waits for the next launch. Synchronous memsets are sync-memset's.
// Fix (the lab's transform hoist-alloc): allocate once before the GPU work and free after it.
// Cost: from the what-if schedule with the host modelled (schedule_estimate.h, host_timeline.h:
// each such call is a barrier that waits for the work its process had issued, or for nothing when
// it returned before that ended): the span as recorded minus the span with the calls the fix
// takes out gone (no wait, no time of their own; hoistedCalls: the allocation left before a loop
// stays, and so does each later loop's, told apart by the work launched after it (loopStarts);
// hoistingChanges: the free moved after a loop adds its own time to its thread's next call that
// drains the device after the loop's last iteration (loopEnds); heldByRemoved: other threads' calls that a removed call of 50 µs or more
// held after the device drained return that much sooner, a held kernel launch's op too where it
// began inside its call (launchesHeldBeforeSubmitting); stagedHeldByRemoved: so do staged
// pageable copies still in the driver then, however early they began; blockingHeldByRemoved:
// a blocking copy or memset held so submits its op sooner and loses the hold's part of its own
// time) and the kernels that
// re-faulted a managed buffer freed and allocated again between their runs taking their durations
// less those faults, never less than their fault-free durations (fault_free.h) (kept, the
// buffer's pages would have stayed on the device; the part this lowers the ideal by is
// Finding::ideal_reduction_ns, as for managed-page-faults). Where (ledger): per call, the call's own time and the device idle
// time after the drain that the next op could have been spared (host_blocking_cost.cpp).
// Not reported under 10 µs; info under 5% of the span, a warning from there.
// The saving leaves out the replay's own error where the fix takes it off the critical path
// (replay_error.h).
// Needs: runtime calls.
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <string_view>
#include <unordered_map>

#include "cuoverlap/units.h"
#include "diagnosis/cost_ledger.h"
#include "diagnosis/finding_builder.h"
#include "diagnosis/host_time_given.h"
#include "diagnosis/legacy_barriers.h"
#include "diagnosis/replay_error.h"
#include "diagnosis/rules/allocation_holds.h"
#include "diagnosis/rules/fault_free.h"
#include "diagnosis/rules/host_blocking_cost.h"
#include "diagnosis/rules/rules.h"
#include "diagnosis/schedule_estimate.h"

namespace cuoverlap::diagnosis {
namespace {

// Below this share of the span the finding is info: allocations a framework makes while it sets
// up (pinned staging buffers, the caching allocator growing) cost little next to the run.
constexpr double kWarningShareOfSpan = 0.05;

// The trace's allocations and frees (Trace::memory_events) by their call's (pid, correlation id).
std::map<std::uint64_t, const MemoryEvent*> memoryOfCalls(const Trace& trace) {
  std::map<std::uint64_t, const MemoryEvent*> of_call;
  for (const MemoryEvent& e : trace.memory_events) {
    if (e.correlation_id != 0) of_call.emplace(opBufferKey(e.pid, e.correlation_id), &e);
  }
  return of_call;
}

// What a call allocated or freed, as its memory event says ("" without one): "1.1 MiB of device
// memory; ".
std::string memorySaid(const std::map<std::uint64_t, const MemoryEvent*>& memory, const RuntimeCall& c) {
  const auto found = memory.find(opBufferKey(c.pid, c.correlation_id));
  if (found == memory.end()) return "";
  const MemoryEvent& e = *found->second;
  const char* kind = e.kind == MemKind::kDevice    ? "device"
                     : e.kind == MemKind::kPinned  ? "page-locked host"
                     : e.kind == MemKind::kManaged ? "managed"
                                                   : "";
  return fmt::format("{}{} of {}{}memory; ", e.allocation ? "" : "frees ", units::formatBytes(e.bytes), kind,
                     *kind != '\0' ? " " : "");
}

// The allocation calls between GPU work: after the first op started, before the last op started.
std::vector<std::size_t> allocationCalls(const DeviceView& view) {
  // ops() come sorted by (clipped) start: the last one starts last.
  const Ns last_start = view.empty() ? 0 : std::max<Ns>(0, view.ops()[view.ops().size() - 1].start);
  std::vector<std::size_t> calls;
  for (std::size_t call : view.calls()) {
    const RuntimeCall& c = view.call(call);
    if (view.callKind(call) != ApiKind::kAllocation) continue;
    if (c.start >= view.spanStart() && c.start < last_start) calls.push_back(call);
  }
  return calls;
}

bool isFree(std::string_view name) {
  return name.find("Free") != std::string_view::npos ||
         name.find("Unregister") != std::string_view::npos;
}

// The work a thread launched after an allocation, until its next allocation or free call: per
// op its kind, bytes, copy direction, kernel name and grid, hashed in launch order.
using Launches = std::vector<std::pair<Ns, std::uint64_t>>;  // (launch call's start, op's hash)

std::uint64_t mix(std::uint64_t h, std::uint64_t v) {
  return (h ^ v) * 0x100000001b3ULL + (h << 6) + (h >> 2);
}

std::uint64_t workAfter(const Launches& launches, Ns from, Ns to) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  const auto first = std::lower_bound(launches.begin(), launches.end(),
                                      std::make_pair(from, std::uint64_t{0}));
  for (auto it = first; it != launches.end() && it->first < to; ++it) {
    h = mix(h, it->second);
  }
  return h;
}

// The allocations that begin another loop of their thread. A loop allocates its buffer and
// launches the same work after it in every iteration; a thread that moves on to another loop
// launches other work after its allocations (g000151: a loop uploads 1.4 MiB from its pinned
// buffer, then a loop uploads 0.6 MiB from another). Where the work after the thread's
// allocations before a point and after it has nothing in common, and the work after the
// allocation there comes again, that allocation begins a loop of its own, which the fix
// allocates for again before it (and the free before it ends the loop before). Loops of the
// same work cannot be told apart: they stay one loop.
std::vector<std::size_t> loopStarts(const DeviceView& view,
                                    const std::map<std::pair<std::uint32_t, std::uint32_t>,
                                                   std::vector<std::size_t>>& of_thread) {
  std::map<std::pair<std::uint32_t, std::uint32_t>, Launches> launches;
  for (const auto& [thread, thread_calls] : of_thread) launches[thread];
  for (const ScopedOp& scoped : view.ops()) {
    const GpuOp& op = view.op(scoped);
    const auto launch = view.launchCall(op);
    if (!launch) continue;
    const RuntimeCall& l = view.call(*launch);
    const auto it = launches.find({l.pid, l.tid});
    if (it == launches.end()) continue;
    std::uint64_t h = mix(static_cast<std::uint64_t>(op.kind), op.bytes);
    h = mix(h, static_cast<std::uint64_t>(op.copy_kind));
    h = mix(h, static_cast<std::uint64_t>(op.name));
    h = mix(h, op.grid_blocks);
    it->second.push_back({l.start, h});
  }
  std::vector<std::size_t> starts;
  for (const auto& [thread, thread_calls] : of_thread) {
    Launches& list = launches[thread];
    std::sort(list.begin(), list.end());
    std::vector<std::size_t> allocations;
    std::vector<std::uint64_t> work;
    for (std::size_t k = 0; k < thread_calls.size(); ++k) {
      if (isFree(view.callName(thread_calls[k]))) continue;
      const Ns to = k + 1 < thread_calls.size() ? view.call(thread_calls[k + 1]).start
                                                : std::numeric_limits<Ns>::max();
      allocations.push_back(thread_calls[k]);
      work.push_back(workAfter(list, view.call(thread_calls[k]).end, to));
    }
    // A point j splits them where no work before it comes again from j on (the last time each
    // work before j comes is before j) and the work after j's allocation comes again: a loop
    // begins there. Allocations that each launch other work (a framework's caching allocator
    // growing while it sets up) are no loop: they all go, as before.
    std::unordered_map<std::uint64_t, std::size_t> last;
    for (std::size_t j = 0; j < work.size(); ++j) last[work[j]] = j;
    std::size_t reach = 0;
    for (std::size_t j = 0; j < work.size(); ++j) {
      if (j > 0 && reach < j && last[work[j]] > j) starts.push_back(allocations[j]);
      reach = std::max(reach, last[work[j]]);
    }
  }
  std::sort(starts.begin(), starts.end());
  return starts;
}

// The calls the fix takes out of the GPU work. Hoisting a loop's allocation leaves one allocation
// before the loop: of a thread that allocates repeatedly, the first call stays when it allocates
// (a loop that follows other GPU work keeps it between GPU work; at the span's start it was never
// counted), and so does the first allocation of each later loop of the thread (loopStarts); a
// thread's only call is moved before the GPU work. The free after the loop stays too, but where
// the loop ends a trace does not show (the last free recorded may be in the last iteration's
// middle, with the rest of its work after it): every free goes from where it was, and the
// thread's last, when it is a free, is the one the fix moves after the loop, as is the free just
// before a later loop's first allocation.
struct Hoisting {
  std::vector<std::size_t> removed;     // calls, sorted
  std::vector<std::size_t> after_loop;  // of those, the frees moved after their loop, sorted
  // Of those, where their loop's last iteration ends (loopEnds): the start of the thread's first
  // call after it, or Ns's max where the iteration is the thread's last work.
  std::unordered_map<std::size_t, Ns> loop_end;
};

// Where the last iteration of the loop that a moved free ends: a loop's iterations make the same
// calls, so the iteration begun by the loop's last allocation makes as many as the one before it
// (from its previous allocation to it), and the fix's free comes after them. The recorded free
// may sit in that iteration's middle (g000104: worker1's cudaFreeHost before 0.7 ms of kernels and
// the iteration's device synchronize; the fixed program frees after the loop, after the thread's
// last GPU op). Unknown (none set) where the loop has one allocation or the free lies past it.
void loopEnds(const DeviceView& view,
              const std::map<std::pair<std::uint32_t, std::uint32_t>, std::vector<std::size_t>>& of_thread,
              const std::vector<std::size_t>& starts, Hoisting& hoisting) {
  if (hoisting.after_loop.empty()) return;
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::vector<std::size_t>> every;  // by start
  for (const auto& [thread, thread_calls] : of_thread) every[thread];
  for (std::size_t call : view.calls()) {
    const auto it = every.find({view.call(call).pid, view.call(call).tid});
    if (it != every.end()) it->second.push_back(call);
  }
  for (auto& [thread, list] : every) {
    std::stable_sort(list.begin(), list.end(), [&](std::size_t a, std::size_t b) {
      return view.call(a).start < view.call(b).start;
    });
  }
  for (const auto& [thread, thread_calls] : of_thread) {
    const std::vector<std::size_t>& list = every[thread];
    const auto position = [&](std::size_t call) {
      return static_cast<std::size_t>(std::find(list.begin(), list.end(), call) - list.begin());
    };
    for (std::size_t free : thread_calls) {
      if (!std::binary_search(hoisting.after_loop.begin(), hoisting.after_loop.end(), free)) continue;
      // The loop's last two allocations before the free, among all of the thread's calls (the
      // loop's first may have come before the device's first op).
      const std::size_t at_free = position(free);
      std::size_t last = list.size(), before = list.size();
      for (std::size_t j = at_free; j-- > 0;) {
        if (view.callKind(list[j]) != ApiKind::kAllocation || isFree(view.callName(list[j]))) continue;
        if (last == list.size()) {
          last = j;
          if (std::binary_search(starts.begin(), starts.end(), list[j])) break;
        } else {
          before = j;
          break;
        }
      }
      if (before == list.size()) continue;
      const std::size_t end = last + (last - before);
      if (at_free >= end) continue;
      hoisting.loop_end[free] =
          end < list.size() ? view.call(list[end]).start : std::numeric_limits<Ns>::max();
    }
  }
}

Hoisting hoistedCalls(const DeviceView& view, const std::vector<std::size_t>& calls) {
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::vector<std::size_t>> of_thread;
  for (std::size_t call : calls) {
    of_thread[{view.call(call).pid, view.call(call).tid}].push_back(call);
  }
  for (auto& [thread, thread_calls] : of_thread) {
    std::stable_sort(thread_calls.begin(), thread_calls.end(), [&](std::size_t a, std::size_t b) {
      return view.call(a).start < view.call(b).start;
    });
  }
  const std::vector<std::size_t> starts = loopStarts(view, of_thread);
  const auto startsLoop = [&](std::size_t call) {
    return std::binary_search(starts.begin(), starts.end(), call);
  };
  Hoisting hoisting;
  for (const auto& [thread, thread_calls] : of_thread) {
    const std::size_t count = thread_calls.size();
    for (std::size_t k = 0; k < count; ++k) {
      const std::size_t call = thread_calls[k];
      const bool free = isFree(view.callName(call));
      if (!free && count > 1 && (k == 0 || startsLoop(call))) continue;
      hoisting.removed.push_back(call);
      const bool ends_loop = k + 1 == count || startsLoop(thread_calls[k + 1]);
      if (free && count > 1 && ends_loop) hoisting.after_loop.push_back(call);
    }
  }
  std::sort(hoisting.removed.begin(), hoisting.removed.end());
  std::sort(hoisting.after_loop.begin(), hoisting.after_loop.end());
  loopEnds(view, of_thread, starts, hoisting);
  return hoisting;
}

// The what-if's changes to the blocking calls: the removed calls gone. A free moved after its loop
// waits for the whole device, as the thread's next call that does (a device synchronize, or a
// free or managed allocation that stays) would: it comes at the latest there, so only its own
// time, the release after the drain, is added to that call's (none where its thread makes no
// such call: it falls after the thread's work). Where the loop's last iteration ends is known
// (loopEnds), that call is the first at or after its end: a device synchronize inside the
// iteration comes before the fix's free. A pinned host or device allocation (cudaMalloc,
// cuMemAlloc) waits for no GPU work, as in the host timeline (of the fixed programs' 431
// cudaMalloc calls that began with their process's work in flight, 331 returned before it
// ended, a median 139 µs before): the free comes no later than it, but not by waiting there.
std::vector<CallChange> hoistingChanges(const DeviceView& view, const HostTimeline& host,
                                        const Hoisting& hoisting) {
  std::vector<CallChange> changes;
  for (std::size_t call : hoisting.removed) changes.push_back({call, false, 0});
  const auto removed = [&](std::size_t call) {
    return std::binary_search(hoisting.removed.begin(), hoisting.removed.end(), call);
  };
  const auto drainsDevice = [&](std::size_t call) {
    const ApiKind kind = view.callKind(call);
    const std::string_view base = view.callName(call);
    return kind == ApiKind::kDeviceSync || (kind == ApiKind::kAllocation &&
                                            !isPinnedHostAllocation(base) && !isDeviceAllocation(base));
  };
  for (std::size_t free : hoisting.after_loop) {
    const auto at = std::find_if(host.barriers.begin(), host.barriers.end(),
                                 [&](const HostBarrier& b) { return b.call == free; });
    if (at == host.barriers.end()) continue;
    const auto end = hoisting.loop_end.find(free);
    const Ns after = end != hoisting.loop_end.end() ? end->second : std::numeric_limits<Ns>::min();
    for (auto next = at + 1; next != host.barriers.end() && next->previous >= 0; ++next) {
      if (removed(next->call) || !drainsDevice(next->call) || view.call(next->call).start < after) continue;
      changes.push_back({next->call, true, next->own + at->own});
      break;
    }
  }
  return changes;
}

// Other threads' calls that a removed allocation or free held. Once the device has drained (a
// free first waits for the work in flight, as the host timeline models it: its own time is what
// follows; an allocation waits for none), the call holds the context's lock for the rest of its
// time, and another thread's launch or asynchronous copy or memset that is in the driver then
// waits for it and returns right after it. In the fixed programs' traces (/work/vtraces14, every
// variant), every such call of another thread in flight when the device drained inside a
// cudaFree returned after the free but one of 192, a median 25 µs after (cudaFreeHost 42 of 44,
// cudaMalloc 68 of 69, cudaMallocHost 49 of 52), while 510 of the 702 begun while it drained
// returned before then. So the fix gives a held call back the part of it that lay in the removed
// call's own time (from when the call began or the device drained, whichever was later, to the
// removed call's return): it returns that much sooner and releases its op sooner. Only calls of
// kHoldingCallNs or more hold (allocation_holds.h), and the fixed program's thread still makes
// its other calls. The free the fix moves after its loop still holds the calls beside it there:
// it gives nothing back.
// The removed calls that hold others (kHoldingCallNs or more; not the free moved after its loop),
// each locking the context from its drain on.
std::vector<Hold> removedHolds(const DeviceView& view, const HostTimeline& host,
                               const Hoisting& hoisting) {
  std::unordered_map<std::size_t, Ns> own_of;  // a blocking call's own time (after its drain)
  for (const HostBarrier& b : host.barriers) own_of.emplace(b.call, b.own);
  std::vector<Hold> removed;
  for (std::size_t call : hoisting.removed) {
    if (std::binary_search(hoisting.after_loop.begin(), hoisting.after_loop.end(), call)) continue;
    const RuntimeCall& c = view.call(call);
    if (c.end - c.start < kHoldingCallNs) continue;
    const auto own = own_of.find(call);
    const Ns locked = own != own_of.end() ? std::max(c.start, c.end - own->second) : c.start;
    removed.push_back({c.start, c.end, locked, c.pid, c.tid, call});
  }
  return removed;
}

std::vector<HostTimeGiven> heldByRemoved(const DeviceView& view, const HostTimeline& host,
                                         const Hoisting& hoisting) {
  const Holds holds(removedHolds(view, host, hoisting));
  if (holds.empty()) return {};
  const std::vector<std::size_t> pageable = pageableCopyCalls(view);
  std::vector<HostTimeGiven> given;
  for (std::size_t call : view.calls()) {
    if (!holdable(view, call, pageable)) continue;
    const RuntimeCall& c = view.call(call);
    Ns held = 0;
    holds.forEachHolding(c, [&](const Hold& h) {
      held = std::max(held, h.end - std::max(c.start, h.locked));
      return false;
    });
    if (held > 0) given.push_back({call, held, /*in_call=*/true});
  }
  return given;
}

// Blocking copies and memsets (synchronous, or with pageable memory; not the staged ones below) of
// another thread that a removed call held: the driver takes the call only once it has the
// context's lock, so one that began inside a removed call and returned after it waited for that
// call, from its start or the holder's drain, whichever was later (heldByRemoved's hold; holdable
// leaves these out, as they block on their own op). Where its op started inside the call after the
// hold, the op is released that much sooner (g003095, c5: main's 1.1 MiB cudaMemcpy began 124 µs
// into the worker's 3.3 ms cudaMallocHost and its copy started 17 µs after that returned); the
// part of the hold after the work the call waited for had ended was its own time, which it no
// longer spends (g000117: main's legacy-stream cudaMemset returned 57 µs after the worker's
// cudaFree, 180 µs after the other streams' kernels it waited for).
void blockingHeldByRemoved(const DeviceView& view, const HostTimeline& host,
                           const Hoisting& hoisting, std::vector<CallChange>& changed,
                           std::vector<Ns>& earlier) {
  const Holds holds(removedHolds(view, host, hoisting));
  if (holds.empty()) return;
  std::unordered_map<std::size_t, Ns> held_of;  // call -> the hold its op no longer waits
  std::unordered_map<std::size_t, std::size_t> change_of;  // call -> its index in `changed`
  for (std::size_t k = 0; k < changed.size(); ++k) change_of.emplace(changed[k].call, k);
  for (const HostBarrier& barrier : host.barriers) {
    const ApiKind kind = view.callKind(barrier.call);
    if (barrier.staged || kind == ApiKind::kAllocation || isExplicitSync(kind)) continue;
    const RuntimeCall& c = view.call(barrier.call);
    Ns w = c.start;
    for (std::size_t p : barrier.waited_for) w = std::max(w, view.ops()[p].end);
    Ns held = 0, own = 0;
    holds.forEachHolding(c, [&](const Hold& h) {
      held = std::max(held, h.end - std::max(c.start, h.locked));
      own = std::max(own, h.end - std::max({c.start, h.locked, w}));
      return false;
    });
    if (held > 0) held_of.emplace(barrier.call, held);
    own = std::min(own, barrier.own);
    if (own <= 0) continue;
    if (const auto existing = change_of.find(barrier.call); existing != change_of.end()) {
      CallChange& change = changed[existing->second];
      change.own = std::max<Ns>(0, change.own - own);
    } else {
      changed.push_back({barrier.call, true, barrier.own - own, 0});
    }
  }
  opsHeldInCallReleasedSooner(view, held_of, earlier);
}

// Staged copies (pageable host memory) that a removed call held: the host timeline counts such
// a call's whole time as its own (it returned before its op ended, so it waited for nothing the
// schedule knows), but one still in the driver when a removed call of another thread of its
// process locked the context (its drain) that returned only after that call had returned was
// held by it too, however early it began: the driver stages its data under the same lock. It
// keeps the rest of its time. g004081 (c6): worker0's 712 KiB pageable cudaMemcpyAsync, begun
// 0.4 ms before the window's first op, returned 1.8 ms later, 0.14 ms after main's cudaFreeHost
// (0.50 ms after its drain), its copy then taking 16 µs; in the fixed program it ran 220 µs into
// the window, right after main's kernels, and worker0's kernel behind it.
void stagedHeldByRemoved(const DeviceView& view, const HostTimeline& host, const Hoisting& hoisting,
                         std::vector<CallChange>& changed, std::vector<Ns>& earlier) {
  std::vector<Hold> holds = removedHolds(view, host, hoisting);
  if (holds.empty()) return;
  std::sort(holds.begin(), holds.end(), [](const Hold& a, const Hold& b) { return a.end < b.end; });
  std::unordered_map<std::size_t, Ns> held_of;  // staged call -> the part a removed call held
  for (const HostBarrier& barrier : host.barriers) {
    if (!barrier.staged) continue;
    const RuntimeCall& c = view.call(barrier.call);
    Ns held = 0;
    // The holds that returned while the call was in the driver.
    auto h = std::upper_bound(holds.begin(), holds.end(), c.start, [](Ns t, const Hold& x) { return t < x.end; });
    for (; h != holds.end() && h->end < c.end; ++h) {
      if (h->pid != c.pid || h->tid == c.tid) continue;
      held = std::max(held, h->end - std::max(c.start, h->locked));
    }
    held = std::min(held, barrier.own);
    if (held <= 0) continue;
    held_of.emplace(barrier.call, held);
    const auto existing = std::find_if(changed.begin(), changed.end(),
                                       [&](const CallChange& k) { return k.call == barrier.call; });
    if (existing != changed.end()) {
      existing->own = std::max<Ns>(0, existing->own - held);
    } else {
      changed.push_back({barrier.call, true, barrier.own - held, 0});
    }
  }
  if (held_of.empty()) return;
  // Its copy, submitted as the call staged it, is released that much sooner too.
  std::size_t position = 0;
  for (const ScopedOp& scoped : view.ops()) {
    const std::size_t at = position++;
    const auto launch = view.launchCall(view.op(scoped));
    if (!launch) continue;
    if (const auto held = held_of.find(*launch); held != held_of.end()) {
      earlier[at] = std::max(earlier[at], held->second);
    }
  }
}

// The ops whose launch calls an allocation or free of another thread held (any such call of
// 50 µs or more, kept by the fix or not; the call began inside it and returned after it) and that
// started before their calls returned: the driver submitted them as it let the call go, so the
// schedule releases them at their recorded start, not as a call that blocked until its op ran
// (ScheduleModel's submitted_late). Released from the call's start instead, such an op ran in the
// recorded schedule before the allocation's drain that waited for it (g000163: a copy of the main
// thread held 105 µs behind the worker's cudaMallocHost ran 17 µs sooner, and the worker's
// cudaFreeHost, which waited for it, took 10 µs instead of 41).
std::vector<std::size_t> submittedLate(const DeviceView& view) {
  std::vector<Hold> allocations;
  for (std::size_t call : view.calls()) {
    if (view.callKind(call) != ApiKind::kAllocation) continue;
    const RuntimeCall& c = view.call(call);
    if (c.end - c.start >= kHoldingCallNs) allocations.push_back({c.start, c.end, c.start, c.pid, c.tid, call});
  }
  const Holds holds(std::move(allocations));
  if (holds.empty()) return {};
  const std::vector<std::size_t> pageable = pageableCopyCalls(view);
  std::vector<std::size_t> late;
  for (std::size_t at = 0; at < view.ops().size(); ++at) {
    const ScopedOp& scoped = view.ops()[at];
    const auto launch = view.launchCall(view.op(scoped));
    if (!launch || !holdable(view, *launch, pageable)) continue;
    const RuntimeCall& c = view.call(*launch);
    if (c.end <= scoped.start) continue;
    bool held = false;
    holds.forEachHolding(c, [&](const Hold&) { return held = true; });
    if (held) late.push_back(at);
  }
  return late;
}

// UVM services faults per 2 MiB virtual-address block (the driver's VA block): once the device has
// faulted a block's pages in, they stay until the host touches them or the memory is freed.
constexpr int kVaBlockShift = 21;

// Per (process, VA block) key of a fault address.
std::uint64_t blockKey(std::uint32_t pid, std::uint64_t address) {
  return (static_cast<std::uint64_t>(pid) << 43) ^ (address >> kVaBlockShift);
}

// The device's GPU fault groups in the view that fault a block the device had faulted in earlier
// in the view, with one of the allocation calls `calls` of the process (a free and a new
// allocation) since then and no CPU fault on the block: the new allocation gave the same addresses
// fresh pages. Allocated once before the GPU work, the pages would still be on the device and
// these faults would not happen; the first fault of each block would.
std::vector<const UmPageFaultGroup*> refaults(const DeviceView& view,
                                              const std::vector<std::size_t>& calls) {
  const UnifiedMemory& um = view.trace().unified_memory;
  std::unordered_map<std::uint32_t, std::vector<Ns>> call_starts;  // per pid (0: any), sorted
  for (std::size_t call : calls) {
    call_starts[view.call(call).pid].push_back(view.call(call).start);
    call_starts[0].push_back(view.call(call).start);
  }
  for (auto& [pid, starts] : call_starts) std::sort(starts.begin(), starts.end());
  std::unordered_map<std::uint64_t, std::vector<Ns>> cpu_touches;  // per block, sorted
  for (const UmCpuFault& f : um.cpu_faults) cpu_touches[blockKey(f.pid, f.address)].push_back(f.time);
  const auto anyIn = [](const std::vector<Ns>& sorted, Ns from, Ns to) {
    const auto it = std::upper_bound(sorted.begin(), sorted.end(), from);
    return it != sorted.end() && *it < to;
  };
  // Per block: when the device first faulted it in since the host last touched it.
  std::unordered_map<std::uint64_t, Ns> resident_since;
  std::vector<const UmPageFaultGroup*> out;
  for (const UmPageFaultGroup& f : um.gpu_faults) {
    if (f.start < view.spanStart()) continue;
    if (f.start >= view.spanEnd()) break;
    if (!servedFault(f, view.deviceId())) continue;
    const std::uint64_t block = blockKey(f.pid, f.address);
    const auto [since, first] = resident_since.try_emplace(block, f.start);
    if (first) continue;
    if (anyIn(cpu_touches[block], since->second, f.start)) {
      since->second = f.start;
      continue;
    }
    const auto allocs = call_starts.find(f.pid);
    if (allocs != call_starts.end() && anyIn(allocs->second, since->second, f.start)) {
      out.push_back(&f);
    }
  }
  return out;
}

// The kernels those re-faults slowed, each at its duration less the time the driver spent on them
// (the union of the re-fault groups inside its run), but no shorter than its fault-free duration
// (managed-page-faults' estimate): the other warps of the grid run on while the driver serves
// the faulting ones, so a run loses less than the faults' service where they overlap that work.
std::vector<FasterOp> withoutRefaults(const DeviceView& view,
                                      const std::vector<const UmPageFaultGroup*>& groups) {
  std::vector<FasterOp> faster;
  if (groups.empty()) return faster;
  const std::vector<FasterOp> fault_free = faultFreeKernels(view);
  std::size_t position = 0;
  for (const ScopedOp& scoped : view.ops()) {
    const std::size_t at = position++;
    const GpuOp& op = view.op(scoped);
    if (op.kind != OpKind::kKernel) continue;
    const auto first = std::lower_bound(groups.begin(), groups.end(), scoped.start,
                                        [](const UmPageFaultGroup* g, Ns t) { return g->start < t; });
    std::vector<Interval> serviced;
    for (auto it = first; it != groups.end() && (*it)->start < scoped.end; ++it) {
      if ((*it)->pid == 0 || (*it)->pid == op.pid) serviced.push_back({(*it)->start, std::min((*it)->end, scoped.end)});
    }
    const Ns saved = totalLength(unionOf(std::move(serviced)));
    if (saved == 0) continue;
    const auto own = std::lower_bound(fault_free.begin(), fault_free.end(), at,
                                      [](const FasterOp& f, std::size_t p) { return f.position < p; });
    const Ns floor = own != fault_free.end() && own->position == at ? own->duration : 0;
    const Ns duration = std::max(scoped.end - scoped.start - saved, floor);
    if (duration < scoped.end - scoped.start) faster.push_back({at, duration});
  }
  return faster;
}

}  // namespace

std::optional<Finding> findImplicitSyncCall(const DeviceView& view) {
  const std::vector<std::size_t> calls = allocationCalls(view);
  if (calls.empty()) return std::nullopt;
  const HostTimeline& host = buildHostTimeline(view);
  if (host.empty()) return std::nullopt;
  const Hoisting hoisted = hoistedCalls(view, calls);
  std::vector<CallChange> removed = hoistingChanges(view, host, hoisted);
  // Other threads' calls the removed calls held return sooner, and so do their threads' later
  // launches and blocking calls.
  const std::vector<HostTimeGiven> held = heldByRemoved(view, host, hoisted);
  barriersGivenBack(view, held, host, removed);
  std::vector<Ns> earlier = hostTimeGivenBack(view, held, host);
  launchesHeldBeforeSubmitting(view, held, earlier);
  blockingHeldByRemoved(view, host, hoisted, removed, earlier);
  stagedHeldByRemoved(view, host, hoisted, removed, earlier);
  // Without the calls the thread runs ahead, but its work still waits at the legacy stream's
  // implicit barriers, as it did (a blocking stream's kernel behind another thread's cudaMemcpy;
  // released kUnsampledBarrierLagNs after it where the trace samples no barrier lag, as the other
  // what-ifs whose thread runs ahead release it), and a synchronous copy that blocked behind that
  // order is released by it, not by its call. An asynchronous call that an allocation held
  // submitted its op as it was let go (submittedLate).
  const std::vector<OrderEdge> waits = programOrderEdges(view, kUnsampledBarrierLagNs);
  const ScheduleModel model(view, host, waits, submittedLate(view));
  const std::vector<const UmPageFaultGroup*> refaulted = refaults(view, hoisted.removed);
  const std::vector<FasterOp> faster = withoutRefaults(view, refaulted);
  const Ns saving = savingLessReplayError(view, model, waits, waits, earlier, faster, removed);
  if (saving < kMinimumClaimNs) return std::nullopt;
  const bool warn = static_cast<double>(saving) >=
                    kWarningShareOfSpan * static_cast<double>(view.spanLength());
  FindingBuilder builder(view, "implicit-sync-call", warn ? Severity::kWarning : Severity::kInfo);
  const std::vector<HostBlockingCharge> charges = chargeHostBlockingCalls(view);
  const std::map<std::uint64_t, const MemoryEvent*> memory = memoryOfCalls(view.trace());
  for (std::size_t call : calls) {
    const RuntimeCall& c = view.call(call);
    const HostBlockingCharge* charge = chargeOf(charges, call);
    const bool drained = charge != nullptr && charge->idle.length() > 0;
    const std::string detail =
        memorySaid(memory, c) +
        (drained ? fmt::format("waited {} for work in flight, then {} after the device drained; the "
                              "device idled {} that the next op could have been spared",
                              units::formatDuration(charge->lead),
                              units::formatDuration(charge->drain),
                              units::formatDuration(charge->idle.length()))
                : fmt::format("took {} between GPU work", units::formatDuration(c.end - c.start)));
    builder.add(Interval{c.start, c.end}, evidenceForCall(view, call, 0, detail));
    if (drained) builder.addRegion(charge->idle);
  }
  for (const FasterOp& run : faster) {
    const ScopedOp scoped = view.ops()[run.position];
    const GpuOp& op = view.op(scoped);
    builder.add(Interval{scoped.start, scoped.end},
                evidenceForOp(view, op, fmt::format(
                    "{} ran {} while the driver faulted in pages of a buffer freed and allocated "
                    "again since the device last faulted them in; about {} with the buffer kept",
                    describeOp(view, op), units::formatDuration(scoped.end - scoped.start),
                    units::formatDuration(run.duration))));
  }
  // Kernels that no longer fault run faster: that part lowers the ideal, as prefetching does.
  const Ns reduction = std::clamp<Ns>(ledgerIdeal(view) - ledgerIdeal(view, faster), 0, saving);
  builder.estimateSaving(saving - reduction);
  builder.lowerIdeal(reduction);
  return builder.build(
      fmt::format("{} allocation or free calls between GPU work synchronized the device or held "
                  "the host while the device waited for the next launch",
                  builder.count()),
      "Allocate and pin buffers once before the GPU work and free them after it, or use the "
      "stream-ordered allocator (cudaMallocAsync/cudaFreeAsync)");
}

}  // namespace cuoverlap::diagnosis
