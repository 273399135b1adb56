// blocking-sync-call's what-if on hand-built traces: a synchronize right before a synchronous copy
// on the legacy default stream, which orders that copy after blocking streams' work by itself, is
// removable, and its removal gives back the host work between the two (not the copy's wait); and
// the legacy stream's implicit barrier edges (diagnosis/legacy_barriers.h); and what a synchronize
// before such a copy orders when another host thread's work is in flight, and which synchronizes
// bring an asynchronous DtoH copy's result back (needed_syncs.h).
#include <catch2/catch.hpp>

#include "diagnosis/device_view.h"
#include "diagnosis/host_timeline.h"
#include "diagnosis/legacy_barriers.h"
#include "diagnosis/needed_syncs.h"
#include "findings_test_util.h"
#include "trace_builder.h"

namespace cuoverlap {
namespace {

using test::TraceBuilder;
using test::kUs;

constexpr std::uint32_t kNonBlocking = 16;

// Three iterations of: cudaMemcpy HtoD (legacy stream), a 100 µs kernel on `stream`, a
// synchronize of it, then 60 µs of host work before the next iteration's copy.
TraceBuilder copyKernelSync(std::uint32_t stream) {
  TraceBuilder b;
  b.addStream(kNonBlocking, StreamFlag::kNonBlocking);
  for (int i = 0; i < 3; ++i) {
    const double t = 190.0 * i;
    b.copyCall("cudaMemcpy_v3020", test::kNullStream, t + 1, t + 20, t + 10, t + 18, CopyKind::kHtoD);
    b.launch(stream, t + 21, t + 25, t + 30, t + 130);
    b.call("cudaStreamSynchronize_v3020", t + 26, t + 131);
  }
  return b;
}

// A 100 µs kernel on stream 13 and a synchronize of it; then `alloc` (5 µs, the device idle), a
// 50 µs upload to stream 14 and a second kernel on stream 13.
TraceBuilder allocAfterSync(const char* alloc) {
  TraceBuilder b;
  b.launch(13, 0, 2, 5, 105);
  b.streamSynchronize(13, 3, 106);
  b.call(alloc, 107, 112);
  b.copyCall("cudaMemcpyAsync_v3020", 14, 113, 116, 118, 168, CopyKind::kHtoD);
  b.launch(13, 170, 172, 175, 275);
  return b;
}

}  // namespace

TEST_CASE("host timeline: a pinned host or device allocation waits for no GPU work, a free does") {
  for (const char* alloc : {"cudaMallocHost_v3020", "cudaHostAlloc_v3020", "cudaMalloc_v3020",
                            "cudaFreeHost_v3020", "cudaFree_v3020"}) {
    INFO(alloc);
    const Trace trace = allocAfterSync(alloc).build();
    const diagnosis::DeviceView view(trace, Scope{}, 0);
    const diagnosis::HostTimeline host = diagnosis::buildHostTimeline(view);
    REQUIRE(host.barriers.size() == 2);
    const bool frees = std::string(alloc).rfind("cudaFree", 0) == 0;
    CHECK(host.barriers[1].waited_for.empty() == !frees);
  }
}

TEST_CASE("blocking-sync-call: without the synchronize, work after a pinned host allocation overlaps") {
  SECTION("cudaMallocHost pins pages and returns: the upload runs beside the first kernel") {
    const auto findings = test::findingsOf(allocAfterSync("cudaMallocHost_v3020").build());
    const Finding* f = test::findingById(findings, "blocking-sync-call");
    REQUIRE(f != nullptr);
    // The upload moves under the first kernel and the second kernel queues right behind it:
    // span 270 µs -> about 200.
    CHECK(fixSavingNs(*f) >= 60 * kUs);
    CHECK(fixSavingNs(*f) <= 75 * kUs);
  }
  SECTION("cudaMalloc returns without waiting for the kernel: the upload runs beside it too") {
    const auto findings = test::findingsOf(allocAfterSync("cudaMalloc_v3020").build());
    const Finding* f = test::findingById(findings, "blocking-sync-call");
    REQUIRE(f != nullptr);
    CHECK(fixSavingNs(*f) >= 60 * kUs);
    CHECK(fixSavingNs(*f) <= 75 * kUs);
  }
  SECTION("cudaFreeHost synchronizes the device: it waits for the kernel in the synchronize's place") {
    const auto findings = test::findingsOf(allocAfterSync("cudaFreeHost_v3020").build());
    const Finding* f = test::findingById(findings, "blocking-sync-call");
    CHECK((f == nullptr || fixSavingNs(*f) < 10 * kUs));
  }
}

TEST_CASE("blocking-sync-call: a synchronize before a legacy-stream copy gives back the host work") {
  SECTION("blocking stream: the copy would wait for its kernel anyway") {
    const auto findings = test::findingsOf(copyKernelSync(13).build());
    const Finding* f = test::findingById(findings, "blocking-sync-call");
    REQUIRE(f != nullptr);
    // Each of the first two synchronizes: its 60 µs of host work run while the kernel does; the
    // copy still starts after the kernel, at its recorded latency. Span 500 µs -> 380 µs.
    CHECK(fixSavingNs(*f) == Approx(static_cast<double>(120 * kUs)).margin(2 * kUs));
  }
  SECTION("non-blocking stream: the synchronize is what orders the copy after the kernel") {
    const auto findings = test::findingsOf(copyKernelSync(kNonBlocking).build());
    CHECK(test::findingById(findings, "blocking-sync-call") == nullptr);
  }
}

TEST_CASE("legacy barrier edges: legacy ops wait for earlier blocking-stream work and hold later") {
  TraceBuilder b;
  b.addStream(kNonBlocking, StreamFlag::kNonBlocking);
  b.launch(test::kNullStream, 1, 2, 10, 20);  // A
  b.launch(13, 3, 4, 21, 30);                 // B: after A
  b.launch(kNonBlocking, 5, 6, 11, 40);       // D: no barrier
  b.launch(test::kNullStream, 7, 8, 31, 50);  // C: after B
  b.launch(14, 9, 10, 51, 60);                // E: after C
  const Trace trace = b.build();
  const diagnosis::DeviceView view(trace, Scope{}, 0);
  std::vector<std::pair<std::size_t, std::size_t>> edges;
  for (const diagnosis::OrderEdge& e : diagnosis::legacyBarrierEdges(view)) {
    edges.emplace_back(view.ops()[e.from].start / kUs, view.ops()[e.to].start / kUs);
  }
  std::sort(edges.begin(), edges.end());
  // By op start: A 10, D 11, B 21, C 31, E 51; each legacy op precedes the next op of each
  // blocking stream (A -> B, A -> E, C -> E) and follows the last one launched before it (B -> C).
  const std::vector<std::pair<std::size_t, std::size_t>> expected = {{10, 21}, {10, 51}, {21, 31}, {31, 51}};
  CHECK(edges == expected);
}

}  // namespace cuoverlap

