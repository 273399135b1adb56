// single-stream in programs whose host threads share the legacy default stream
// (rules/single_stream_threads.h): each thread's loop there is work of its own, and the split's
// what-if keeps the legacy stream's barriers in both schedules.
#include <catch2/catch.hpp>

#include <algorithm>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "diagnosis/device_view.h"
#include "diagnosis/host_timeline.h"
#include "diagnosis/legacy_barriers.h"
#include "diagnosis/rules/rules.h"
#include "diagnosis/rules/single_stream_advice.h"
#include "diagnosis/rules/single_stream_fixes.h"
#include "diagnosis/rules/single_stream_threads.h"
#include "diagnosis/rules/staging_holds.h"
#include "diagnosis/schedule_estimate.h"
#include "diagnosis/stream_waits.h"
#include "findings_test_util.h"
#include "trace_builder.h"

namespace cuoverlap {
namespace {

using diagnosis::DeviceView;
using diagnosis::OrderEdge;
using test::findingById;
using test::findingsOf;
using test::kNullStream;
using test::TraceBuilder;

// threadsOwnWork's keys, or workStreams' where no stream is shared.
std::vector<std::uint64_t> ownWork(const DeviceView& view) {
  std::vector<std::uint64_t> keys = diagnosis::workStreams(view);
  return diagnosis::threadsOwnWork(view, keys).value_or(keys);
}

// Six tiles on `stream` (copy-in 90 µs, kernel 100 µs, copy-out 90 µs) launched by thread 1 from
// `t` µs on, the first tile starting at `device_us`.
void tileLoop(TraceBuilder& b, std::uint32_t stream, double t, double device_us) {
  for (int tile = 0; tile < 6; ++tile) {
    const double base = device_us + 300.0 * tile;
    b.copyCall("cudaMemcpyAsync_v3020", stream, t, t + 2, base + 10, base + 100, CopyKind::kHtoD);
    b.launch(stream, t + 3, t + 5, base + 100, base + 200);
    b.copyCall("cudaMemcpyAsync_v3020", stream, t + 6, t + 8, base + 200, base + 290, CopyKind::kDtoH);
    t += 9;
  }
}

// Each op keyed by its own stream (workStreams' keys where no thread's synchronous copy moves),
// with the loop on `stream`: its key and the extent of its ops.
struct StreamLoop {
  std::vector<std::uint64_t> keys;
  std::uint64_t loop = 0;
  Interval extent;
};
StreamLoop keyedByStream(const DeviceView& view, std::uint32_t stream) {
  StreamLoop out;
  for (std::size_t p = 0; p < view.ops().size(); ++p) {
    const GpuOp& op = view.op(view.ops()[p]);
    out.keys.push_back(DeviceView::streamKey(op));
    if (op.stream_id != stream) continue;
    out.loop = DeviceView::streamKey(op);
    if (out.extent.start == 0) out.extent.start = view.ops()[p].start;
    out.extent.end = std::max(out.extent.end, view.ops()[p].end);
  }
  return out;
}

// A kernel that thread 2 launched to `stream`.
void otherThreadKernel(TraceBuilder& b, std::uint32_t stream, double call_us, double start_us, double end_us) {
  b.launch(stream, call_us, call_us + 2, start_us, end_us);
  b.trace().runtime_calls.back().tid = 2;
}

// Thread 1's six tiles on the legacy stream, then thread 2's two kernels there, each thread
// synchronizing the stream (thread 2 only where `independent`), then a kernel on stream 13.
TraceBuilder twoThreadsOnLegacy(bool independent) {
  TraceBuilder b;
  tileLoop(b, kNullStream, 0, 10);
  otherThreadKernel(b, kNullStream, 60, 1'820, 2'320);
  otherThreadKernel(b, kNullStream, 63, 2'322, 2'822);
  b.call("cudaStreamSynchronize_v3020", 66, 1'812);
  if (independent) {
    b.call("cudaStreamSynchronize_v3020", 66, 2'824);
    b.trace().runtime_calls.back().tid = 2;
  }
  b.launch(13, 1'813, 1'815, 2'830, 2'900);  // a blocking stream's kernel keeps its key
  return b;
}

// heldBySplitLegacyCalls for a split of thread 1's loop on the legacy stream (the other threads'
// legacy work keyed apart): how much sooner each op starts; `last`, thread 1's last legacy op.
std::vector<Ns> earlierInSplitOfThread1(const DeviceView& view, std::size_t& last) {
  std::vector<std::uint64_t> keys = ownWork(view);
  std::uint64_t loop = 0;
  for (std::size_t p = 0; p < view.ops().size(); ++p) {
    const auto call = view.launchCall(view.op(view.ops()[p]));
    if (!view.onLegacyDefaultStream(view.op(view.ops()[p])) || !call) continue;
    if (view.call(*call).tid == 1) {
      loop = keys[p];
      last = p;
    } else {
      keys[p] = ~keys[p];
    }
  }
  const diagnosis::HostTimeline host = diagnosis::buildHostTimeline(view);
  std::vector<diagnosis::CallChange> changed;
  std::vector<Ns> earlier;
  diagnosis::heldBySplitLegacyCalls(view, host, keys, loop, changed, earlier);
  return earlier;
}

TEST_CASE("single-stream: each thread's loop on the shared legacy stream is its own work") {
  // One stream, two loops. The finding names thread 1's loop (18 ops), not the stream's 20 ops,
  // which the split of one thread's loop would not move.
  const Trace trace = twoThreadsOnLegacy(true).build();
  const DeviceView view(trace, Scope{}, 0);
  const std::vector<std::uint64_t> keys = ownWork(view);
  const std::uint64_t legacy = DeviceView::streamKey(view.op(view.ops()[0]));
  const std::uint64_t first = keys[0];
  CHECK(first != legacy);
  CHECK(std::count(keys.begin(), keys.end(), first) == 18);
  CHECK(keys[18] != first);
  CHECK(keys[18] == keys[19]);
  CHECK(keys[20] == DeviceView::streamKey(view.op(view.ops()[20])));
  const auto findings = findingsOf(trace);
  const Finding* f = findingById(findings, "single-stream");
  REQUIRE(f != nullptr);
  CHECK(f->count == 18);
  CHECK(f->fix_stream == kNullStream);
}

TEST_CASE("single-stream: a thread that hands its work over shares its driver's loop") {
  // Thread 2 never synchronizes (as PyTorch's autograd thread, driven by the main thread): the
  // legacy stream's work stays one loop.
  const Trace trace = twoThreadsOnLegacy(false).build();
  const DeviceView view(trace, Scope{}, 0);
  const std::vector<std::uint64_t> keys = ownWork(view);
  for (std::size_t p = 0; p < keys.size(); ++p) CHECK(keys[p] == DeviceView::streamKey(view.op(view.ops()[p])));
}

TEST_CASE("single-stream: a thread whose copies blocked on its work synchronizes on its own") {
  // Thread 2 calls no synchronize (its last one may lie past the window), but its synchronous
  // copy returned only after its op ran: it waited for its own work, an independent loop.
  TraceBuilder b = twoThreadsOnLegacy(false);
  b.copyCall("cudaMemcpy_v3020", kNullStream, 70, 2'830, 2'824, 2'828, CopyKind::kDtoH);
  b.trace().runtime_calls.back().tid = 2;
  const Trace trace = b.build();
  const DeviceView view(trace, Scope{}, 0);
  const std::vector<std::uint64_t> keys = ownWork(view);
  const std::uint64_t legacy = DeviceView::streamKey(view.op(view.ops()[0]));
  CHECK(keys[0] != legacy);
  CHECK(keys[18] != keys[0]);
}

TEST_CASE("single-stream: one thread's work on the legacy stream keeps its key") {
  TraceBuilder b;
  tileLoop(b, kNullStream, 0, 10);
  const Trace trace = b.build();
  const DeviceView view(trace, Scope{}, 0);
  const std::vector<std::uint64_t> keys = ownWork(view);
  for (std::size_t p = 0; p < keys.size(); ++p) CHECK(keys[p] == DeviceView::streamKey(view.op(view.ops()[p])));
}

// Whether some edge joins the op at `a` and one of `positions` (either way).
bool joined(const std::vector<OrderEdge>& edges, std::size_t a, const std::vector<std::size_t>& positions) {
  return std::any_of(edges.begin(), edges.end(), [&](const OrderEdge& e) {
    const bool from = e.from == a && std::count(positions.begin(), positions.end(), e.to) > 0;
    const bool to = e.to == a && std::count(positions.begin(), positions.end(), e.from) > 0;
    return from || to;
  });
}

TEST_CASE("single-stream: the split keeps the legacy stream's barriers with its created streams") {
  // Thread 1's loop on `stream`, thread 2's kernel on the legacy stream launched in its middle:
  // the legacy kernel waited for the loop's earlier work and its later work for the kernel. Split
  // over created streams, a blocking stream's lanes are blocking streams (cudaStreamCreate) and
  // keep the barrier; a non-blocking stream's lanes do not.
  for (const bool blocking : {true, false}) {
    TraceBuilder b;
    const std::uint32_t stream = blocking ? 13 : 16;
    if (!blocking) b.addStream(16, StreamFlag::kNonBlocking);
    tileLoop(b, stream, 0, 10);
    otherThreadKernel(b, kNullStream, 25, 950, 960);
    const Trace trace = b.build();
    const DeviceView view(trace, Scope{}, 0);
    const std::vector<std::uint64_t> keys = ownWork(view);
    std::size_t legacy = 0;
    std::vector<std::size_t> loop;
    for (std::size_t p = 0; p < view.ops().size(); ++p) {
      if (view.onLegacyDefaultStream(view.op(view.ops()[p]))) legacy = p;
      else loop.push_back(p);
    }
    const std::uint64_t loop_key = keys[loop.front()];
    CHECK(diagnosis::blockingWork(view, keys, loop_key) == blocking);
    const std::vector<std::uint64_t> lanes = diagnosis::chunkLanes(view, keys, loop_key);
    REQUIRE(!lanes.empty());
    CHECK(joined(diagnosis::splitBarriers(view, {}, false), legacy, loop) == blocking);
    CHECK(joined(diagnosis::splitBarriers(view, lanes, blocking), legacy, loop) == blocking);
    // Lanes not marked blocking are no stream of the view: no barrier with them.
    CHECK_FALSE(joined(diagnosis::splitBarriers(view, lanes, false), legacy, loop));
  }
}

TEST_CASE("single-stream: calls another thread's staged copies held get their time back in the split") {
  // Thread 1 stages pageable copies on stream 13 (calls of 40 µs); thread 2's launches to stream
  // 14 take 2 µs alone, and 30 µs where they began during a staged call (held until it ended).
  // Split, the copies are pinned and asynchronous: thread 2's held launches get back the 28 µs
  // beyond their typical time, so its later ops are released sooner.
  TraceBuilder b;
  std::vector<std::size_t> copy_calls;
  for (int k = 0; k < 3; ++k) {
    const double t = 100.0 * k;
    b.copyCall("cudaMemcpyAsync_v3020", 13, t, t + 40, t + 30, t + 45, CopyKind::kHtoD, MemKind::kPageable);
    b.launch(14, t + 10, t + 40, t + 41, t + 50);  // held by the staged call
    b.trace().runtime_calls.back().tid = 2;
    b.launch(14, t + 60, t + 62, t + 63, t + 70);  // alone
    b.trace().runtime_calls.back().tid = 2;
  }
  const Trace trace = b.build();
  const DeviceView view(trace, Scope{}, 0);
  std::unordered_set<std::size_t> pinned;
  for (const diagnosis::ScopedOp& scoped : view.ops()) {
    const GpuOp& op = view.op(scoped);
    if (op.kind == OpKind::kMemcpy) pinned.insert(*view.launchCall(op));
  }
  REQUIRE(pinned.size() == 3);
  const diagnosis::HostTimeline host = diagnosis::buildHostTimeline(view);
  std::vector<diagnosis::CallChange> changed;
  std::vector<Ns> earlier;
  diagnosis::heldBySplitCopies(view, host, pinned, changed, earlier);
  REQUIRE(earlier.size() == view.ops().size());
  Ns last_kernel_earlier = 0;
  for (std::size_t p = 0; p < view.ops().size(); ++p) {
    if (view.op(view.ops()[p]).kind == OpKind::kKernel) last_kernel_earlier = earlier[p];
  }
  CHECK(last_kernel_earlier >= TraceBuilder::ns(3 * 28) - 1);  // each held launch's excess
  // Without the staged copies pinned, nothing is given back.
  std::vector<diagnosis::CallChange> none_changed;
  std::vector<Ns> none;
  diagnosis::heldBySplitCopies(view, host, {}, none_changed, none);
  CHECK(none.empty());
}

// What heldBySplitCopies gives back the last op launched by thread 2 for pinning thread 1's one
// staged copy (call 5-40 µs on stream 13, staged from its start), given `held_call` (thread 2's
// call that the staging held, on stream 14, from `start_us` to 40 µs), and whether thread 3 makes
// two uncontended calls of `held_call` (2 µs each, on stream 15).
Ns givenBackAfter(const std::string& held_call, double start_us, bool third_thread_alone) {
  TraceBuilder b;
  b.copyCall("cudaMemcpyAsync_v3020", 13, 5, 40, 30, 45, CopyKind::kHtoD, MemKind::kPageable);
  const bool memset = held_call.rfind("cudaMemsetAsync", 0) == 0;
  const auto submit = [&](std::uint32_t stream, double call_start, double call_end, double op_start) {
    if (memset) {
      b.memset(stream, op_start, op_start + 1, b.call(held_call, call_start, call_end));
    } else if (held_call.rfind("cudaLaunchKernel", 0) == 0) {
      b.launch(stream, call_start, call_end, op_start, op_start + 5);
    } else {
      b.call(held_call, call_start, call_end);
    }
  };
  submit(14, start_us, 40, 41);
  b.trace().runtime_calls.back().tid = 2;
  b.launch(14, 45, 47, 50, 60);  // thread 2's next launch: released when its calls return
  b.trace().runtime_calls.back().tid = 2;
  if (third_thread_alone) {
    for (const double t : {100.0, 110.0}) {
      submit(15, t, t + 2, t + 3);
      b.trace().runtime_calls.back().tid = 3;
    }
  }
  const Trace trace = b.build();
  const DeviceView view(trace, Scope{}, 0);
  const std::unordered_set<std::size_t> pinned{*view.launchCall(view.op(view.ops()[0]))};
  const diagnosis::HostTimeline host = diagnosis::buildHostTimeline(view);
  std::vector<diagnosis::CallChange> changed;
  std::vector<Ns> earlier;
  diagnosis::heldBySplitCopies(view, host, pinned, changed, earlier);
  for (std::size_t p = 0; p < view.ops().size() && p < earlier.size(); ++p) {
    if (view.ops()[p].start == TraceBuilder::ns(50)) return earlier[p];
  }
  return 0;
}

TEST_CASE("single-stream: a held call that only submits work keeps what other threads' such calls take") {
  // Thread 2's one cudaMemsetAsync, held 10-40 µs by thread 1's staged copy, is the only call of
  // its kind on its thread: its own 30 µs were its "typical" time, and pinning gave nothing back.
  // Thread 3's uncontended memsets take 2 µs: the held one gets back 28 µs (its 30 µs under the
  // staging, less those 2), and thread 2's next launch is released that much sooner.
  CHECK(givenBackAfter("cudaMemsetAsync_v3020", 10, true) == TraceBuilder::ns(28));
  // With no uncontended memset anywhere, an uncontended submission of another kind tells its time
  // (thread 2's own 2 µs launch after it).
  CHECK(givenBackAfter("cudaMemsetAsync_v3020", 10, false) == TraceBuilder::ns(28));
  // A call that does work of its own (a pinned host allocation) keeps what it took.
  CHECK(givenBackAfter("cudaMallocHost_v3020", 10, true) == 0);
}

TEST_CASE("single-stream: a staged call begun during another thread's call holds it too") {
  // Thread 2's launch began at 0 µs, before thread 1's staged copy (5 µs), and returned at 40 with
  // it: the driver's lock went to the copy. Pinned, the copy returns 5 µs after it began, and the
  // launch gets back the 30 µs of staging after that (its 38 µs past its typical 2 µs being more).
  CHECK(givenBackAfter("cudaLaunchKernel_v7000", 0, true) == TraceBuilder::ns(30));
  // A call that maps host pages does that work under the lock once it has it: a staging that began
  // during it did not hold it (only one already in progress when it began would have).
  CHECK(givenBackAfter("cudaFreeHost_v3020", 0, true) == 0);
}

// Thread 1 stages a pageable copy to the host on stream 13 (op 100-400 µs, its call returning at
// 500: staging until then); thread 2's pageable copy on stream 14 (`copy_call`, called at 50 µs
// with nothing before it on its stream, its copy 520-600, returning at `returned`), then a kernel
// there. What heldBySplitCopies gives back for pinning thread 1's copy.
struct HeldCopy {
  std::vector<Ns> earlier;
  std::vector<diagnosis::CallChange> changed;
  std::size_t call = 0;  // thread 2's copy call
  std::optional<Ns> own;  // its own time, where it is a blocking call of the host timeline
};

HeldCopy heldCopy(const std::string& copy_call, double returned) {
  TraceBuilder b;
  b.copyCall("cudaMemcpyAsync_v3020", 13, 0, 500, 100, 400, CopyKind::kDtoH, MemKind::kPageable);
  b.copyCall(copy_call, 14, 50, returned, 520, 600, CopyKind::kHtoD, MemKind::kPageable);
  b.trace().runtime_calls.back().tid = 2;
  otherThreadKernel(b, 14, returned + 1, returned + 10, returned + 50);
  const Trace trace = b.build();
  const DeviceView view(trace, Scope{}, 0);
  const std::unordered_set<std::size_t> pinned{*view.launchCall(view.op(view.ops()[0]))};
  const diagnosis::HostTimeline host = diagnosis::buildHostTimeline(view);
  HeldCopy out;
  diagnosis::heldBySplitCopies(view, host, pinned, out.changed, out.earlier);
  out.call = *view.launchCall(view.op(view.ops()[1]));
  for (const diagnosis::HostBarrier& barrier : host.barriers) {
    if (barrier.call == out.call) out.own = barrier.own;
  }
  return out;
}

TEST_CASE("single-stream: another thread's copy held by the split stream's staging starts sooner") {
  // Thread 2's copy started only at 520 µs, after the staging: in the split (thread 1's copy
  // pinned, no staging) it is released the 400 µs the staging covered (100-500) sooner. Its
  // asynchronous kernel on stream 14, whose call returned before it began, gets nothing.
  const HeldCopy held = heldCopy("cudaMemcpyAsync_v3020", 700);
  REQUIRE(held.earlier.size() == 3);
  CHECK(held.earlier[0] == 0);  // the staged copy itself
  CHECK(held.earlier[1] == TraceBuilder::ns(400));
  CHECK(held.earlier[2] == 0);
}

TEST_CASE("single-stream: another thread's blocking copy held by the split stream's staging returns sooner") {
  // As above, but thread 2's pageable upload returned once staged, before its copy ended (return at
  // 590 µs): its call waited for nothing on its stream, so all of it is its own time, the 400 µs the
  // staging held included. In the split its copy starts 400 µs sooner and its call returns as much
  // sooner (keeping at least its copy's part, 70 µs), so the thread's next launch moves too.
  // Before, only the copy moved (the lab's g003107: a split that freed another thread's cudaMemcpy
  // calls was priced at 0 for 976 µs saved; now 274).
  const HeldCopy held = heldCopy("cudaMemcpy_v3020", 590);
  REQUIRE(held.earlier.size() == 3);
  CHECK(held.earlier[1] == TraceBuilder::ns(400));
  REQUIRE(held.own == TraceBuilder::ns(540));
  const auto change = std::find_if(held.changed.begin(), held.changed.end(),
                                   [&](const diagnosis::CallChange& c) { return c.call == held.call; });
  REQUIRE(change != held.changed.end());
  CHECK(change->waits);
  CHECK(change->own == TraceBuilder::ns(140));
}

TEST_CASE("single-stream: another thread's launches its legacy calls held get their time back in the split") {
  // Thread 1 copies on the legacy stream (calls of 30 µs); thread 2's launches to stream 14 take
  // 2 µs alone and 30 µs where they overlapped one of those calls (the driver held the context
  // while the legacy call ordered its copy after every blocking stream). Split off the legacy
  // stream (created streams), thread 1's calls no longer hold them: each gets its 28 µs back. One
  // that also overlapped thread 3's call on the legacy stream, which stays there, keeps its wait;
  // unless that call was a synchronous copy still in flight when the launch returned (the launch
  // got through while thread 3's cudaMemcpy waited: thread 1's call, which returned just before
  // it, held it).
  enum class Third { kNone, kReturnedBefore, kStillInFlight };
  for (const Third third : {Third::kNone, Third::kReturnedBefore, Third::kStillInFlight}) {
    const bool third_thread = third == Third::kReturnedBefore;
    TraceBuilder b;
    for (int k = 0; k < 3; ++k) {
      const double t = 100.0 * k;
      b.copyCall("cudaMemcpyAsync_v3020", kNullStream, t, t + 30, t + 31, t + 40, CopyKind::kHtoD);
      b.launch(14, t + 5, t + 35, t + 36, t + 45);  // held by thread 1's legacy call
      b.trace().runtime_calls.back().tid = 2;
      b.launch(14, t + 60, t + 62, t + 63, t + 70);  // alone
      b.trace().runtime_calls.back().tid = 2;
    }
    if (third == Third::kReturnedBefore) {  // beside thread 2's first held launch
      b.copyCall("cudaMemcpyAsync_v3020", kNullStream, 6, 34, 41, 44, CopyKind::kHtoD);
      b.trace().runtime_calls.back().tid = 3;
    } else if (third == Third::kStillInFlight) {  // a cudaMemcpy begun inside it, returned after it
      b.copyCall("cudaMemcpy_v3020", kNullStream, 6, 50, 44, 48, CopyKind::kHtoD);
      b.trace().runtime_calls.back().tid = 3;
    }
    const Trace trace = b.build();
    const DeviceView view(trace, Scope{}, 0);
    // Thread 1's legacy work is the loop split (threadsOwnWork's cut, here by hand: these threads
    // never synchronize), thread 3's stays.
    std::vector<std::uint64_t> keys = ownWork(view);
    std::uint64_t loop = 0;
    for (std::size_t p = 0; p < view.ops().size(); ++p) {
      const auto call = view.launchCall(view.op(view.ops()[p]));
      if (!view.onLegacyDefaultStream(view.op(view.ops()[p])) || !call) continue;
      if (view.call(*call).tid == 1) loop = keys[p];
      else keys[p] = ~keys[p];
    }
    const diagnosis::HostTimeline host = diagnosis::buildHostTimeline(view);
    std::vector<diagnosis::CallChange> changed;
    std::vector<Ns> earlier;
    diagnosis::heldBySplitLegacyCalls(view, host, keys, loop, changed, earlier);
    REQUIRE(earlier.size() == view.ops().size());
    Ns last_kernel_earlier = 0;
    for (std::size_t p = 0; p < view.ops().size(); ++p) {
      if (view.op(view.ops()[p]).kind == OpKind::kKernel) last_kernel_earlier = earlier[p];
    }
    const Ns held = TraceBuilder::ns(28);
    CHECK(last_kernel_earlier >= (third_thread ? 2 : 3) * held - 1);
    CHECK(last_kernel_earlier <= (third_thread ? 2 : 3) * held + 1);
    // Thread 1's own calls get nothing: they still wait behind calls that stay there.
    for (std::size_t p = 0; p < view.ops().size(); ++p) {
      if (view.op(view.ops()[p]).kind == OpKind::kMemcpy && keys[p] == loop) CHECK(earlier[p] == 0);
    }
  }
}

TEST_CASE("single-stream: the split thread's own legacy calls beside other threads' launches get their excess back") {
  // Thread 1's loop: six cudaMemcpyAsync calls to the legacy stream, 3 µs alone; the three beside
  // thread 2's launches to its blocking stream 14 took 25 µs (the legacy call takes the context's
  // lock, the launch waits for it or it for the launch). On the split's created lanes they take
  // their stream's lock only: each gets its 22 µs back, so thread 1's last op, a kernel, is released
  // 66 µs sooner. Thread 3's legacy-stream calls stay: one beside neither keeps one of them waiting
  // (a turn each); one overlapping one of them holds that call, which keeps its wait too; one that
  // two of thread 1's calls began and ended inside (starved: it waited itself) holds none of them.
  enum class Third { kNone, kApart, kHolding, kStarved };
  for (const Third third : {Third::kNone, Third::kApart, Third::kHolding, Third::kStarved}) {
    TraceBuilder b;
    for (int k = 0; k < 6; ++k) {
      const double t = 100.0 * k;
      const bool beside = k % 2 == 1;
      b.copyCall("cudaMemcpyAsync_v3020", kNullStream, t, t + (beside ? 25 : 3), t + 30, t + 40, CopyKind::kHtoD);
      if (beside) {
        b.launch(14, t + 2, t + 4, t + 5, t + 20);
        b.trace().runtime_calls.back().tid = 2;
      }
    }
    b.launch(kNullStream, 600, 602, 610, 650);
    if (third == Third::kApart) {
      b.copyCall("cudaMemcpyAsync_v3020", kNullStream, 50, 53, 60, 62, CopyKind::kHtoD);
      b.trace().runtime_calls.back().tid = 3;
    } else if (third == Third::kHolding) {
      b.copyCall("cudaMemcpyAsync_v3020", kNullStream, 110, 115, 120, 122, CopyKind::kHtoD);
      b.trace().runtime_calls.back().tid = 3;
    } else if (third == Third::kStarved) {  // 390-560 µs: thread 1's calls at 400 and 500 inside it
      b.copyCall("cudaMemcpyAsync_v3020", kNullStream, 390, 560, 570, 572, CopyKind::kHtoD);
      b.trace().runtime_calls.back().tid = 3;
    }
    const Trace trace = b.build();
    const DeviceView view(trace, Scope{}, 0);
    std::size_t last = 0;
    const std::vector<Ns> earlier = earlierInSplitOfThread1(view, last);
    REQUIRE(earlier.size() == view.ops().size());
    const Ns back = third == Third::kNone ? 66 : third == Third::kHolding ? 22 : 44;
    CHECK(earlier[last] >= TraceBuilder::ns(back) - 1);
    CHECK(earlier[last] <= TraceBuilder::ns(back) + 1);
  }
}

TEST_CASE("single-stream: the split thread's call another thread's staging held waits for the staging alone") {
  // Thread 1's loop: six pinned cudaMemcpyAsync calls to the legacy stream, 3 µs alone; the one at
  // 300 µs took 100 µs beside thread 2's pageable copy on the legacy stream (thread 2 also launches
  // to its stream 14: a partner off the legacy stream). A staged DtoH copy waits for its stream's
  // earlier work, then stages from its op's start to its call's return (340-390 µs): thread 1's
  // call, on a created lane in the split, got through before that staging began and gets 97 µs
  // back. A staged HtoD copy stages from its call's start to its op's end (290-390 µs): the call
  // waits for it and gets 7 µs back. A pinned copy of thread 2 (no staging) is a staying legacy
  // call that held it: nothing back.
  enum class Second { kStagedDtoH, kStagedHtoD, kPinned };
  for (const Second second : {Second::kStagedDtoH, Second::kStagedHtoD, Second::kPinned}) {
    TraceBuilder b;
    for (int k = 0; k < 6; ++k) {
      const double t = 100.0 * k;
      b.copyCall("cudaMemcpyAsync_v3020", kNullStream, t, t + (k == 3 ? 100 : 3), t + 30, t + 40, CopyKind::kHtoD);
    }
    b.launch(kNullStream, 600, 602, 610, 650);
    if (second == Second::kStagedDtoH) {
      b.copyCall("cudaMemcpyAsync_v3020", kNullStream, 280, 390, 340, 350, CopyKind::kDtoH, MemKind::kPageable);
    } else if (second == Second::kStagedHtoD) {
      b.copyCall("cudaMemcpyAsync_v3020", kNullStream, 290, 395, 380, 390, CopyKind::kHtoD, MemKind::kPageable);
    } else {
      b.copyCall("cudaMemcpyAsync_v3020", kNullStream, 290, 395, 380, 390, CopyKind::kHtoD);
    }
    b.trace().runtime_calls.back().tid = 2;
    b.launch(14, 550, 552, 553, 560);
    b.trace().runtime_calls.back().tid = 2;
    const Trace trace = b.build();
    const DeviceView view(trace, Scope{}, 0);
    std::size_t last = 0;
    const std::vector<Ns> earlier = earlierInSplitOfThread1(view, last);
    const Ns back = second == Second::kStagedDtoH ? 97 : second == Second::kStagedHtoD ? 7 : 0;
    if (back == 0) {
      CHECK((earlier.empty() || earlier[last] == 0));
      continue;
    }
    REQUIRE(earlier.size() == view.ops().size());
    CHECK(earlier[last] >= TraceBuilder::ns(back) - 1);
    CHECK(earlier[last] <= TraceBuilder::ns(back) + 1);
  }
}

TEST_CASE("single-stream: a loop whose copies ran on the legacy stream took turns by its barrier") {
  // Thread 1's loop: four steps of a synchronous copy in (legacy stream), a kernel on `loop_stream`
  // and a synchronous copy out, 100 µs a step; thread 2's kernel of 60 µs on `other` between each
  // two steps. Beside a blocking stream's work the turns are the legacy barrier's (each legacy copy
  // waited for the other stream's kernel): tookTurnsByLegacyBarrier. Beside a non-blocking stream
  // (no barrier) or other legacy-stream work (one queue), or with the loop's copies on its own
  // stream, they are not.
  struct Case {
    std::uint32_t other;        // thread 2's stream
    bool copies_on_legacy;      // thread 1's copies on the legacy stream, else on its stream
    bool expected;
  };
  for (const Case c : {Case{14, true, true}, Case{16, true, false}, Case{kNullStream, true, false},
                       Case{14, false, false}}) {
    TraceBuilder b;
    b.addStream(16, StreamFlag::kNonBlocking);
    const std::uint32_t loop_stream = 13;
    const std::uint32_t copy_stream = c.copies_on_legacy ? kNullStream : loop_stream;
    for (int step = 0; step < 4; ++step) {
      const double t = 160.0 * step;
      b.copyCall("cudaMemcpy_v3020", copy_stream, t, t + 12, t + 2, t + 10, CopyKind::kHtoD);
      b.launch(loop_stream, t + 13, t + 15, t + 16, t + 90);
      b.copyCall("cudaMemcpy_v3020", copy_stream, t + 16, t + 100, t + 91, t + 99, CopyKind::kDtoH);
      otherThreadKernel(b, c.other, t + 95, t + 100, t + 160);
    }
    const Trace trace = b.build();
    const DeviceView view(trace, Scope{}, 0);
    // Thread 1's ops are the loop (workStreams' key for its synchronous copies: its kernels'
    // stream), thread 2's keep their stream's key.
    std::vector<std::uint64_t> keys;
    std::uint64_t loop = 0;
    Ns first = 0, last = 0;
    for (std::size_t p = 0; p < view.ops().size(); ++p) {
      const GpuOp& op = view.op(view.ops()[p]);
      const bool thread1 = view.call(*view.launchCall(op)).tid == 1;
      if (thread1 && op.kind == OpKind::kKernel) loop = DeviceView::streamKey(op);
      keys.push_back(DeviceView::streamKey(op));
    }
    for (std::size_t p = 0; p < view.ops().size(); ++p) {
      const GpuOp& op = view.op(view.ops()[p]);
      if (view.call(*view.launchCall(op)).tid != 1) continue;
      keys[p] = loop;
      if (first == 0) first = view.ops()[p].start;
      last = std::max(last, view.ops()[p].end);
    }
    CHECK(diagnosis::tookTurnsByLegacyBarrier(view, keys, loop, {first, last}) == c.expected);
  }
}

TEST_CASE("single-stream: a per-thread default stream's loop beside legacy work took turns by its barrier") {
  // Thread 1's loop on stream 13: four steps of an asynchronous copy in, a kernel and a copy out
  // on its own stream, 100 µs a step; thread 2's kernel of 60 µs between each two steps on
  // `other`. Where the trace marks stream 13 per-thread (cudaStreamPerThread: blocking towards
  // the legacy stream, flag 1 as a created blocking stream), the loop beside legacy-stream work
  // took turns by the barrier, and the split's lanes are non-blocking (not blocking work). A
  // stream of unknown or created origin, or beside another blocking stream's work, is not.
  struct Case {
    std::uint32_t other;  // thread 2's stream
    StreamOrigin origin;  // stream 13's
    bool turns;
  };
  for (const Case c : {Case{kNullStream, StreamOrigin::kPerThread, true}, Case{14, StreamOrigin::kPerThread, false},
                       Case{kNullStream, StreamOrigin::kUnknown, false},
                       Case{kNullStream, StreamOrigin::kCreated, false}}) {
    TraceBuilder b;
    const std::uint32_t loop_stream = 13;
    for (int step = 0; step < 4; ++step) {
      const double t = 160.0 * step;
      b.copyCall("cudaMemcpyAsync_v3020", loop_stream, t, t + 5, t + 2, t + 10, CopyKind::kHtoD);
      b.launch(loop_stream, t + 6, t + 8, t + 16, t + 90);
      b.copyCall("cudaMemcpyAsync_v3020", loop_stream, t + 9, t + 14, t + 91, t + 99, CopyKind::kDtoH);
      otherThreadKernel(b, c.other, t + 95, t + 100, t + 160);
    }
    Trace trace = b.build();
    for (Stream& s : trace.streams) {
      if (s.stream_id == loop_stream) s.origin = c.origin;
    }
    const DeviceView view(trace, Scope{}, 0);
    const StreamLoop l = keyedByStream(view, loop_stream);
    CHECK(diagnosis::perThreadTookTurnsByLegacyBarrier(view, l.keys, l.loop, l.extent) == c.turns);
    CHECK(diagnosis::blockingWork(view, l.keys, l.loop) == (c.origin != StreamOrigin::kPerThread));
    // Thread 2's work (legacy or created stream) is no per-thread loop.
    CHECK_FALSE(diagnosis::perThreadTookTurnsByLegacyBarrier(
        view, l.keys, DeviceView::streamKey(view.op(view.ops()[3])), l.extent));
  }
}

TEST_CASE("single-stream: a per-thread default stream's loop held by legacy ops beside other blocking work took turns") {
  // Thread 1's loop on stream 13 (per-thread): four steps of an asynchronous copy in and a kernel,
  // 17 µs of ops a step. Thread 2's 150 µs kernel on created blocking stream 14 each step (most of
  // the work beside the loop), thread 3's 20 µs legacy kernel after it (the barrier: it waited for
  // stream 14's kernel). Where thread 1 issued its step before the legacy kernel ended, its copy
  // waited for it (ready at its call, started 2 µs after the legacy kernel ended): 170 µs waited a
  // step against 17 run, turns the barrier made. Issued after the legacy kernel ended, it waited
  // for nothing, and beside mostly stream 14's work it took no turns.
  for (const bool issued_early : {true, false}) {
    TraceBuilder b;
    const std::uint32_t loop_stream = 13;
    for (int step = 0; step < 4; ++step) {
      const double t = 200.0 * step;
      otherThreadKernel(b, 14, t, t + 1, t + 150);
      b.launch(kNullStream, t + 1, t + 2, t + 151, t + 170);
      b.trace().runtime_calls.back().tid = 3;
      const double call = issued_early ? t + 2 : t + 171;
      b.copyCall("cudaMemcpyAsync_v3020", loop_stream, call, call + 3, t + 172, t + 180, CopyKind::kHtoD);
      b.launch(loop_stream, call + 4, call + 6, t + 181, t + 190);
    }
    Trace trace = b.build();
    for (Stream& s : trace.streams) {
      if (s.stream_id == loop_stream) s.origin = StreamOrigin::kPerThread;
    }
    const DeviceView view(trace, Scope{}, 0);
    const StreamLoop l = keyedByStream(view, loop_stream);
    CHECK(diagnosis::perThreadTookTurnsByLegacyBarrier(view, l.keys, l.loop, l.extent) == issued_early);
  }
}

TEST_CASE("single-stream: the split's freed host time is given back once, a call at most its larger amount") {
  // Thread 2 launches two kernels to stream 14 (calls 0-30 and 40-70 µs), then synchronizes the
  // device (80-300). The split freed the first call by two holds (its staging: 10 µs; its legacy
  // call: 28 µs, the same wait) and the second by one (20 µs). The synchronize begins 28 + 20 µs
  // sooner: the larger amount of the call named twice, and the other hold's call too (given back
  // one hold after the other, the second hold's amounts replaced the first's: freeing more gave
  // back less).
  TraceBuilder b;
  b.launch(14, 0, 30, 31, 100);
  b.trace().runtime_calls.back().tid = 2;
  b.launch(14, 40, 70, 101, 250);
  b.trace().runtime_calls.back().tid = 2;
  b.call("cudaDeviceSynchronize_v3020", 80, 300);
  b.trace().runtime_calls.back().tid = 2;
  b.launch(14, 301, 303, 310, 350);
  b.trace().runtime_calls.back().tid = 2;
  const Trace trace = b.build();
  const DeviceView view(trace, Scope{}, 0);
  const diagnosis::HostTimeline host = diagnosis::buildHostTimeline(view);
  std::size_t first = 0, second = 0, sync = 0;
  bool found_sync = false;
  for (std::size_t call : view.calls()) {
    const RuntimeCall& c = view.call(call);
    if (c.start == TraceBuilder::ns(0)) first = call;
    if (c.start == TraceBuilder::ns(40)) second = call;
  }
  for (const diagnosis::HostBarrier& barrier : host.barriers) {
    if (view.call(barrier.call).start == TraceBuilder::ns(80)) {
      sync = barrier.call;
      found_sync = true;
    }
  }
  REQUIRE(found_sync);
  const std::vector<diagnosis::HostTimeGiven> given{{first, TraceBuilder::ns(10), true},
                                                    {second, TraceBuilder::ns(20), true},
                                                    {first, TraceBuilder::ns(28), true}};
  std::vector<diagnosis::CallChange> changed;
  std::vector<Ns> earlier;
  diagnosis::giveBackOnce(view, host, given, changed, earlier);
  const auto change = std::find_if(changed.begin(), changed.end(),
                                   [&](const diagnosis::CallChange& c) { return c.call == sync; });
  REQUIRE(change != changed.end());
  CHECK(change->earlier == TraceBuilder::ns(28 + 20));
  REQUIRE(earlier.size() == view.ops().size());
  CHECK(earlier[1] == TraceBuilder::ns(28 + 20));  // the second launch: both calls' time, its own
  CHECK(earlier[2] == 0);                          // after the synchronize: follows it
}

// The legacy barrier's edges of a trace with one legacy op and one op off it, recorded and with
// the other op moved to a created blocking lane (the split's): ordered by calls (`by_call`) and
// keeping the recorded order where the call is unchanged (`kept`: moved_kernels_in_order).
struct MovedOffLegacy {
  std::size_t moved = 0, legacy = 0;
  std::vector<OrderEdge> recorded, by_call, kept;
  bool has(const std::vector<OrderEdge>& edges, std::size_t from, std::size_t to) const {
    return std::any_of(edges.begin(), edges.end(), [&](const OrderEdge& e) { return e.from == from && e.to == to; });
  }
};

MovedOffLegacy moveOffLegacy(const Trace& trace) {
  const DeviceView view(trace, Scope{}, 0);
  MovedOffLegacy m;
  for (std::size_t p = 0; p < view.ops().size(); ++p) {
    (view.onLegacyDefaultStream(view.op(view.ops()[p])) ? m.legacy : m.moved) = p;
  }
  const std::uint64_t lane = ~std::uint64_t{0};
  std::vector<std::uint64_t> lanes;
  for (const diagnosis::ScopedOp& scoped : view.ops()) lanes.push_back(DeviceView::streamKey(view.op(scoped)));
  lanes[m.moved] = lane;
  m.recorded = diagnosis::legacyBarrierEdges(view);
  m.by_call = diagnosis::legacyBarrierEdges(view, lanes, {lane});
  m.kept = diagnosis::legacyBarrierEdges(view, lanes, {lane}, true);
  return m;
}

TEST_CASE("single-stream: a kernel the split moves keeps the barrier's recorded order") {
  // Thread 1's kernel on blocking stream 13: its call (10-15 µs) returned before thread 2's
  // legacy kernel's (12-18), but it ran after that kernel (110-200 against 20-100): the driver
  // submitted it after (the barrier would have run it first). Moved to a created blocking lane
  // (the split's), it keeps that order: its launch call is as it was.
  TraceBuilder b;
  b.launch(13, 10, 15, 110, 200);
  otherThreadKernel(b, kNullStream, 12, 20, 100);
  b.trace().runtime_calls.back().end = TraceBuilder::ns(18);
  const MovedOffLegacy m = moveOffLegacy(b.build());
  CHECK(m.has(m.recorded, m.legacy, m.moved));
  CHECK(m.has(m.by_call, m.moved, m.legacy));
  CHECK(m.has(m.kept, m.legacy, m.moved));
  CHECK_FALSE(m.has(m.kept, m.moved, m.legacy));
}

// Thread 1's loop of three steps on stream 13: a pinned upload, a one-block kernel of 100 µs, a
// download and a stream synchronize; 400 µs of host work, then a tail kernel of 100 µs, launched
// right before the next step's upload. Thread 2's kernels on stream 14 run beside most of each
// step's kernel and fill the host's 400 µs (on stream 15 where `pipeline`: thread 1's own).
TraceBuilder loopAmongOtherThreads(bool pipeline) {
  TraceBuilder b;
  double t = 0;
  for (int step = 0; step < 3; ++step) {
    b.copyCall("cudaMemcpyAsync_v3020", 13, t, t + 2, t + 2, t + 12, CopyKind::kHtoD);
    b.launch(13, t + 3, t + 5, t + 13, t + 113).grid_blocks = 1;
    b.copyCall("cudaMemcpyAsync_v3020", 13, t + 6, t + 8, t + 114, t + 119, CopyKind::kDtoH);
    b.streamSynchronize(13, t + 9, t + 120);
    b.launch(pipeline ? 15 : 14, t + 10, t + 12, t + 13, t + 90).grid_blocks = 4;
    b.trace().runtime_calls.back().tid = pipeline ? 1 : 2;
    b.launch(pipeline ? 15 : 14, t + 121, t + 123, t + 123, t + 520).grid_blocks = 4;
    b.trace().runtime_calls.back().tid = pipeline ? 1 : 2;
    b.launch(13, t + 520, t + 522, t + 523, t + 623).grid_blocks = 1;
    t += 523;
  }
  b.streamSynchronize(13, t, t + 101);
  return b;
}

TEST_CASE("single-stream: a thread's loop among other threads' work is split, a pipeline's stream is not") {
  // Stream 13 ran alone under half its busy time and held under half the device's busy time over
  // its extent: no loop of its own by either test. Where the work beside and between its steps is
  // another thread's, it is one all the same: its split runs each step's tail kernel beside the
  // next step's head (threadsLoopAmongOthers; lab g000237, 0 claimed where its split saved
  // 434-551 µs). Where thread 1 issued that work itself on stream 15, stream 13 is a pipeline's
  // stream, and nothing is named for it.
  const auto among = findingsOf(loopAmongOtherThreads(false).build());
  const auto pipeline = findingsOf(loopAmongOtherThreads(true).build());
  const Finding* f = findingById(among, "single-stream");
  REQUIRE(f != nullptr);
  CHECK(f->fix_stream == 13u);
  INFO("saving " << fixSavingNs(*f));
  CHECK(fixSavingNs(*f) > 50'000);
  CHECK(fixSavingNs(*f) < 250'000);
  const Finding* p = findingById(pipeline, "single-stream");
  CHECK((p == nullptr || p->fix_stream != 13u));
}

TEST_CASE("single-stream: a pinned asynchronous copy the split moves keeps the barrier's recorded order, a pageable one its call's") {
  // Thread 1's cudaMemcpyAsync on blocking stream 13 began (10-15 µs) before thread 2's legacy
  // kernel's call (12-18) but ran after that kernel (110-120 against 20-100): the driver submitted
  // it after (a legacy op waits for every blocking stream's op submitted before it). From pinned
  // memory the split issues the same call on its lane, and the copy keeps that order, as a kernel
  // does (lab h200 g000110@s2: worker1's 256 pinned copies a step, split, ran before worker0's
  // synchronous legacy memset that 25 of them had followed: 630 µs credited for a split measured
  // 184 µs slower). From pageable memory the split pins it and makes its call asynchronous: the
  // call's order.
  for (const MemKind host : {MemKind::kPinned, MemKind::kPageable}) {
    TraceBuilder b;
    b.copyCall("cudaMemcpyAsync_v3020", 13, 10, 15, 110, 120, CopyKind::kHtoD, host);
    otherThreadKernel(b, kNullStream, 12, 20, 100);
    b.trace().runtime_calls.back().end = TraceBuilder::ns(18);
    const MovedOffLegacy m = moveOffLegacy(b.build());
    INFO((host == MemKind::kPinned ? "pinned" : "pageable"));
    CHECK(m.has(m.kept, m.legacy, m.moved) == (host == MemKind::kPinned));
    CHECK(m.has(m.kept, m.moved, m.legacy) == (host == MemKind::kPageable));
  }
}

TEST_CASE("single-stream: the split's saving without other threads' freed host time is its own loop's") {
  // Thread 1's loop on stream 13: three chunks of a staged pageable copy (calls of 40 µs) and a
  // kernel. Thread 2's launches to stream 14 take 2 µs alone and 30 µs where they began during a
  // staged call; its last kernel (320-420 µs) ends the span. Split, the copies are pinned and
  // asynchronous: thread 2's held launches get back their 28 µs each and its last kernel runs
  // sooner. Without the other threads' freed time (`others_freed` false: what the barrier test of
  // a loop that took turns by the legacy barrier weighs) only the loop itself moves, and the
  // span, thread 2's, stays.
  TraceBuilder b;
  for (int k = 0; k < 3; ++k) {
    const double t = 100.0 * k;
    b.copyCall("cudaMemcpyAsync_v3020", 13, t, t + 40, t + 30, t + 45, CopyKind::kHtoD, MemKind::kPageable);
    b.launch(13, t + 41, t + 43, t + 71, t + 80);
    b.launch(14, t + 10, t + 40, t + 41, t + 50);  // held by the staged call
    b.trace().runtime_calls.back().tid = 2;
    b.launch(14, t + 60, t + 62, t + 63, t + 70);  // alone
    b.trace().runtime_calls.back().tid = 2;
  }
  b.launch(14, 317, 319, 320, 420);
  b.trace().runtime_calls.back().tid = 2;
  const Trace trace = b.build();
  const DeviceView view(trace, Scope{}, 0);
  const std::vector<std::uint64_t> keys = ownWork(view);
  const std::uint64_t loop = DeviceView::streamKey(view.op(view.ops()[0]));
  const diagnosis::HostTimeline host = diagnosis::buildHostTimeline(view);
  const std::vector<OrderEdge> waits = diagnosis::waitEdges(diagnosis::streamWaits(view));
  const std::vector<OrderEdge> order = diagnosis::programOrderEdges(view);
  const diagnosis::ScheduleModel model(view, host, order);
  const std::vector<diagnosis::StagingHold> holds = diagnosis::stagingHolds(view, order);
  const Ns freed = diagnosis::splitSaving(view, keys, host, model, waits, order, holds, loop);
  const Ns own =
      diagnosis::splitSaving(view, keys, host, model, waits, order, holds, loop, true, false, false);
  CHECK(freed >= TraceBuilder::ns(50));
  CHECK(own < freed);
}

// Thread 1's loop of six steps, 60 µs each: a synchronous pinned cudaMemcpy to the device on the
// legacy stream (30 µs a call), a kernel on stream 13, a synchronous copy back (10 µs). Thread 2
// copies to stream 14 (non-blocking, as 13) four times a step and synchronizes the stream: its call
// that overlapped thread 1's first cudaMemcpy took 28 µs (held in the driver), its three others
// 2 µs; its copies (8 µs) run beside thread 1's ops, so stream 13's loop neither ran alone nor held
// its extent. After the loop thread 2 copies once more (100 µs), which ends the span. With
// `staying_legacy`, thread 3 copies on the legacy stream each step too. (The lab's c5 g003051:
// worker1's loop of synchronous 4 KiB pinned legacy cudaMemcpy calls and a kernel on a non-blocking
// stream; the other threads' cudaMemcpyAsync calls to their own streams that overlapped one took
// 26.8-29.0 µs against 2.3, each thread synchronizing its stream a step.)
Trace legacyCopiesBesideCopies(bool staying_legacy, double last_step_longer_us = 0) {
  TraceBuilder b;
  b.trace().streams[1].flag = StreamFlag::kNonBlocking;  // 13
  b.trace().streams[2].flag = StreamFlag::kNonBlocking;  // 14
  const auto other = [&](std::uint32_t tid, std::uint32_t stream, double call, double call_end, double op) {
    b.copyCall("cudaMemcpyAsync_v3020", stream, call, call_end, op, op + 8, CopyKind::kHtoD);
    b.trace().runtime_calls.back().tid = tid;
  };
  for (int step = 0; step < 6; ++step) {
    const double t = 60.0 * step;
    // The last step's kernel may run longer, its result coming back after thread 2's work ends:
    // then thread 1's loop ends the span, instead of thread 2's last copy.
    const double longer = step == 5 ? last_step_longer_us : 0;
    b.copyCall("cudaMemcpy_v3020", kNullStream, t, t + 30, t + 28, t + 29, CopyKind::kHtoD);
    b.launch(13, t + 31, t + 33, t + 35, t + 45 + longer);
    b.copyCall("cudaMemcpy_v3020", kNullStream, t + 46, t + 56 + longer, t + 54 + longer, t + 55 + longer,
               CopyKind::kDtoH);
    other(2, 14, t + 1, t + 29, t + 30);
    other(2, 14, t + 31, t + 33, t + 34);
    other(2, 14, t + 35, t + 37, t + 42);
    other(2, 14, t + 39, t + 41, t + 50);
    b.streamSynchronize(14, t + 42, t + 59);
    b.trace().runtime_calls.back().tid = 2;
    if (staying_legacy) other(3, kNullStream, t + 57, t + 59, t + 59.5);
  }
  if (last_step_longer_us == 0) {
    b.copyCall("cudaMemcpyAsync_v3020", 14, 361, 363, 364, 464, CopyKind::kHtoD);
    b.trace().runtime_calls.back().tid = 2;
  }
  return b.build();
}

// The split of stream 13's loop as the rule prices a stream beside others (kernels in order):
// with other threads' calls freed, and its own loop's part alone (none freed).
std::pair<Ns, Ns> pipelineSplit(const DeviceView& view) {
  const std::vector<std::uint64_t> keys = ownWork(view);
  std::uint64_t loop = 0;  // thread 1's work (its kernels', on stream 13)
  for (std::size_t p = 0; p < view.ops().size(); ++p) {
    const GpuOp& op = view.op(view.ops()[p]);
    if (op.kind == OpKind::kKernel && op.stream_id == 13) loop = keys[p];
  }
  const diagnosis::HostTimeline host = diagnosis::buildHostTimeline(view);
  const std::vector<OrderEdge> waits = diagnosis::waitEdges(diagnosis::streamWaits(view));
  const std::vector<OrderEdge> order = diagnosis::programOrderEdges(view);
  const diagnosis::ScheduleModel model(view, host, order);
  const std::vector<diagnosis::StagingHold> holds = diagnosis::stagingHolds(view, order);
  return {diagnosis::splitSaving(view, keys, host, model, waits, order, holds, loop, true, true, true),
          diagnosis::splitSaving(view, keys, host, model, waits, order, holds, loop, true, true, false)};
}

TEST_CASE("single-stream: a pipeline's stream is named for the calls its legacy copies held") {
  // Stream 13's loop neither ran alone (thread 2's copies beside it) nor held its extent: a
  // pipeline's stream, which the gate drops. But thread 1's cudaMemcpy calls held thread 2's six
  // copy calls (26 µs each beyond their 2 µs); split (the copies asynchronous on created streams)
  // they no longer do, and with no other work left on the legacy stream (othersLeftOffLegacy) the
  // split is named, priced with its kernels in order. Its own loop's part (the split with no other
  // thread's call freed) saves nothing here: thread 2's last copy ends the span. At most the
  // 6 x 26 µs freed; thread 2's synchronizes absorb a little of it.
  const Trace freed = legacyCopiesBesideCopies(false);
  const DeviceView view(freed, Scope{}, 0);
  const auto f = diagnosis::findSingleStream(view);
  REQUIRE(f.has_value());
  CHECK(f->fix_stream == 13u);
  INFO("saving " << fixSavingNs(*f));
  CHECK(fixSavingNs(*f) >= TraceBuilder::ns(100));
  CHECK(fixSavingNs(*f) <= TraceBuilder::ns(156));
  const auto [in_order, own] = pipelineSplit(view);
  CHECK(own < TraceBuilder::ns(10));
  CHECK(in_order == fixSavingNs(*f));
  // Another thread's copies that stay on the legacy stream would still take turns with the freed
  // calls: not named.
  const Trace staying = legacyCopiesBesideCopies(true);
  const auto g = diagnosis::findSingleStream(DeviceView(staying, Scope{}, 0));
  CHECK((!g.has_value() || g->fix_stream != 13u));
}

TEST_CASE("single-stream: a pipeline's stream that frees other threads' calls is priced at its whole split") {
  // The same loop, its last step's result back 8 µs later, after thread 2's work: thread 1's loop
  // ends the span, and its own calls made asynchronous save a part of the split too. The fix is
  // the whole split, so the claim is its saving with kernels in order, the freed calls' part and
  // the loop's own alike, not the freed calls' part alone (fresh2 g010179: 365 µs claimed for
  // 353 saved, where the freed part alone claimed 0).
  const Trace freed = legacyCopiesBesideCopies(false, 8);
  const DeviceView view(freed, Scope{}, 0);
  const auto f = diagnosis::findSingleStream(view);
  REQUIRE(f.has_value());
  CHECK(f->fix_stream == 13u);
  const auto [in_order, own] = pipelineSplit(view);
  INFO("in order " << in_order << " own " << own);
  REQUIRE(own > 0);
  CHECK(fixSavingNs(*f) == in_order);
}

}  // namespace
}  // namespace cuoverlap

namespace cuoverlap {
namespace {

// Stream 13's loop of three chunks (a 20 µs upload, a 50 µs kernel of 32 blocks, a 10 µs
// download), issued at once after a device synchronize, and before it an earlier loop of two
// chunks (an upload and a 64-block kernel) on stream `earlier_stream`.
Ns splitOfLaterLoop(std::uint32_t earlier_stream) {
  TraceBuilder b;
  for (int k = 0; k < 2; ++k) {
    const double t = 50.0 * k;
    b.copyCall("cudaMemcpyAsync_v3020", earlier_stream, t, t + 3, t + 5, t + 25, CopyKind::kHtoD);
    b.launch(earlier_stream, t + 4, t + 6, t + 26, t + 46);
  }
  b.deviceSynchronize(100, 101);
  double device = 115;
  for (int k = 0; k < 3; ++k) {
    const double t = 110.0 + 10.0 * k;
    b.copyCall("cudaMemcpyAsync_v3020", 13, t, t + 3, device, device + 20, CopyKind::kHtoD);
    b.launch(13, t + 4, t + 6, device + 21, device + 71).grid_blocks = 32;
    b.copyCall("cudaMemcpyAsync_v3020", 13, t + 7, t + 9, device + 72, device + 82, CopyKind::kDtoH);
    device += 83;
  }
  const Trace trace = b.build();
  const DeviceView view(trace, Scope{}, 0);
  const std::vector<std::uint64_t> keys = ownWork(view);
  std::uint64_t loop = 0;
  for (const auto& op : view.ops()) {
    if (view.op(op).stream_id == 13) loop = DeviceView::streamKey(view.op(op));
  }
  const diagnosis::HostTimeline host = diagnosis::buildHostTimeline(view);
  const std::vector<OrderEdge> waits = diagnosis::waitEdges(diagnosis::streamWaits(view));
  const std::vector<OrderEdge> order = diagnosis::programOrderEdges(view);
  const diagnosis::ScheduleModel model(view, host, order);
  return diagnosis::splitSaving(view, keys, host, model, waits, order, diagnosis::stagingHolds(view, order), loop);
}

}  // namespace

TEST_CASE("single-stream: a split of a stream's later loop pays for the fork after its earlier work") {
  // With the earlier loop on the same stream the fix records an event there and makes each of the
  // three lanes wait for it before the loop's first launch (the lab's multi-stream transform): a
  // thread's first record and wait, then two more waits (kFirstEventRecordCallNs 11.65 µs,
  // kFirstStreamWaitCallNs 5.26, kEventCallNs 2.45 each) on the host before a loop the device
  // waits for, where the same loop after another stream's work needs none.
  const Ns after_other_stream = splitOfLaterLoop(15);
  const Ns after_own_work = splitOfLaterLoop(13);
  REQUIRE(after_other_stream > TraceBuilder::ns(50));
  CHECK(after_other_stream - after_own_work == TraceBuilder::ns(11.65 + 5.26 + 2 * 2.45));
}

}  // namespace cuoverlap

namespace cuoverlap {
namespace {

TEST_CASE("single-stream: a loop that took turns by the legacy barrier is priced at its split") {
  // Thread 1's loop of four steps (a cudaMemcpy in, a 74 µs kernel on blocking stream 13, a
  // cudaMemcpy out) took turns with thread 2's 60 µs kernels on blocking stream 14 by the legacy
  // barrier: each copy waited for the other thread's kernel. The split (its copies asynchronous on
  // created streams, its kernels in order beside the other work) is named at what it saves, with no
  // test of how much of that leaving the barrier is (the lab's evidence for dropping that test: the
  // H200 corpus's g000354@s1, 0 claimed for 698 µs saved, 757 now; held-out c4 g001065@null, 0 for
  // 228, 213 now; the score floors hold both).
  TraceBuilder b;
  for (int step = 0; step < 4; ++step) {
    const double t = 160.0 * step;
    b.copyCall("cudaMemcpy_v3020", kNullStream, t, t + 12, t + 2, t + 10, CopyKind::kHtoD);
    b.launch(13, t + 13, t + 15, t + 16, t + 90);
    b.copyCall("cudaMemcpy_v3020", kNullStream, t + 16, t + 100, t + 91, t + 99, CopyKind::kDtoH);
    otherThreadKernel(b, 14, t + 95, t + 100, t + 160);
  }
  const Trace trace = b.build();
  const DeviceView view(trace, Scope{}, 0);
  const auto f = diagnosis::findSingleStream(view);
  REQUIRE(f.has_value());
  CHECK(f->fix_stream == 13u);
  const auto [in_order, own] = pipelineSplit(view);
  INFO("in order " << in_order << " own " << own);
  CHECK(in_order > TraceBuilder::ns(10));
  CHECK(fixSavingNs(*f) == in_order);
}

}  // namespace
}  // namespace cuoverlap
