// event-wait-serialization on traces with CUDA event records: the op a wait waited for comes from
// the cudaEventRecord of the waited event, not from which op happened to end when the wait released.
#include <catch2/catch.hpp>

#include "diagnosis/device_view.h"
#include "diagnosis/lane_waits.h"
#include "findings_test_util.h"
#include "trace_builder.h"

namespace cuoverlap {
namespace {

using test::findingById;
using test::findingsOf;
using test::idsOf;
using test::TraceBuilder;

constexpr std::uint64_t kEvent = 1;

// Stream 13 copies a kernel's input in and records the event; stream 15 waits for it and runs
// the kernel. A copy-out on stream 14, unrelated to both, ends exactly when the kernel starts.
TraceBuilder inputCopyThenKernel() {
  TraceBuilder b;
  b.copyCall("cudaMemcpyAsync_v3020", 13, 1, 2, 5, 290, CopyKind::kHtoD);
  b.eventRecord(13, kEvent, 3, 4);
  b.copyCall("cudaMemcpyAsync_v3020", 14, 5, 6, 8, 300, CopyKind::kDtoH);
  b.streamWaitEvent(15, 7, 8, kEvent);
  b.launch(15, 9, 10, 300, 400);
  return b;
}

TEST_CASE("event-wait-serialization with event records: a kernel waiting for its recorded input "
          "copy is not blamed on the op that ended when it started") {
  TraceBuilder b = inputCopyThenKernel();
  CHECK(idsOf(findingsOf(b.build())).count("event-wait-serialization") == 0);
}

TEST_CASE("event-wait-serialization without event records falls back to timestamps") {
  // The same trace minus the records: the copy-out that ended at the kernel's start is blamed.
  TraceBuilder b = inputCopyThenKernel();
  b.trace().event_records.clear();
  const auto findings = findingsOf(b.build());
  const Finding* f = findingById(findings, "event-wait-serialization");
  REQUIRE(f != nullptr);
  CHECK(f->evidence.at(0).detail.find("memcpy DtoH") != std::string::npos);
}

// Stream 13 runs a kernel and records the event after it; stream 14 waits and copies the next
// input in. An HtoD copy on stream 15 ends just before, which timestamps take as the release.
TraceBuilder kernelThenCopyIn() {
  TraceBuilder b;
  b.launch(13, 1, 2, 5, 300).name = b.intern("producer_kernel");
  b.eventRecord(13, kEvent, 3, 4);
  b.copyCall("cudaMemcpyAsync_v3020", 15, 5, 6, 200, 301, CopyKind::kHtoD);
  b.streamWaitEvent(14, 7, 8, kEvent);
  b.copyCall("cudaMemcpyAsync_v3020", 14, 9, 10, 302, 400, CopyKind::kHtoD);
  return b;
}

TEST_CASE("event-wait-serialization with event records: a copy-in waiting for a recorded kernel "
          "fires and names the kernel") {
  TraceBuilder b = kernelThenCopyIn();
  const auto findings = findingsOf(b.build());
  const Finding* f = findingById(findings, "event-wait-serialization");
  REQUIRE(f != nullptr);
  CHECK(f->count == 1);
  // Held back from 10 µs (launch returned) to 302 µs; without the wait the copy would have run
  // beside the kernel: the span shrinks by the copy's 98 µs (the what-if schedule).
  CHECK(f->time_ns == 98'000);
  REQUIRE(f->evidence.size() == 1);
  CHECK(f->evidence[0].stream_id == 14);
  CHECK(f->evidence[0].detail.find("kernel producer_kernel on stream 13") != std::string::npos);
  // Timestamps alone would take the HtoD copy on stream 15 as the release: no finding.
  b.trace().event_records.clear();
  CHECK(idsOf(findingsOf(b.build())).count("event-wait-serialization") == 0);
}

TEST_CASE("event-wait-serialization with event records skips a wait whose event was not recorded "
          "before it") {
  TraceBuilder b;
  b.launch(13, 1, 2, 5, 300);
  b.streamWaitEvent(14, 3, 4, kEvent);
  b.eventRecord(13, kEvent, 5, 6);  // after the wait: it cannot be what the wait waited for
  b.copyCall("cudaMemcpyAsync_v3020", 14, 7, 8, 302, 400, CopyKind::kHtoD);
  CHECK(idsOf(findingsOf(b.build())).count("event-wait-serialization") == 0);
}

TEST_CASE("event-wait-serialization: a synchronous copy held by a wait blocked its call for it, and "
          "without the wait starts when its call began") {
  // cudaMemcpy of stream 14 called at 9 µs waits (event) for the kernel of stream 13 until 300 µs,
  // then copies for 100 µs: its call blocked from 9 to 401 µs. Without the wait the copy runs
  // beside the kernel from 9 µs: the span shrinks by the copy's 100 µs.
  TraceBuilder b;
  b.launch(13, 1, 2, 5, 300);
  b.eventRecord(13, kEvent, 3, 4);
  b.streamWaitEvent(14, 7, 8, kEvent);
  b.copyCall("cudaMemcpy_v3020", 14, 9, 401, 300, 400, CopyKind::kHtoD);
  const auto findings = findingsOf(b.build());
  const Finding* f = findingById(findings, "event-wait-serialization");
  REQUIRE(f != nullptr);
  CHECK(f->time_ns >= 95'000);
  CHECK(f->time_ns <= 100'000);
}

// Two rounds: stream 13 copies an input in, kernel K of stream 14 reads it (waits for the copy),
// kernel L of stream 15 waits for K. Before the second copy stream 13 waits for `next_copy_event`:
// L's event (3), so that K -> L -> copy is the only order between K and the copy that overwrites
// K's input, or K's own (2), so that the K -> L wait orders nothing the copy needs.
TraceBuilder copyReadByKernelThenKernel(std::uint64_t next_copy_event) {
  TraceBuilder b;
  const bool through_l = next_copy_event == 3;
  b.copyCall("cudaMemcpyAsync_v3020", 13, 1, 2, 5, 15, CopyKind::kHtoD);
  b.eventRecord(13, 1, 2.1, 2.2);
  b.streamWaitEvent(14, 2.3, 2.4, 1);
  b.launch(14, 2.5, 3, 15, 215);
  b.eventRecord(14, 2, 3.1, 3.2);
  b.streamWaitEvent(15, 3.3, 3.4, 2);
  b.launch(15, 3.5, 4, 215, 415);
  b.eventRecord(15, 3, 4.1, 4.2);
  const double copy = through_l ? 415 : 215;
  b.streamWaitEvent(13, 4.3, 4.4, next_copy_event);
  b.copyCall("cudaMemcpyAsync_v3020", 13, 4.5, 5, copy, copy + 10, CopyKind::kHtoD);
  b.eventRecord(13, 1, 5.1, 5.2);
  b.streamWaitEvent(14, 5.3, 5.4, 1);
  b.launch(14, 5.5, 6, copy + 10, copy + 210);
  b.eventRecord(14, 2, 6.1, 6.2);
  b.streamWaitEvent(15, 6.3, 6.4, 2);
  b.launch(15, 6.5, 7, copy + 210, copy + 410);
  return b;
}

TEST_CASE("stream waits: a wait that alone orders a copy-in after the kernel reading the previous "
          "one guards the buffer, in every round of its call site") {
  // Through L: dropping K -> L would let the second copy overwrite K's input while K runs:
  // cross-stream-kernel-wait claims it in neither round. (The copy's own wait for L is
  // event-wait-serialization's, which a copy-in waiting for a kernel always counts: event-dag's
  // tiles use one slice of a buffer each, and a trace cannot tell slices from reuse.)
  const auto guarded = findingsOf(copyReadByKernelThenKernel(3).build());
  CHECK(findingById(guarded, "cross-stream-kernel-wait") == nullptr);
  // The copy waits for K itself: the K -> L waits order nothing it needs and cost L's overlap.
  const auto free = findingsOf(copyReadByKernelThenKernel(2).build());
  const Finding* f = findingById(free, "cross-stream-kernel-wait");
  REQUIRE(f != nullptr);
  CHECK(f->count == 2);
}

TEST_CASE("event-wait-serialization: a dropped wait also gives back the time the wait took to "
          "release its op, as the trace shows it") {
  // The copy-in of stream 14 starts 8 µs after the kernel it waited for ended (the event's
  // release; nothing else ended in between). Without the wait it runs beside the kernel from its
  // launch: the span shrinks by the copy's 98 µs and those 8 µs, which the schedule with the wait
  // keeps.
  TraceBuilder b;
  b.launch(13, 1, 2, 5, 300);
  b.eventRecord(13, kEvent, 3, 4);
  b.streamWaitEvent(14, 7, 8, kEvent);
  b.copyCall("cudaMemcpyAsync_v3020", 14, 9, 10, 308, 406, CopyKind::kHtoD);
  const auto findings = findingsOf(b.build());
  const Finding* f = findingById(findings, "event-wait-serialization");
  REQUIRE(f != nullptr);
  CHECK(f->time_ns == 106'000);
}

// A copy-out on `producer` records the event; blocking stream 14 waits for it, and its copy-in
// starts 6 µs after the copy-out ended.
TraceBuilder copyOutThenWaitingCopyIn(std::uint32_t producer) {
  TraceBuilder b;
  b.launch(producer, 1, 2, 5, 100);
  b.copyCall("cudaMemcpyAsync_v3020", producer, 3, 4, 100, 200, CopyKind::kDtoH);
  b.eventRecord(producer, kEvent, 5, 6);
  b.streamWaitEvent(14, 7, 8, kEvent);
  b.copyCall("cudaMemcpyAsync_v3020", 14, 11, 12, 206, 306, CopyKind::kHtoD);
  return b;
}

TEST_CASE("event-wait-serialization: a wait for the legacy stream that its implicit barrier "
          "orders anyway costs nothing") {
  // On the legacy stream (7) the copy-out also holds back the later work of every blocking
  // stream: stream 14's copy-in follows it with or without the wait, so dropping it saves nothing.
  CHECK(findingById(findingsOf(copyOutThenWaitingCopyIn(test::kNullStream).build()),
                    "event-wait-serialization") == nullptr);
  // From blocking stream 13 only the wait orders them: without it the copy-in runs beside the
  // copy-out from its launch.
  const auto findings = findingsOf(copyOutThenWaitingCopyIn(13).build());
  const Finding* f = findingById(findings, "event-wait-serialization");
  REQUIRE(f != nullptr);
  CHECK(f->time_ns >= 100'000);
}

TEST_CASE("stream waits re-resolved on a fix's lanes: the event stands for the work its stream "
          "holds in the fix") {
  // Lab g000315's pattern: kernel A on stream 13, a cudaMemcpy download of its result on the
  // legacy stream, an event recorded on 13, stream 14 waits for it, a cudaMemcpy upload on the
  // legacy stream, kernel B on 14. The recorded wait orders A -> B. A fix that issues the download
  // on 13 and the upload on 14 (cudaMemcpyAsync) records the event after the download and holds
  // the upload behind it: download -> upload.
  TraceBuilder b;
  b.launch(13, 1, 2, 5, 100);
  b.copyCall("cudaMemcpy_v3020", test::kNullStream, 3, 210, 105, 200, CopyKind::kDtoH);
  b.eventRecord(13, kEvent, 211, 212);
  b.streamWaitEvent(14, 213, 214, kEvent);
  b.copyCall("cudaMemcpy_v3020", test::kNullStream, 215, 330, 220, 320, CopyKind::kHtoD);
  b.launch(14, 331, 332, 335, 400);
  const Trace trace = b.build();
  const diagnosis::DeviceView view(trace, Scope{}, 0);
  REQUIRE(view.ops().size() == 4);  // A, download, upload, B by start
  const auto waits = diagnosis::streamWaits(view);
  REQUIRE(waits.size() == 1);
  CHECK(waits[0].waited_for == std::vector<std::size_t>{0});
  CHECK(waits[0].released == 3);
  std::vector<std::uint64_t> lane;
  for (const auto& scoped : view.ops()) lane.push_back(diagnosis::DeviceView::streamKey(view.op(scoped)));
  // Every op where it ran: the recorded edge.
  auto edges = diagnosis::waitEdgesOnLanes(view, waits, lane);
  REQUIRE(edges.size() == 1);
  CHECK(edges[0].from == 0);
  CHECK(edges[0].to == 3);
  // The copies moved to the kernels' streams.
  lane[1] = lane[0];
  lane[2] = lane[3];
  edges = diagnosis::waitEdgesOnLanes(view, waits, lane);
  REQUIRE(edges.size() == 1);
  CHECK(edges[0].from == 1);
  CHECK(edges[0].to == 2);
  // A wait whose stream gets the recorded stream's work (one lane) orders nothing.
  lane[2] = lane[3] = lane[0];
  CHECK(diagnosis::waitEdgesOnLanes(view, waits, lane).empty());
}

TEST_CASE("stream waits: an event stands for the ops of its stream submitted before it, not those "
          "whose launch call began before it") {
  // Thread 2's kernel launch onto the legacy stream begins first but is held in the driver until
  // 60 µs; thread 1 copies onto the legacy stream (call 10-12), records the event (13-14), stream
  // 14 waits for it and copies. The kernel ran after thread 1's copy and was not in the event:
  // stream 14's copy started while it ran (lab g000188).
  const auto resolve = [](double record_end_us, double copy_start_us) {
    TraceBuilder b;
    b.launch(test::kNullStream, 5, 60, 100, 300);
    b.trace().runtime_calls.back().tid = 2;
    b.copyCall("cudaMemcpyAsync_v3020", test::kNullStream, 10, 12, 20, 100, CopyKind::kHtoD);
    b.eventRecord(test::kNullStream, kEvent, 13, record_end_us);
    b.streamWaitEvent(14, record_end_us + 1, record_end_us + 2, kEvent);
    b.copyCall("cudaMemcpyAsync_v3020", 14, record_end_us + 3, record_end_us + 4, copy_start_us,
               copy_start_us + 80, CopyKind::kHtoD);
    for (auto& call : b.trace().runtime_calls) {
      if (call.tid == 0) call.tid = 1;
    }
    const Trace trace = b.build();
    const diagnosis::DeviceView view(trace, Scope{}, 0);
    const auto waits = diagnosis::streamWaits(view);
    REQUIRE(waits.size() == 1);
    return waits[0].waited_for;
  };
  // Positions by start: thread 1's copy 0, the kernel 1, stream 14's copy 2.
  CHECK(resolve(14, 113) == std::vector<std::size_t>{0});
  // A record call itself held in the driver until after the kernel was submitted stands for it
  // (stream 14's copy then starts after the kernel).
  CHECK(resolve(70, 310) == std::vector<std::size_t>{1});
}

}  // namespace
}  // namespace cuoverlap