namespace cuoverlap {
namespace {

using test::TraceBuilder;
using test::kUs;

TEST_CASE("legacy barrier edges: the trace's barrier handoff is each edge's lag") {
  // A kernel on blocking stream 13 (10-20), a legacy kernel launched long before it could run
  // (26-30: 6 µs after A's end), then stream 14's kernel (34-40: 4 µs after B's end): the GPU's
  // front end releases an op the barrier held some microseconds after the op it waited for ends.
  TraceBuilder b;
  b.launch(13, 1, 2, 10, 20);                 // A
  b.launch(test::kNullStream, 3, 4, 26, 30);  // B: after A
  b.launch(14, 5, 6, 34, 40);                 // C: after B
  const Trace trace = b.build();
  const diagnosis::DeviceView view(trace, Scope{}, 0);
  const std::vector<diagnosis::OrderEdge> edges = diagnosis::legacyBarrierEdges(view);
  REQUIRE(edges.size() == 2);
  for (const diagnosis::OrderEdge& e : edges) {
    CHECK(e.lag >= 4 * kUs);
    CHECK(e.lag <= 6 * kUs);
  }
}

TEST_CASE("legacy barrier edges: ops are ordered by when their call submitted them") {
  // Thread 2's launch to blocking stream 13 began (5 µs) before thread 1's cudaMemcpy on the
  // legacy stream (10 µs) but waited in the driver until after it (returned at 130): it was
  // submitted after the copy, which ran first (12-112, the kernel 131-231). A blocking call
  // submits its op at its start; an asynchronous one when it returns. Ordered by call start, the
  // copy would have waited for the kernel that ran after it.
  TraceBuilder b;
  b.launch(13, 5, 130, 131, 231);
  b.trace().runtime_calls.back().tid = 2;
  b.copyCall("cudaMemcpy_v3020", test::kNullStream, 10, 120, 12, 112, CopyKind::kHtoD);
  const Trace trace = b.build();
  const diagnosis::DeviceView view(trace, Scope{}, 0);
  std::vector<std::pair<std::size_t, std::size_t>> edges;
  for (const diagnosis::OrderEdge& e : diagnosis::legacyBarrierEdges(view)) {
    edges.emplace_back(view.ops()[e.from].start / kUs, view.ops()[e.to].start / kUs);
  }
  const std::vector<std::pair<std::size_t, std::size_t>> expected = {{12, 131}};
  CHECK(edges == expected);
}

// Thread 1's cudaMemset on the legacy stream (call 10-130, held in the driver behind other
// threads' calls) returned before its op ran (231-232), after thread 2's 200 µs kernel on blocking
// stream 13, which thread 2 launched (20-25) while the memset's call was held; then thread 1
// launches a 100 µs kernel to blocking stream 14 (131-133, run 233-333).
TraceBuilder heldMemset() {
  TraceBuilder b;
  const std::uint32_t memset = b.call("cudaMemset_v3020", 10, 130);
  b.memset(test::kNullStream, 231, 232, memset);
  b.launch(13, 20, 25, 30, 230);
  b.trace().runtime_calls.back().tid = 2;
  b.launch(14, 131, 133, 233, 333);
  return b;
}

TEST_CASE("legacy barrier edges: a cudaMemset that returned before its op submitted it as it returned") {
  // Ordered by its call's start the memset would precede the kernel launched while it was held;
  // it entered the queue as it returned, after that kernel, which it waited for.
  const Trace trace = heldMemset().build();
  const diagnosis::DeviceView view(trace, Scope{}, 0);
  const std::vector<diagnosis::OrderEdge> barriers = diagnosis::legacyBarrierEdges(view);
  std::vector<std::pair<std::size_t, std::size_t>> edges;
  for (const diagnosis::OrderEdge& e : barriers) {
    edges.emplace_back(view.ops()[e.from].start / kUs, view.ops()[e.to].start / kUs);
  }
  const std::vector<std::pair<std::size_t, std::size_t>> expected = {{30, 231}, {231, 233}};
  CHECK(edges == expected);
  // The what-if issues the memset when its call returned, so that edge holds there too: the
  // schedule keeps thread 1's kernel behind the memset behind thread 2's kernel, as recorded.
  const diagnosis::ScheduleModel model(view, diagnosis::buildHostTimeline(view), barriers);
  CHECK(model.span(barriers) >= TraceBuilder::ns(300));
}

// What the host needs of each explicit synchronize of `b`'s trace, in call order.
std::vector<diagnosis::SyncNeed> explicitSyncNeeds(TraceBuilder& b) {
  const Trace trace = b.build();
  const diagnosis::DeviceView view(trace, Scope{}, 0);
  const diagnosis::HostTimeline host = diagnosis::buildHostTimeline(view);
  std::vector<diagnosis::SyncNeed> syncs;
  for (diagnosis::SyncNeed need : diagnosis::syncNeeds(view, host)) {
    if (need != diagnosis::SyncNeed::kNotASync) syncs.push_back(need);
  }
  return syncs;
}

// Two steps of: a device synchronize after a thread's kernel (blocking stream 13) and its
// asynchronous DtoH copy, then a cudaMemset on the legacy stream; a kernel on a non-blocking
// stream runs across the synchronize, issued by `other_tid`. The synchronize waits for it, but
// only when the same thread issued it does the memset rely on the synchronize to run after it.
std::vector<diagnosis::SyncNeed> readThenMemset(std::uint32_t other_tid, int steps = 2) {
  TraceBuilder b;
  b.addStream(kNonBlocking, StreamFlag::kNonBlocking);
  for (int i = 0; i < steps; ++i) {
    const double t = 400.0 * i;
    b.launch(13, t + 1, t + 5, t + 10, t + 110);
    b.launch(kNonBlocking, t + 2, t + 4, t + 20, t + 290);
    b.trace().runtime_calls.back().tid = other_tid;
    b.copyCall("cudaMemcpyAsync_v3020", 13, t + 6, t + 8, t + 111, t + 115, CopyKind::kDtoH,
               MemKind::kPinned);
    b.call("cudaDeviceSynchronize_v3020", t + 9, t + 291);
    b.memset(test::kNullStream, t + 305, t + 310, b.call("cudaMemset_v3020", t + 300, t + 311));
  }
  return explicitSyncNeeds(b);
}

TEST_CASE("needed syncs: another thread's work does not keep a synchronize before a legacy call") {
  using diagnosis::SyncNeed;
  CHECK(readThenMemset(2) == std::vector<SyncNeed>{SyncNeed::kDeferrable, SyncNeed::kDeferrable});
  CHECK(readThenMemset(1) == std::vector<SyncNeed>{SyncNeed::kKept, SyncNeed::kKept});
}

TEST_CASE("needed syncs: a result read once has no next step to wait in its place") {
  // The same step run once: the thread reads the result where it synchronizes (a pipeline's end),
  // so the synchronize is kept, not deferred (the lab's defer-read leaves it as it is).
  using diagnosis::SyncNeed;
  CHECK(readThenMemset(2, 1) == std::vector<SyncNeed>{SyncNeed::kKept});
}

// One thread: an asynchronous DtoH copy on non-blocking stream 16 (10-30 µs), a kernel on
// non-blocking stream 17 (12-200 µs), then a synchronize of `synced` (40-201 µs) and a kernel
// after it. With `wait`, stream 17 first waits on an event recorded on 16 after the copy.
diagnosis::SyncNeed streamSyncAfterDtoH(std::uint32_t synced, bool wait) {
  TraceBuilder b;
  b.addStream(16, StreamFlag::kNonBlocking);
  b.addStream(17, StreamFlag::kNonBlocking);
  b.copyCall("cudaMemcpyAsync_v3020", 16, 1, 3, 10, 30, CopyKind::kDtoH, MemKind::kPinned);
  if (wait) {
    b.eventRecord(16, 1, 4, 5);
    b.streamWaitEvent(17, 6, 7, 1);
  }
  b.launch(17, 8, 11, 31, 200);
  b.streamSynchronize(synced, 40, 201);
  b.launch(17, 210, 215, 220, 300);
  const std::vector<diagnosis::SyncNeed> syncs = explicitSyncNeeds(b);
  REQUIRE(syncs.size() == 1);
  return syncs.front();
}

TEST_CASE("needed syncs: only a synchronize that waited for a DtoH copy brings its result back") {
  // Synchronizing the copy's own stream waits for it: the host may be about to read it (run once,
  // there is no next step to defer the read to, so the synchronize is kept).
  CHECK(streamSyncAfterDtoH(16, false) == diagnosis::SyncNeed::kKept);
  // Another stream's synchronize leaves the copy in flight: the host cannot rely on it to read the
  // result, so the synchronize brings nothing back.
  CHECK(streamSyncAfterDtoH(17, false) == diagnosis::SyncNeed::kRemovable);
  // Unless that stream waited on an event recorded after the copy.
  CHECK(streamSyncAfterDtoH(17, true) == diagnosis::SyncNeed::kKept);
}

// Three steps of one thread on non-blocking stream 16: an HtoD copy and a 180 µs kernel, then
// either an asynchronous DtoH copy of the result and a synchronize of 16 (`copy_last`), or the
// synchronize first and the DtoH copy after it (the next step's synchronize then waits for this
// step's copy and for the next kernel, issued after the copy).
std::vector<diagnosis::SyncNeed> stepSyncs(bool copy_last) {
  TraceBuilder b;
  b.addStream(16, StreamFlag::kNonBlocking);
  for (int i = 0; i < 3; ++i) {
    const double t = 300.0 * i;
    b.copyCall("cudaMemcpyAsync_v3020", 16, t + 1, t + 3, t + 5, t + 15, CopyKind::kHtoD,
               MemKind::kPinned);
    b.launch(16, t + 4, t + 6, t + 17, t + 200);
    if (copy_last) {
      b.copyCall("cudaMemcpyAsync_v3020", 16, t + 7, t + 9, t + 202, t + 210, CopyKind::kDtoH,
                 MemKind::kPinned);
      b.streamSynchronize(16, t + 10, t + 211);
    } else {
      b.streamSynchronize(16, t + 7, t + 201);
      b.copyCall("cudaMemcpyAsync_v3020", 16, t + 202, t + 204, t + 206, t + 214, CopyKind::kDtoH,
                 MemKind::kPinned);
    }
  }
  return explicitSyncNeeds(b);
}

TEST_CASE("needed syncs: a synchronize that also waits for later work brings no result back") {
  using diagnosis::SyncNeed;
  // Each synchronize waits for the copy its thread issued just before it: the host may read it.
  CHECK(stepSyncs(true) ==
        std::vector<SyncNeed>{SyncNeed::kDeferrable, SyncNeed::kDeferrable, SyncNeed::kDeferrable});
  // The thread issued the next step's copy and kernel after the copy back and waits for them too:
  // the wait is for that work, not for the result.
  CHECK(stepSyncs(false) ==
        std::vector<SyncNeed>{SyncNeed::kRemovable, SyncNeed::kRemovable, SyncNeed::kRemovable});
}

// One thread: a kernel on non-blocking stream 16 (10-100 µs), a synchronize of 16 (5-101 µs),
// with `again` a second one (102-103 µs), then a synchronous call on the legacy stream (a
// cudaMemset, or with `dtoh` a cudaMemcpy DtoH) and a kernel on `consumer`.
std::vector<diagnosis::SyncNeed> syncBeforeSynchronousCall(bool again, bool dtoh,
                                                           std::uint32_t consumer) {
  TraceBuilder b;
  b.addStream(16, StreamFlag::kNonBlocking);
  b.addStream(17, StreamFlag::kNonBlocking);
  b.launch(16, 1, 4, 10, 100);
  b.streamSynchronize(16, 5, 101);
  if (again) b.streamSynchronize(16, 102, 103);
  if (dtoh) {
    b.copyCall("cudaMemcpy_v3020", test::kNullStream, 105, 112, 106, 110, CopyKind::kDtoH);
  } else {
    b.memset(test::kNullStream, 106, 110, b.call("cudaMemset_v3020", 105, 112));
  }
  b.launch(consumer, 113, 116, 118, 200);
  return explicitSyncNeeds(b);
}

TEST_CASE("needed syncs: a synchronize that waits for nothing new orders nothing") {
  using diagnosis::SyncNeed;
  // The second synchronize waits for the kernel the first already waited for: the memset is
  // ordered after it either way.
  CHECK(syncBeforeSynchronousCall(true, false, 16) ==
        std::vector<SyncNeed>{SyncNeed::kKept, SyncNeed::kRemovable});
}

TEST_CASE("needed syncs: a memset that prepares another stream's work needs no synchronize") {
  using diagnosis::SyncNeed;
  // The memset's consumer runs on the stream the synchronize waited for: it may overwrite what
  // that stream's kernel used, and the synchronize protects it.
  CHECK(syncBeforeSynchronousCall(false, false, 16) == std::vector<SyncNeed>{SyncNeed::kKept});
  // Its consumer runs on another stream: the memset prepares a buffer of its own.
  CHECK(syncBeforeSynchronousCall(false, false, 17) == std::vector<SyncNeed>{SyncNeed::kRemovable});
  // A DtoH copy reads what the kernel may have written, whoever uses it next.
  CHECK(syncBeforeSynchronousCall(false, true, 17) == std::vector<SyncNeed>{SyncNeed::kKept});
}


// Thread 1 runs three steps of: a 100 µs kernel on blocking stream 13, its asynchronous DtoH
// copy, a synchronize of 13, then a cudaMemset on the legacy stream. Thread 2 keeps blocking
// stream 14's HtoD engine busy (copies 10-400 and 406-800 µs): the legacy barrier holds the first
// two memsets until those copies end, and the calls block until then.
TraceBuilder memsetsBehindOtherThread() {
  TraceBuilder b;
  b.busyUploadsOnThread(2, 14, {1, 200}, {10, 400}, {406, 800});
  const double memset_end[3] = {405, 805, 930};
  for (int i = 0; i < 3; ++i) {
    const double t = i == 0 ? 0.0 : memset_end[i - 1] + 1;
    b.launch(13, t + 4, t + 6, t + 10, t + 110);
    b.copyCall("cudaMemcpyAsync_v3020", 13, t + 7, t + 9, t + 111, t + 115, CopyKind::kDtoH);
    b.streamSynchronize(13, t + 10, t + 116);
    b.memset(test::kNullStream, memset_end[i] - 4, memset_end[i],
             b.call("cudaMemset_v3020", t + 117, memset_end[i] + 1));
  }
  return b;
}

TEST_CASE("early-result-wait: a deferred synchronize's legacy-stream call still waits at the barrier") {
  using diagnosis::SyncNeed;
  TraceBuilder b = memsetsBehindOtherThread();
  // The legacy stream orders each memset after the copy the synchronize waited for: thread 1's
  // synchronizes are deferrable, not kept (thread 2's brings nothing back).
  CHECK(explicitSyncNeeds(b) == std::vector<SyncNeed>{SyncNeed::kDeferrable, SyncNeed::kDeferrable,
                                                       SyncNeed::kDeferrable, SyncNeed::kRemovable});
  // Deferred, thread 1 calls each memset sooner, but its op still waits for thread 2's copy and
  // the call returns when it ran: the next step starts as it did, and nothing is saved. (A
  // what-if without the barrier ran each memset right after its call and claimed each step.)
  const auto findings = test::findingsOf(b.build());
  const Finding* f = test::findingById(findings, "early-result-wait");
  CHECK((f == nullptr || fixSavingNs(*f) < 10 * kUs));
}

}  // namespace
}  // namespace cuoverlap

namespace cuoverlap {
namespace {

// A host-bound loop of four steps on blocking stream 13, 100 µs apart: a 20 µs kernel, its
// asynchronous DtoH copy, a synchronize that waits 27 µs for them, then the host's own work until
// the next step. The trace's one cudaEventRecord, in the first step's host work, takes `record_us`.
TraceBuilder hostBoundResultLoop(double record_us) {
  TraceBuilder b;
  for (int i = 0; i < 4; ++i) {
    const double t = 100.0 * i;
    b.launch(13, t + 1, t + 5, t + 10, t + 30);
    b.copyCall("cudaMemcpyAsync_v3020", 13, t + 6, t + 9, t + 31, t + 35, CopyKind::kDtoH);
    b.streamSynchronize(13, t + 10, t + 37);
    if (i == 0) b.call("cudaEventRecord_v3020", t + 40, t + 40 + record_us);
  }
  return b;
}

}  // namespace

TEST_CASE("early-result-wait: each deferred step records its event, at the trace's record time") {
  // Deferred, each step's synchronize waits for the previous step's copy, long done: the host
  // runs ahead by what it waited. The double-buffered step records an event after its copy, which
  // delays the host by a record call before each synchronize; the three before a later step delay
  // the last op, so a record 10 µs longer costs the fix 30 µs.
  const auto quick = test::findingsOf(hostBoundResultLoop(1).build());
  const auto slow = test::findingsOf(hostBoundResultLoop(11).build());
  const Finding* q = test::findingById(quick, "early-result-wait");
  const Finding* s = test::findingById(slow, "early-result-wait");
  REQUIRE(q != nullptr);
  REQUIRE(s != nullptr);
  CHECK(fixSavingNs(*q) - fixSavingNs(*s) == Approx(static_cast<double>(30 * kUs)).margin(2 * kUs));
}

// Two host threads on the legacy stream. Thread 1 runs K1 and K2 (100 µs each), synchronizing
// after each; thread 2 launches a 1 ms kernel KB at 150 µs, which queues behind K2; thread 1's
// K3 and a result copy then wait behind KB, and its synchronize for that result holds back a
// 500 µs upload to a non-blocking stream. Without thread 1's first two synchronizes it issues
// K3 and the copy before thread 2 issues KB: they run first, and the upload runs beside KB.
TEST_CASE("blocking-sync-call: a thread that runs ahead queues its work before another thread's") {
  TraceBuilder b;
  b.addStream(kNonBlocking, StreamFlag::kNonBlocking);
  b.launch(test::kNullStream, 0, 2, 5, 105);            // K1
  b.streamSynchronize(test::kNullStream, 3, 106);
  b.launch(test::kNullStream, 107, 109, 112, 212);      // K2
  b.streamSynchronize(test::kNullStream, 110, 213);
  b.launch(test::kNullStream, 150, 152, 214, 1214);     // KB, thread 2
  b.trace().runtime_calls.back().tid = 2;
  b.launch(test::kNullStream, 214, 216, 1216, 1316);    // K3
  b.copyCall("cudaMemcpyAsync_v3020", test::kNullStream, 217, 219, 1320, 1325, CopyKind::kDtoH);
  b.streamSynchronize(test::kNullStream, 220, 1326);    // the result's: kept
  b.copyCall("cudaMemcpyAsync_v3020", kNonBlocking, 1327, 1329, 1331, 1831, CopyKind::kHtoD);
  const Trace trace = b.build();
  const auto findings = test::findingsOf(trace);
  const Finding* f = test::findingById(findings, "blocking-sync-call");
  REQUIRE(f != nullptr);
  // K1, K2, K3 and the copy end by about 315 µs, the upload by about 820 and KB by about 1316:
  // span 1826 -> about 1311 µs. Kept in the recorded order, K3 would still follow KB.
  CHECK(fixSavingNs(*f) >= 450 * kUs);
  CHECK(fixSavingNs(*f) <= 560 * kUs);
  const diagnosis::DeviceView view(trace, Scope{}, 0);
  const diagnosis::HostTimeline host = diagnosis::buildHostTimeline(view);
  const diagnosis::ScheduleModel recorded(view, host);
  const diagnosis::ScheduleModel issued = recorded.withIssueOrder();
  std::vector<diagnosis::CallChange> removed;
  for (std::size_t b2 = 0; b2 < 2; ++b2) removed.push_back({host.barriers[b2].call, false, 0, 0});
  CHECK(recorded.span({}) - recorded.span({}, {}, {}, removed) < 100 * kUs);
  CHECK(issued.span({}) - issued.span({}, {}, {}, removed) >= 450 * kUs);
}

}  // namespace cuoverlap

namespace cuoverlap {

TEST_CASE("early-result-wait: a deferred synchronize waits for the previous step's copy only") {
  // Three steps of thread 1: a kernel on blocking stream 13 and its asynchronous DtoH copy, then a
  // device synchronize, which also waits for a 270 µs kernel thread 2 runs on a non-blocking
  // stream. Double-buffered, each step waits on the event recorded after the previous step's
  // copy: for that copy, not for the other thread's kernel the device synchronize waited for.
  TraceBuilder b;
  b.addStream(kNonBlocking, StreamFlag::kNonBlocking);
  for (int i = 0; i < 3; ++i) {
    const double t = 400.0 * i;
    b.launch(13, t + 1, t + 5, t + 10, t + 110);
    b.launch(kNonBlocking, t + 2, t + 4, t + 20, t + 290);
    b.trace().runtime_calls.back().tid = 2;
    b.copyCall("cudaMemcpyAsync_v3020", 13, t + 6, t + 8, t + 111, t + 115, CopyKind::kDtoH,
               MemKind::kPinned);
    b.call("cudaDeviceSynchronize_v3020", t + 9, t + 291);
  }
  const Trace trace = b.build();
  const diagnosis::DeviceView view(trace, Scope{}, 0);
  const diagnosis::HostTimeline host = diagnosis::buildHostTimeline(view);
  std::vector<std::int64_t> read_copies;
  const std::vector<diagnosis::SyncNeed> needs = diagnosis::syncNeeds(view, host, &read_copies);
  std::vector<std::size_t> copies;  // positions of the DtoH copies, in step order
  for (std::size_t p = 0; p < view.ops().size(); ++p) {
    if (view.op(view.ops()[p]).kind == OpKind::kMemcpy) copies.push_back(p);
  }
  REQUIRE(copies.size() == 3);
  std::vector<std::size_t> syncs;  // barriers of thread 1's synchronizes, in order
  for (std::size_t k = 0; k < host.barriers.size(); ++k) {
    if (needs[k] == diagnosis::SyncNeed::kDeferrable) syncs.push_back(k);
  }
  REQUIRE(syncs.size() == 3);
  for (std::size_t i = 0; i < 3; ++i) {
    CHECK(read_copies[syncs[i]] == static_cast<std::int64_t>(copies[i]));
    CHECK(host.barriers[syncs[i]].waited_for.size() == 2);  // the copy and the other kernel
  }
  const diagnosis::HostTimeline deferred = diagnosis::deferredTimeline(view, host, needs, read_copies);
  CHECK(deferred.barriers[syncs[0]].waited_for.empty());
  CHECK(deferred.barriers[syncs[1]].waited_for == std::vector<std::size_t>{copies[0]});
  CHECK(deferred.barriers[syncs[2]].waited_for == std::vector<std::size_t>{copies[1]});
}

}  // namespace cuoverlap

namespace cuoverlap {
namespace {

// Thread 1 loops three times on blocking stream 13: a 400 µs kernel, its DtoH copy, a
// synchronize. Thread 2 queues a 500 µs upload on blocking stream 14 at 1 µs, then at 20 µs a
// 50 µs upload on the legacy stream (`legacy_copy`: "cudaMemcpyAsync_v3020", returning at once,
// or "cudaMemcpy_v3020", blocking until its copy ran), which waits for both threads' work
// submitted before it. In the trace thread 1 submitted its second step after that upload (its
// first synchronize returned at 411 µs), so the step waited for it, and the span ended at 1375.
// `memset_kind`: with legacy_copy "cudaMemset_v3020", thread 2's legacy op is a memset of that
// memory (506-556), its call returning at once.
TraceBuilder stepsBehindOtherThreadsLegacyCopy(const char* legacy_copy,
                                               MemKind memset_kind = MemKind::kDevice) {
  TraceBuilder b;
  b.copyCall("cudaMemcpyAsync_v3020", 14, 1, 3, 5, 505, CopyKind::kHtoD);
  b.trace().runtime_calls.back().tid = 2;
  const bool blocking = std::string(legacy_copy) == "cudaMemcpy_v3020";
  if (std::string(legacy_copy) == "cudaMemset_v3020") {
    b.memset(test::kNullStream, 506, 556, b.call(legacy_copy, 20, 22)).src_kind = memset_kind;
  } else {
    b.copyCall(legacy_copy, test::kNullStream, 20, blocking ? 557 : 22, 506, 556, CopyKind::kHtoD);
  }
  b.trace().runtime_calls.back().tid = 2;
  const double kernel_start[3] = {5, 558, 970};
  const double call[3] = {0, 412, 965};
  for (int i = 0; i < 3; ++i) {
    const double t = call[i];
    const double k = kernel_start[i];
    b.launch(13, t, t + 2, k, k + 400);
    b.copyCall("cudaMemcpyAsync_v3020", 13, t + 3, t + 5, k + 401, k + 405, CopyKind::kDtoH);
    b.streamSynchronize(13, t + 6, k + 406);
  }
  return b;
}

}  // namespace

TEST_CASE("early-result-wait: a thread run ahead submits its steps before another thread's legacy work") {
  // Deferred, thread 1 submits its second step at once, before thread 2's legacy upload: CUDA
  // runs it first (after the first step) and the upload waits for it; only the third step, submitted
  // after the upload, still waits for it. The span ends about 100 µs sooner (1274 µs). Kept in the
  // recorded order, the second step would still wait for the upload: about 10 µs.
  const auto findings = test::findingsOf(stepsBehindOtherThreadsLegacyCopy("cudaMemcpyAsync_v3020").build());
  const Finding* f = test::findingById(findings, "early-result-wait");
  REQUIRE(f != nullptr);
  CHECK(fixSavingNs(*f) >= 70 * kUs);
  CHECK(fixSavingNs(*f) <= 130 * kUs);
  // A blocking cudaMemcpy holds other threads' submissions in the driver while it runs: the order
  // the trace ran in is kept.
  const auto held = test::findingsOf(stepsBehindOtherThreadsLegacyCopy("cudaMemcpy_v3020").build());
  const Finding* g = test::findingById(held, "early-result-wait");
  CHECK((g == nullptr || fixSavingNs(*g) < 40 * kUs));
}

TEST_CASE("early-result-wait: a cudaMemset into device memory is issued in the order threads submit") {
  // A synchronous cudaMemset into device memory returns at once (lab g000180's worker: 16-25 µs,
  // its op up to 690 µs later): as the asynchronous upload above, the deferred thread's second
  // step, submitted before it, runs first.
  const auto findings = test::findingsOf(stepsBehindOtherThreadsLegacyCopy("cudaMemset_v3020").build());
  const Finding* f = test::findingById(findings, "early-result-wait");
  REQUIRE(f != nullptr);
  CHECK(fixSavingNs(*f) >= 70 * kUs);
  CHECK(fixSavingNs(*f) <= 130 * kUs);
  // One into host memory blocks on its op: the recorded order is kept.
  const auto host = test::findingsOf(
      stepsBehindOtherThreadsLegacyCopy("cudaMemset_v3020", MemKind::kPinned).build());
  const Finding* g = test::findingById(host, "early-result-wait");
  CHECK((g == nullptr || fixSavingNs(*g) < 40 * kUs));
}

}  // namespace cuoverlap

namespace cuoverlap {
namespace {

// Thread 1 runs three steps 1310 µs apart: a 5 µs cudaFree (the device idle), a 1000 µs kernel
// on blocking stream 13, its DtoH copy, a synchronize, then 294 µs of host work. Thread 2 launches
// a 20 µs kernel on a non-blocking stream every 100 µs from 50 µs, none begun inside a free as
// recorded, and synchronizes at the end.
TraceBuilder freeAfterDeferredSync() {
  TraceBuilder b;
  b.addStream(kNonBlocking, StreamFlag::kNonBlocking);
  for (int i = 0; i < 3; ++i) {
    const double t = 1310.0 * i;
    b.call("cudaFree_v3020", t, t + 5);
    b.launch(13, t + 6, t + 8, t + 10, t + 1010);
    b.copyCall("cudaMemcpyAsync_v3020", 13, t + 9, t + 11, t + 1011, t + 1015, CopyKind::kDtoH,
               MemKind::kPinned);
    b.streamSynchronize(13, t + 12, t + 1016);
  }
  for (int k = 0; k < 39; ++k) {
    const double s = 50.0 + 100.0 * k;
    b.launch(kNonBlocking, s, s + 3, s + 5, s + 25);
    b.trace().runtime_calls.back().tid = 2;
  }
  b.streamSynchronize(kNonBlocking, 3904, 3930);
  b.trace().runtime_calls.back().tid = 2;
  return b;
}

}  // namespace

TEST_CASE("early-result-wait: a free the deferred thread reaches while its kernel runs holds other threads") {
  // Deferred, thread 1 reaches each next cudaFree 300 µs into its kernel: the free waits there for
  // the device (lab g000301's worker: 4.8 and 5.6 ms) and holds thread 2's launches begun inside
  // it until it returns (addForwardHolds), thread 2's later kernels moving with them: its work,
  // which as recorded ended with thread 1's, ends about 1.4 ms later, and the fix saves nothing
  // (about 600 µs where the free held no one).
  const auto findings = test::findingsOf(freeAfterDeferredSync().build());
  const Finding* f = test::findingById(findings, "early-result-wait");
  CHECK((f == nullptr || fixSavingNs(*f) < 100 * kUs));
}

}  // namespace cuoverlap
