// The what-if schedule (analyzer/src/diagnosis/schedule_estimate.h) on hand-built traces: how the
// copy engines pick among ready ops of several streams, and that a blocked op holds up no other
// stream.
#include <cstdlib>
#include <utility>

#include <catch2/catch.hpp>

#include "diagnosis/device_view.h"
#include "diagnosis/host_timeline.h"
#include "diagnosis/schedule_estimate.h"
#include "diagnosis/schedule_turns.h"
#include "diagnosis/schedule_unrun.h"
#include "trace_builder.h"

namespace cuoverlap {
namespace {

using diagnosis::addTurnsBeside;
using diagnosis::BusyCall;
using diagnosis::buildHostTimeline;
using diagnosis::HostTurns;
using diagnosis::ScheduledHost;
using diagnosis::CallChange;
using diagnosis::DeviceView;
using diagnosis::FasterOp;
using diagnosis::HostTimeline;
using diagnosis::copyReturnAfterSleep;
using diagnosis::launchAfterSleep;
using diagnosis::OrderEdge;
using diagnosis::ScheduleModel;
using test::TraceBuilder;

// The position in view.ops() of the op that starts at `start_us`.
std::size_t at(const DeviceView& view, double start_us) {
  for (std::size_t p = 0; p < view.ops().size(); ++p) {
    if (view.ops()[p].start == TraceBuilder::ns(start_us)) return p;
  }
  FAIL("no op starts at " << start_us);
  return 0;
}

TEST_CASE("a copy engine keeps serving one stream while its next copy is ready") {
  // Streams 13 (A) and 14 (B) each copy three 100 µs tiles in, issued A0 B0 A1 B1 A2 B2 within
  // 11 µs; a 1000 µs kernel on stream 15 needs A0 and B0. As recorded on an H100
  // (streams_event-dag.sqlite.gz), the engine runs A0 A1 A2 before B0, so the kernel starts when B0
  // ends, 400 µs after the first copy began.
  TraceBuilder b;
  const double a[] = {10, 110, 210}, bb[] = {310, 410, 510};
  for (int t = 0; t < 3; ++t) {
    b.copyCall("cudaMemcpyAsync_v3020", 13, 4 * t, 4 * t + 1, a[t], a[t] + 100, CopyKind::kHtoD);
    b.copyCall("cudaMemcpyAsync_v3020", 14, 4 * t + 2, 4 * t + 3, bb[t], bb[t] + 100, CopyKind::kHtoD);
  }
  b.launch(15, 20, 21, 411, 1411);
  const Trace trace = b.build();
  const DeviceView view(trace, Scope{}, 0);
  const ScheduleModel model(view);
  const std::vector<OrderEdge> inputs = {{at(view, 10), at(view, 411)}, {at(view, 310), at(view, 411)}};
  // No op is released before the span starts (10 µs): A0 10-110, A1, A2, B0 310-410, the kernel
  // 410-1410. First come, first served would have run B0 second and the kernel from 210.
  CHECK(model.span(inputs) == TraceBuilder::ns(1400));
  // Without the inputs' edges the kernel runs from its release (21 µs) to 1021.
  CHECK(model.span({}) == TraceBuilder::ns(1011));
}

TEST_CASE("a copy waiting for a dependency does not hold up another stream's ready copy") {
  // Stream 13's copy waits for a 1000 µs kernel; stream 14's copy, issued after it, is ready at
  // once and runs while the kernel does: span 1000 + 100, not 1000 + 100 + 100.
  TraceBuilder b;
  b.launch(15, 0, 1, 1, 1001);
  b.copyCall("cudaMemcpyAsync_v3020", 13, 2, 3, 1001, 1101, CopyKind::kHtoD);
  b.copyCall("cudaMemcpyAsync_v3020", 14, 4, 5, 5, 105, CopyKind::kHtoD);
  const Trace trace = b.build();
  const DeviceView view(trace, Scope{}, 0);
  const ScheduleModel model(view);
  CHECK(model.span({{at(view, 1), at(view, 1001)}}) == TraceBuilder::ns(1100));
}

TEST_CASE("a copy engine takes a copy that waited for its stream when it was let go") {
  // Stream 13's upload X (call at 2 µs) waits for its stream's 500 µs kernel; stream 16's upload Y
  // is issued at 300 µs, ready at once; stream 14's upload W holds the engine until 605. As the
  // H100 served a threads program's uploads (g000105), the engine takes Y, whose queue was ready
  // first, before X, though X was issued first: X 705-805 and stream 13's 1000 µs kernel after it
  // to 1805. Issue order would have run X at 605 and the kernel to 1705.
  TraceBuilder b;
  b.launch(13, 0, 1, 1, 501);
  b.copyCall("cudaMemcpyAsync_v3020", 13, 2, 3, 705, 805, CopyKind::kHtoD);
  b.launch(13, 4, 5, 805, 1805);
  b.copyCall("cudaMemcpyAsync_v3020", 14, 6, 7, 7, 605, CopyKind::kHtoD);
  b.copyCall("cudaMemcpyAsync_v3020", 16, 300, 301, 605, 705, CopyKind::kHtoD);
  const Trace trace = b.build();
  const DeviceView view(trace, Scope{}, 0);
  const ScheduleModel model(view);
  CHECK(model.span({}) == TraceBuilder::ns(1804));
}

TEST_CASE("a copy pushed behind another stream's held copy waits for it in every schedule") {
  // Stream 13's copy (call at 0 µs) waits for a 1000 µs kernel of stream 15 and runs 1001-1101;
  // stream 14's copy, launched after it (call at 2 µs) and ready at 3, started only at 1103 as the
  // held copy ended, the engine idle meanwhile: the engine's queue held it behind stream 13's
  // copy. With the wait the schedule keeps that order (span 1202 µs, not 1100); without the wait
  // stream 13's copy runs at once and stream 14's right after it, both beside the kernel.
  TraceBuilder b;
  b.launch(15, 0, 1, 1, 1001);
  b.copyCall("cudaMemcpyAsync_v3020", 13, 0, 1, 1001, 1101, CopyKind::kHtoD);
  b.copyCall("cudaMemcpyAsync_v3020", 14, 2, 3, 1103, 1203, CopyKind::kHtoD);
  const Trace trace = b.build();
  const DeviceView view(trace, Scope{}, 0);
  const ScheduleModel model(view);
  const std::vector<OrderEdge> wait = {{at(view, 1), at(view, 1001)}};
  CHECK(model.span(wait) == TraceBuilder::ns(1202));
  CHECK(model.span({}) == TraceBuilder::ns(1000));

  // Launched before the held copy, stream 14's copy owed it nothing: a copy the engine took late
  // for another reason is no hold.
  TraceBuilder first;
  first.launch(15, 0, 1, 1, 1001);
  first.copyCall("cudaMemcpyAsync_v3020", 13, 2, 3, 1001, 1101, CopyKind::kHtoD);
  first.copyCall("cudaMemcpyAsync_v3020", 14, 0, 1, 1103, 1203, CopyKind::kHtoD);
  const Trace first_trace = first.build();
  const DeviceView first_view(first_trace, Scope{}, 0);
  const ScheduleModel first_model(first_view);
  CHECK(first_model.span({{at(first_view, 1), at(first_view, 1001)}}) == TraceBuilder::ns(1100));
}

TEST_CASE("a held copy follows the copy it was held behind at the engine's turnaround") {
  // As above, stream 14's first copy (ready at 3 µs) was held behind stream 13's and started 4 µs
  // after it ended; stream 14's next two copies were queued and followed 1 µs apart, the engine's
  // turnaround. The hold puts the held copy next in the queue the engine serves: it follows at the
  // turnaround, not the recorded 4 µs, so that no other stream's copy takes the engine between.
  TraceBuilder b;
  b.launch(15, 0, 1, 1, 1001);
  b.copyCall("cudaMemcpyAsync_v3020", 13, 0, 1, 1001, 1101, CopyKind::kHtoD);
  b.copyCall("cudaMemcpyAsync_v3020", 14, 2, 3, 1105, 1205, CopyKind::kHtoD);
  b.copyCall("cudaMemcpyAsync_v3020", 14, 4, 5, 1206, 1306, CopyKind::kHtoD);
  b.copyCall("cudaMemcpyAsync_v3020", 14, 6, 7, 1307, 1407, CopyKind::kHtoD);
  const Trace trace = b.build();
  const DeviceView view(trace, Scope{}, 0);
  const ScheduleModel model(view);
  // Ops from 1 to 1001 + 100 + 1 + 100 + 1 + 100 + 1 + 100 µs (with the recorded gap, 1406).
  CHECK(model.span({{at(view, 1), at(view, 1001)}}) == TraceBuilder::ns(1403));
}

TEST_CASE("a pageable upload that waits for its stream moves what it staged ahead at the pinned rate") {
  // A 4 MiB pinned upload on stream 14 (80 µs, of which 1.5 µs fixed cost: 53.4 GB/s), a 500 µs
  // kernel on stream 13, then a 4 MiB pageable cudaMemcpyAsync there whose call (600-800 µs)
  // blocked until its copy ran (610-810, 200 µs: the rate its staging allowed). Released 400 µs
  // sooner, the copy waits for the kernel while its call stages; 1 MiB staged ahead then moves at
  // the pinned rate: 1 MiB x (200 - 78.5) / 4 MiB = 30.4 µs less than at its recorded rate, of
  // which the 2 µs it had staged ahead as recorded (after its 8 µs startup) and a release only 7
  // µs sooner (staging 6 µs ahead of the kernel's end and the 5 µs handoff) take 3.6 µs: 26.7 µs.
  const auto upload = [](bool pinned_copy) {
    TraceBuilder b;
    if (pinned_copy) b.copyCall("cudaMemcpyAsync_v3020", 14, 0, 1, 2, 82, CopyKind::kHtoD).bytes = 4u << 20;
    b.launch(13, 100, 101, 102, 602);
    b.copyCall("cudaMemcpyAsync_v3020", 13, 600, 800, 610, 810, CopyKind::kHtoD, MemKind::kPageable).bytes =
        4u << 20;
    return b.build();
  };
  const auto staged = [](const Trace& trace) {
    const DeviceView view(trace, Scope{}, 0);
    const ScheduleModel model(view);
    std::vector<Ns> long_wait(view.ops().size(), 0);
    std::vector<Ns> short_wait(view.ops().size(), 0);
    long_wait[at(view, 610)] = TraceBuilder::ns(400);
    short_wait[at(view, 610)] = TraceBuilder::ns(7);
    return model.span({}, short_wait) - model.span({}, long_wait);
  };
  const Ns with_rate = staged(upload(true));
  CHECK(std::abs(with_rate - TraceBuilder::ns(26.7)) < 100);
  // Without a pinned rate (no large pinned copy, no PCIe link recorded) nothing moves.
  CHECK(staged(upload(false)) == 0);
}

TEST_CASE("an edge from an op issued later than its target orders nothing") {
  // The kernel was launched (call at 50 µs) after the copy (call at 0 µs): an edge kernel -> copy
  // cannot be a wait the host set up, and a cycle with stream order must not stall the schedule.
  TraceBuilder b;
  b.copyCall("cudaMemcpyAsync_v3020", 13, 0, 1, 1, 101, CopyKind::kHtoD);
  b.launch(13, 50, 51, 101, 201);
  const Trace trace = b.build();
  const DeviceView view(trace, Scope{}, 0);
  const ScheduleModel model(view);
  CHECK(model.span({{at(view, 101), at(view, 1)}}) == TraceBuilder::ns(200));
}


TEST_CASE("a kernel that fills the device starts beside a small one, on the SMs left free") {
  // A 24-block kernel (an NCCL-like share) runs from 0 to 1000 µs; a kernel of 4 waves, issued
  // after it on another stream, starts at once on the free SMs, as the hardware does.
  TraceBuilder b;
  b.launch(13, 0, 1, 1, 1001).grid_blocks = 24;
  b.launch(14, 2, 3, 3, 503).grid_blocks = 132 * 8 * 4;
  const Trace trace = b.build();
  const DeviceView view(trace, Scope{}, 0);
  CHECK(ScheduleModel(view).span({}) == TraceBuilder::ns(1000));
}

// A GPU page-fault group the driver served over [start_us, end_us).
void faultGroup(TraceBuilder& b, double start_us, double end_us) {
  UmPageFaultGroup f;
  f.start = TraceBuilder::ns(start_us);
  f.end = TraceBuilder::ns(end_us);
  f.faults = 12;
  f.access = schema::UmAccessType::kRead;
  b.trace().unified_memory.gpu_faults.push_back(f);
}

// The schedule's span of `b`'s trace as recorded, and without its fault records.
std::pair<Ns, Ns> spansWithAndWithoutFaults(TraceBuilder b) {
  const Trace with_trace = b.build();
  b.trace().unified_memory.gpu_faults.clear();
  const Trace without_trace = b.build();
  const DeviceView with(with_trace, Scope{}, 0), without(without_trace, Scope{}, 0);
  return {ScheduleModel(with).span({}), ScheduleModel(without).span({})};
}

TEST_CASE("a kernel whose blocks are done while another kernel's faults are served ends with that service") {
  // Recorded: stream 13's 8-block kernel at 1-81 µs and a 300 µs one after it; then a 132-block
  // kernel on stream 14, launched at 2 µs, ran 390-890 µs with a fault group over 400-800. The
  // schedule starts it as its call returned (3 µs), beside the first kernel, whose end at 81 µs
  // falls in the 400 µs the driver serves its faults from 10 µs into its run: it ends with them at
  // 413 µs, and the 300 µs kernel after it at 714 instead of 382, past the faulting kernel's 503
  // (g010202's fixed program).
  TraceBuilder b;
  b.launch(13, 0, 1, 1, 81).grid_blocks = 8;
  b.launch(13, 1, 2, 82, 382).grid_blocks = 8;
  b.launch(14, 2, 3, 390, 890).grid_blocks = 132;
  faultGroup(b, 400, 800);
  const auto [with, without] = spansWithAndWithoutFaults(b);
  CHECK(without < TraceBuilder::ns(505));
  CHECK(with > TraceBuilder::ns(710));
  CHECK(with < TraceBuilder::ns(720));
  // The faulting kernel made fault-free by a fix (prefetch-managed: 100 µs) holds nothing.
  const Trace trace = b.build();
  const DeviceView view(trace, Scope{}, 0);
  CHECK(ScheduleModel(view).span({}, {}, {{at(view, 390), TraceBuilder::ns(100)}}) == TraceBuilder::ns(381));
}

TEST_CASE("a multi-wave kernel beside another kernel's fault service keeps its end") {
  // Recorded: a 132-block kernel on stream 14 ran 1-901 µs with a fault group over 11-811 µs;
  // stream 13's two kernels, launched beside it, ran after it: one of `grid` blocks (400 µs), then
  // an 8-block one (200 µs). Scheduled beside the faulting kernel, the first ends inside the
  // service. Of one wave, it ends with the service at 811 µs, and the 200 µs kernel after it ends
  // past the faulting kernel; of two waves, it ends as scheduled (g000257: its fixed program saved
  // what the schedule without the hold gives, on an H100 and an H200), and the one-wave kernel
  // after it, due inside the service, ends with it: the faulting kernel's end is the span's.
  const auto spans = [](std::uint32_t grid) {
    TraceBuilder b;
    b.launch(14, 0, 1, 1, 901).grid_blocks = 132;
    b.launch(13, 1, 2, 902, 1302).grid_blocks = grid;
    b.launch(13, 2, 3, 1303, 1503).grid_blocks = 8;
    faultGroup(b, 11, 811);
    return spansWithAndWithoutFaults(b);
  };
  const auto [one_wave, one_wave_clean] = spans(64);
  CHECK(one_wave_clean == TraceBuilder::ns(900));
  CHECK(one_wave > TraceBuilder::ns(1000));
  const auto [two_waves, two_waves_clean] = spans(132 * 8 * 2);
  CHECK(two_waves == two_waves_clean);
  CHECK(two_waves == TraceBuilder::ns(900));
}

TEST_CASE("a kernel issued behind one still placing blocks waits for it to end") {
  // A 64-block kernel runs from 1 to 101 µs; a kernel of 4 waves, issued next on another stream,
  // starts beside it on the SMs left free and takes the rest when they free up; a 64-block kernel
  // issued after it on a third stream waits until the 4-wave kernel has placed its blocks: the
  // block scheduler serves the kernel issued first. Taking the SMs the first kernel left at 101 µs
  // would have run it beside the 4-wave kernel (span 502 µs). It starts at the middle of the
  // 4-wave kernel's last wave (503 - 500 / 8 = 440.5 µs) and shares those SMs with that wave's
  // blocks (half of them, falling to none by 503 µs): it loses 62.5 x 0.5 / 2 µs, ends at 756.1.
  // (The 4-wave kernel ran on the SMs the first kernel left until 101 µs in the trace too, and
  // its blocks advance at the rate it had there: its recorded share, kept in 127ths, puts its end
  // within 2 µs of the recorded one.)
  TraceBuilder b;
  b.launch(13, 0, 1, 1, 101).grid_blocks = 64;
  b.launch(14, 2, 3, 3, 503).grid_blocks = 132 * 8 * 4;
  b.launch(15, 4, 5, 503, 803).grid_blocks = 64;
  const Trace trace = b.build();
  const DeviceView view(trace, Scope{}, 0);
  const Ns span = ScheduleModel(view).span({});
  CHECK(span >= 755'125 - 2'500);
  CHECK(span <= 755'125 + 2'500);
}

TEST_CASE("a later kernel takes the SMs from the middle of a multi-wave kernel's last wave") {
  // A kernel of 2 waves runs from 0 to 400 µs; a kernel that fills the device, issued next on
  // another stream, starts at the middle of the last wave (400 - 200 / 2 = 300 µs), when half of
  // that wave's blocks have left their SMs (every schedule drains tails); the 2-wave kernel still
  // ends at 400 µs. Until then its last blocks hold half of the SMs, falling to none: shared by SM
  // time, the later kernel would lose 100 µs x 0.5 / 2 = 25 µs and end at 525 µs. But it runs its
  // blocks in one round of 200 µs, longer than the wave's spread of block ends (100 µs): its block
  // placed in the last slot freed, at 400 µs, ends at 600 µs, and the slots freed before sit idle
  // at its end. It ends at 600 µs, as it would have after the 2-wave kernel.
  TraceBuilder b;
  b.launch(13, 0, 1, 1, 401).grid_blocks = 132 * 8 * 2;
  b.launch(14, 2, 3, 401, 601).grid_blocks = 132 * 8;
  const Trace trace = b.build();
  const DeviceView view(trace, Scope{}, 0);
  const ScheduleModel model(view);
  // (ho33) The block-end spread is min(1.2 rounds, 200 µs) (blockEndSpread): the 2-wave kernel's
  // is 200 µs and the later kernel's own spread holds its whole 200 µs duration, so its blocks
  // are inferred short and the early slots gain (200 - 0) / 2 = 100 µs on the in-step 600: the SM
  // share's 525 stands.
  CHECK(model.span({}) == TraceBuilder::ns(525));
  // One of two rounds (2 waves of 100 µs blocks) turns half of the drain's SM time into an earlier
  // end: its second round's blocks move to the slots that freed first. Between 525 and 600 µs:
  // 562.5 µs.
  TraceBuilder two;
  two.launch(13, 0, 1, 1, 401).grid_blocks = 132 * 8 * 2;
  two.launch(14, 2, 3, 401, 601).grid_blocks = 132 * 8 * 2;
  const Trace two_trace = two.build();
  const DeviceView two_view(two_trace, Scope{}, 0);
  // (ho33) Its blocks: (200 - 200) / 2 rounds: the early slots' gain (100 µs) takes it to the share's 525.
  CHECK(ScheduleModel(two_view).span({}) == 525'000);
  // Blocks shorter than the drain (3 waves of 40 µs blocks, 120 µs) finish in it and take the next
  // slots freed: the kernel shares the SMs by time, loses 25 µs and ends at 445 µs.
  TraceBuilder short_blocks;
  short_blocks.launch(13, 0, 1, 1, 401).grid_blocks = 132 * 8 * 2;
  short_blocks.launch(14, 2, 3, 401, 521).grid_blocks = 132 * 8 * 3;
  const Trace short_trace = short_blocks.build();
  const DeviceView short_view(short_trace, Scope{}, 0);
  CHECK(ScheduleModel(short_view).span({}) == TraceBuilder::ns(445));
  // Where the trace shows it running beside the 2-wave kernel already (started at 300 µs, 225 µs
  // long), its measured duration holds what the drain cost it: shared by SM time as recorded.
  TraceBuilder recorded;
  recorded.launch(13, 0, 1, 1, 401).grid_blocks = 132 * 8 * 2;
  recorded.launch(14, 2, 3, 301, 526).grid_blocks = 132 * 8;
  const Trace recorded_trace = recorded.build();
  const DeviceView recorded_view(recorded_trace, Scope{}, 0);
  CHECK(ScheduleModel(recorded_view).span({}) == TraceBuilder::ns(550));
  // A kernel of half the device shares the SMs just the same: an SM's issue slots are shared
  // among the blocks resident on it, so its blocks, in the slots the wave's ended blocks left, run
  // beside those still running. It also ends at 525 µs.
  TraceBuilder half;
  half.launch(13, 0, 1, 1, 401).grid_blocks = 132 * 8 * 2;
  half.launch(14, 2, 3, 401, 601).grid_blocks = 132 * 4;
  const Trace half_trace = half.build();
  const DeviceView half_view(half_trace, Scope{}, 0);
  CHECK(ScheduleModel(half_view).span({}) == TraceBuilder::ns(525));
  // So does a small one (64 blocks, 80 µs): it outlasts the wave's 75 µs of free SM time and ends
  // 25 µs late, at 405 µs, not at 380 as if the SMs it took were idle.
  TraceBuilder small;
  small.launch(13, 0, 1, 1, 401).grid_blocks = 132 * 8 * 2;
  small.launch(14, 2, 3, 401, 481).grid_blocks = 64;
  const Trace small_trace = small.build();
  const DeviceView small_view(small_trace, Scope{}, 0);
  CHECK(ScheduleModel(small_view).span({}) == TraceBuilder::ns(405));
  // A kernel of one wave holds its SMs to its end.
  TraceBuilder one;
  one.launch(13, 0, 1, 1, 401).grid_blocks = 132 * 8;
  one.launch(14, 2, 3, 401, 601).grid_blocks = 132 * 8;
  const Trace one_trace = one.build();
  const DeviceView one_view(one_trace, Scope{}, 0);
  CHECK(ScheduleModel(one_view).span({}) == TraceBuilder::ns(600));
}

TEST_CASE("a kernel's blocks advance at the SM share it holds, against the share it had as recorded") {
  // A 528-block kernel (half the device) runs from 1 to 101 µs; a 1056-block kernel (the whole
  // device), issued at 150 µs on another stream, runs alone from 151 to 251. Issued 100 µs
  // sooner, it is ready at about 51 µs beside the first, on the half of the SMs it leaves: its
  // blocks advance at half their recorded rate until 101 µs (25 µs of its work), the rest at the
  // full rate, and it ends 25 µs later than its recorded duration says, at about 176 µs.
  TraceBuilder alone;
  alone.launch(13, 0, 1, 1, 101).grid_blocks = 132 * 4;
  alone.launch(14, 150, 151, 151, 251).grid_blocks = 132 * 8;
  const Trace alone_trace = alone.build();
  const DeviceView alone_view(alone_trace, Scope{}, 0);
  const ScheduleModel alone_model(alone_view);
  std::vector<Ns> earlier(alone_view.ops().size(), 0);
  earlier[at(alone_view, 151)] = TraceBuilder::ns(100);
  const Ns slowed = alone_model.span({}, earlier);
  CHECK(slowed >= TraceBuilder::ns(174));
  CHECK(slowed <= TraceBuilder::ns(178));
  // The other way (g000040): the 1056-block kernel, issued at 50 µs, waited for the SMs of a
  // 528-block kernel running from 1 to 401 µs and ran 300 µs beside it, on half of its share. With
  // that kernel 50 µs long, it starts alone at about 51 µs on all of its SMs and takes half its
  // recorded duration: it ends at about 201 µs, not 351.
  TraceBuilder beside;
  beside.launch(13, 0, 1, 1, 401).grid_blocks = 132 * 4;
  beside.launch(14, 50, 51, 101, 401).grid_blocks = 132 * 8;
  const Trace beside_trace = beside.build();
  const DeviceView beside_view(beside_trace, Scope{}, 0);
  const ScheduleModel beside_model(beside_view);
  CHECK(beside_model.span({}) == TraceBuilder::ns(400));  // the recorded program: as it ran
  const std::vector<FasterOp> shorter = {{at(beside_view, 1), TraceBuilder::ns(50)}};
  const Ns sped = beside_model.span({}, {}, shorter);
  CHECK(sped >= TraceBuilder::ns(199));
  CHECK(sped <= TraceBuilder::ns(203));
}

TEST_CASE("a kernel queued behind a device-filling kernel takes its slots from where the trace saw them free") {
  // F1 (1056 blocks, the whole device by its limits) runs from 1 to 201 µs; F2, another one on a
  // second stream, started inside it at 121 µs (0.6 of its run: F1's blocks left their slots from
  // there) and ran to 321; K (528 blocks, 50 µs) ran alone at the end, 401-451.
  TraceBuilder b;
  b.launch(13, 0, 1, 1, 201).grid_blocks = 132 * 8;
  b.launch(14, 120, 121, 121, 321).grid_blocks = 132 * 8;
  b.launch(15, 400, 401, 401, 451).grid_blocks = 132 * 4;
  const Trace trace = b.build();
  const DeviceView view(trace, Scope{}, 0);
  const ScheduleModel model(view);
  const std::size_t f2 = at(view, 121), k = at(view, 401);
  CHECK(model.span({}) == TraceBuilder::ns(450));  // the recorded program: as it ran
  // K issued 300 µs sooner (at 101 µs) and F2 after K's end: K waits for F1's point (121 µs), not
  // its end, and takes half of its room there (121-171); F2 takes the other half at 171 and all of
  // it as F1 ends (201), and ends 15 µs after its recorded duration, at 386 µs.
  std::vector<Ns> earlier(view.ops().size(), 0);
  earlier[k] = TraceBuilder::ns(300);
  const std::vector<OrderEdge> after_k = {{k, f2}};
  CHECK(model.span(after_k, earlier) == TraceBuilder::ns(385));
}

TEST_CASE("a device-filling kernel that ran alone frees its slots from the point a what-if gives it, to its takers") {
  // F (1056 blocks, the whole device by its limits) runs alone from 1 to 201 µs: the trace shows
  // no point where its slots free. J (2112 blocks: 2 rounds of 60 µs blocks) ran after it on
  // another stream, 301-421. Issued 300 µs sooner (at 1 µs) it waits for F's end: 201-321.
  TraceBuilder b;
  b.launch(13, 0, 1, 1, 201).grid_blocks = 132 * 8;
  b.launch(14, 300, 301, 301, 421).grid_blocks = 132 * 8 * 2;
  const Trace trace = b.build();
  const DeviceView view(trace, Scope{}, 0);
  const ScheduleModel model(view);
  const std::size_t f = at(view, 1), j = at(view, 301);
  std::vector<Ns> earlier(view.ops().size(), 0);
  earlier[j] = TraceBuilder::ns(300);
  CHECK(model.span({}, earlier) == TraceBuilder::ns(320));
  // With F's slots freeing from its middle (101 µs) J takes them there and shares them with F's
  // last blocks as a drained wave's (half of the SMs held at 101 µs, none at 201): its 60 µs
  // blocks finish inside that drain, so it loses the SM time those blocks hold, 100 x 0.5 / 2 =
  // 25 µs, and ends at 246 µs.
  CHECK(model.withSlotsFreeingAt({f}, 0.5f, {j}).span({}, earlier) == TraceBuilder::ns(245));
  // A kernel not among the takers still waits for F's end.
  CHECK(model.withSlotsFreeingAt({f}, 0.5f, {}).span({}, earlier) == TraceBuilder::ns(320));
  // A one-round kernel of blocks as long as F's (1056 blocks of 200 µs) placed in those slots
  // ends in step with the last one F frees: a duration after F's end, as without the point.
  TraceBuilder one;
  one.launch(13, 0, 1, 1, 201).grid_blocks = 132 * 8;
  one.launch(14, 300, 301, 301, 501).grid_blocks = 132 * 8;
  const Trace one_trace = one.build();
  const DeviceView one_view(one_trace, Scope{}, 0);
  const ScheduleModel one_model(one_view);
  std::vector<Ns> one_earlier(one_view.ops().size(), 0);
  one_earlier[at(one_view, 301)] = TraceBuilder::ns(300);
  // (ho33) With the block-end spread of min(1.2 rounds, 200 µs) its own spread holds its whole
  // duration (blocks inferred short): the early slots gain, 325 µs, not the in-step 400.
  CHECK(one_model.withSlotsFreeingAt({at(one_view, 1)}, 0.5f, {at(one_view, 301)}).span({}, one_earlier) ==
        TraceBuilder::ns(325));
}

TEST_CASE("a multi-wave kernel started beside earlier kernels on every SM loses part of whole rounds") {
  // Three 132-block kernels (a block on every SM each: 3 of the 8 slots a 256-thread grid has per
  // SM) run from 1 to 251 µs; a 2-wave kernel (400 µs alone: rounds of 200 µs blocks) ran alone
  // from 501 to 901. Issued 400 µs sooner it starts at 101 on the 5/8 of the device they leave
  // (g000322's second 2112x256 kernel). The fluid share loses 3/8 x 150 µs (ends 557.25); greedy
  // whole rounds run the held slots' two blocks from 251 (ends 251 + 400 = 651); it ends midway,
  // 604.1 µs.
  auto build = [](double holders_end) {
    TraceBuilder b;
    for (std::uint32_t s = 13; s <= 15; ++s) b.launch(s, 0, 1, 1, holders_end).grid_blocks = 132;
    b.launch(16, 500, 501, 501, 901).grid_blocks = 132 * 8 * 2;
    return b.build();
  };
  const Trace trace = build(251);
  const DeviceView view(trace, Scope{}, 0);
  const ScheduleModel model(view);
  CHECK(model.span({}) == TraceBuilder::ns(900));  // the recorded program: as it ran
  std::vector<Ns> earlier(view.ops().size(), 0);
  earlier[at(view, 501)] = TraceBuilder::ns(400);
  const Ns rounds = model.span({}, earlier);
  CHECK(rounds >= TraceBuilder::ns(602));
  CHECK(rounds <= TraceBuilder::ns(606));
  // Held a round or longer (to 351 µs: 250 µs): the free slots run more blocks meanwhile, and the
  // fluid share stands: 101 + 400 + 3/8 x 250 = 594.75 µs.
  const Trace long_trace = build(351);
  const DeviceView long_view(long_trace, Scope{}, 0);
  const ScheduleModel long_model(long_view);
  std::vector<Ns> long_earlier(long_view.ops().size(), 0);
  long_earlier[at(long_view, 501)] = TraceBuilder::ns(400);
  const Ns fluid = long_model.span({}, long_earlier);
  CHECK(fluid >= TraceBuilder::ns(592));
  CHECK(fluid <= TraceBuilder::ns(597));
}

TEST_CASE("a multi-wave kernel started beside earlier kernels short of a block on every SM keeps the fluid share") {
  // As above, but the three earlier kernels have 66 blocks each (half the SMs, 1/16 of the slots
  // each: kBlockOnEverySmShare not reached): SMs they leave free take the blocks the held slots
  // would run, and the fluid share stands: 101 + 400 + 3/16 x 150 = 529.1 µs (whole rounds would
  // end it at 651, midway 590).
  TraceBuilder b;
  for (std::uint32_t s = 13; s <= 15; ++s) b.launch(s, 0, 1, 1, 251).grid_blocks = 66;
  b.launch(16, 500, 501, 501, 901).grid_blocks = 132 * 8 * 2;
  const Trace trace = b.build();
  const DeviceView view(trace, Scope{}, 0);
  const ScheduleModel model(view);
  std::vector<Ns> earlier(view.ops().size(), 0);
  earlier[at(view, 501)] = TraceBuilder::ns(400);
  const Ns fluid = model.span({}, earlier);
  CHECK(fluid >= TraceBuilder::ns(527));
  CHECK(fluid <= TraceBuilder::ns(532));
}

TEST_CASE("blocks displaced by held SMs end a kernel later unless its last wave has room") {
  using diagnosis::blocksEndWithSlotsHeld;
  // Two full waves of 100 µs blocks: unheld they end at 200 µs. A tenth of the SMs held for 30 µs:
  // the blocks they would have run start 30 µs late, and so do those after them on those SMs.
  CHECK(blocksEndWithSlotsHeld(2.0, 100, 0.0, 0) == 200);
  CHECK(blocksEndWithSlotsHeld(2.0, 100, 0.1, 30) == 230);
  // A last wave of half the SMs: the displaced blocks fit beside it.
  CHECK(blocksEndWithSlotsHeld(1.5, 100, 0.1, 30) == 200);
  // Held longer than a block: the held SMs run fewer blocks, the others take them.
  CHECK(blocksEndWithSlotsHeld(1.5, 100, 0.5, 250) == 300);
}

TEST_CASE("a higher-priority kernel takes the SMs of a multi-wave kernel's wave in progress") {
  // K, two full waves of 400 µs from 1 µs; J (64 blocks, 30 µs) on another stream is ready at
  // 101 µs and waits for the middle of K's last wave (601 µs), where it shares the SMs with K's
  // last blocks (half of them, falling to none at 801 µs: it runs at 0.5 rising, done after
  // 53 µs), then its stream copies out for 300 µs (span 953 µs). At a higher priority J
  // starts when K's first wave ends (401 µs) and ends at 431 µs, and the copy at 731 µs; K's
  // blocks that J displaced run 30 µs late (its last wave is full), so K ends at 831 µs.
  const auto build = [](std::uint32_t k_blocks) {
    TraceBuilder b;
    b.launch(13, 0, 1, 1, 801).grid_blocks = k_blocks;
    b.launch(14, 100, 101, 801, 831);
    b.copyCall("cudaMemcpyAsync_v3020", 14, 102, 103, 831, 1131, CopyKind::kDtoH);
    return b.build();
  };
  const Trace trace = build(132 * 8 * 2);
  const DeviceView view(trace, Scope{}, 0);
  const ScheduleModel model(view);
  CHECK(model.span({}) == 952'982);
  CHECK(model.withPriority({at(view, 801)}).span({}) == TraceBuilder::ns(830));
  // With room in K's last wave the displaced blocks fit there: K ends when it did, at 801 µs.
  const Trace room = build(132 * 8 * 2 - 128);
  const DeviceView room_view(room, Scope{}, 0);
  CHECK(ScheduleModel(room_view).withPriority({at(room_view, 801)}).span({}) == TraceBuilder::ns(800));
  // Ready in K's last wave (501 µs), J waits for that wave's middle at any priority: K placed all
  // its blocks. It ends at 654 µs, beside K's last blocks; K ends at 801.
  TraceBuilder late;
  late.launch(13, 0, 1, 1, 801).grid_blocks = 132 * 8 * 2;
  late.launch(14, 500, 501, 801, 831);
  const Trace late_trace = late.build();
  const DeviceView late_view(late_trace, Scope{}, 0);
  CHECK(ScheduleModel(late_view).withPriority({at(late_view, 801)}).span({}) == TraceBuilder::ns(800));
}

TEST_CASE("a higher-priority kernel takes a ragged kernel's SMs in the second half of its wave") {
  // K: 2112 blocks (two waves of 400 µs) from 1 µs; J: one block, ready at 101 µs, ran 30 µs after
  // K; then its stream copies out for 700 µs. At a higher priority J waits for K's first wave to
  // end (401 µs): span 1130 µs. Where K's blocks end spread over each wave's second half (the
  // trace showed a kernel placed in its last wave well before it ended), J takes the SMs freed
  // there once its share of them has freed: at the wave's middle (201 µs) plus half a wave times
  // its share; the copy ends 200 µs sooner than at the wave's end.
  TraceBuilder b;
  b.launch(13, 0, 1, 1, 801).grid_blocks = 132 * 8 * 2;
  b.launch(14, 100, 101, 801, 831);
  b.copyCall("cudaMemcpyAsync_v3020", 14, 102, 103, 831, 1531, CopyKind::kDtoH);
  const Trace trace = b.build();
  const DeviceView view(trace, Scope{}, 0);
  const ScheduleModel model(view);
  CHECK(model.withPriority({at(view, 801)}).span({}) == TraceBuilder::ns(1130));
  const Ns ragged = model.withPriority({at(view, 801)}, {at(view, 1)}).span({});
  const auto share = static_cast<Ns>(model.share(at(view, 801)) * 200'000.0);
  CHECK(share < TraceBuilder::ns(100));
  CHECK(ragged >= TraceBuilder::ns(930) + share - 1'000);
  CHECK(ragged <= TraceBuilder::ns(930) + share + 1'000);
}

TEST_CASE("a stream's queued op starts the trace's hand-off after the previous one, in its lane") {
  // Three kernels of 100 µs on stream 13, all launched before the first ended, each starting
  // 4 µs after the previous one ended (the device handing the stream over): the model runs them
  // with the hand-off, as recorded (308 µs). Split over lanes, kernels of different lanes pay none
  // between them.
  TraceBuilder b;
  b.launch(13, 0, 1, 1, 101).grid_blocks = 8;
  b.launch(13, 2, 3, 105, 205).grid_blocks = 8;
  b.launch(13, 4, 5, 209, 309).grid_blocks = 8;
  const Trace trace = b.build();
  const DeviceView view(trace, Scope{}, 0);
  const ScheduleModel model(view);
  CHECK(model.span({}) == TraceBuilder::ns(308));
  CHECK(model.withLanes({1, 2, 1}).span({}) == TraceBuilder::ns(204));
}

TEST_CASE("a copy engine takes its recorded turnaround between queued copies") {
  // Three HtoD copies issued at once, each 10 µs, 1.5 µs apart on the engine: the model keeps the
  // gaps (span 33 µs, not 30). A copy a what-if removes (duration 0) costs no turnaround: without
  // the middle one the last starts 1.5 µs after the first ends.
  TraceBuilder b;
  b.copyCall("cudaMemcpyAsync_v3020", 13, 0, 1, 10, 20, CopyKind::kHtoD);
  b.copyCall("cudaMemcpyAsync_v3020", 13, 1, 2, 21.5, 31.5, CopyKind::kHtoD);
  b.copyCall("cudaMemcpyAsync_v3020", 13, 2, 3, 33, 43, CopyKind::kHtoD);
  const Trace trace = b.build();
  const DeviceView view(trace, Scope{}, 0);
  const ScheduleModel model(view);
  CHECK(model.span({}) == TraceBuilder::ns(33));
  CHECK(model.span({}, {}, {{at(view, 21.5), 0}}) == TraceBuilder::ns(21.5));
}

// Three pinned uploads on one stream that the trace ran one at a time: calls at 0, 20 and 40 µs
// (1 µs each), copies 2 µs after each call began, 1 µs long; `bytes` each (0: TraceBuilder's own).
Trace threeUploads(std::uint64_t bytes) {
  TraceBuilder b;
  for (int i = 0; i < 3; ++i) {
    auto& copy =
        b.copyCall("cudaMemcpyAsync_v3020", 13, 20.0 * i, 20.0 * i + 1, 20.0 * i + 2, 20.0 * i + 3, CopyKind::kHtoD);
    if (bytes > 0) copy.bytes = bytes;
  }
  return b.build();
}

TEST_CASE("a small pinned upload that a what-if queues runs at its queued duration") {
  // Three 4 KiB pinned uploads the trace ran one at a time (1 µs each, their calls 20 µs apart).
  // Given their host time back, the last two queue behind the first: queued, such a copy ran
  // 2.4 µs in the lab's fixed programs (kQueuedCopyFloorNs + its bytes at 50 B/ns = 2381 ns),
  // not the 1 µs it took on an idle engine. A 1 MiB upload keeps its own duration.
  const Trace trace = threeUploads(4096);
  const DeviceView view(trace, Scope{}, 0);
  const ScheduleModel model(view);
  CHECK(model.span({}) == TraceBuilder::ns(41));
  const std::vector<Ns> earlier = {0, TraceBuilder::ns(20), TraceBuilder::ns(40)};
  CHECK(model.span({}, earlier) == TraceBuilder::ns(1) + 2 * 2381);

  const Trace large_trace = threeUploads(0);
  const DeviceView large_view(large_trace, Scope{}, 0);
  CHECK(ScheduleModel(large_view).span({}, earlier) == TraceBuilder::ns(3));
}

TEST_CASE("a small pinned upload the trace ran alone runs queued when released right after the engine freed") {
  // The same three uploads, given back less: the second is released 1 µs after the first copy ended
  // (its call began while the engine was still busy: kQueuedCallLeadNs), so it runs queued (2381 ns),
  // and the third, released while the second still runs, behind it. Released 3 µs after, a copy
  // finds the engine idle and keeps its 1 µs.
  const Trace trace = threeUploads(4096);
  const DeviceView view(trace, Scope{}, 0);
  const ScheduleModel model(view);
  const std::vector<Ns> soon = {0, TraceBuilder::ns(18), TraceBuilder::ns(36)};
  CHECK(model.span({}, soon) == TraceBuilder::ns(2) + 2 * 2381);
  const std::vector<Ns> later = {0, TraceBuilder::ns(16), TraceBuilder::ns(32)};
  CHECK(model.span({}, later) == TraceBuilder::ns(9));
}

TEST_CASE("a graph's kernel nodes hand off sooner, and the device enters a graph later") {
  // One stream, four 10 µs kernels launched up front, each queued 1.2 µs after the one before it
  // ended. As nodes of one graph the last three hand off after 256 ns; the graph's first kernel,
  // queued behind a kernel launched on its own, starts the stream's handoff plus the entry after
  // it (the fixed programs' own traces: 2.9 µs against 1.2 for a queued kernel).
  TraceBuilder b;
  b.launch(13, 0, 1, 2, 12);
  b.launch(13, 1, 2, 13.2, 23.2);
  b.launch(13, 2, 3, 24.4, 34.4);
  b.launch(13, 3, 4, 35.6, 45.6);
  const Trace trace = b.build();
  const DeviceView view(trace, Scope{}, 0);
  const Ns handoff = view.streamHandoff(Engine::kCompute, Engine::kCompute);
  const ScheduleModel model(view);
  const Ns span = model.span({});
  CHECK(span == 4 * TraceBuilder::ns(10) + 3 * handoff);
  const std::vector<std::int64_t> one_graph = {-1, 0, 0, 0};
  CHECK(model.withGraphNodes(one_graph, 256).span({}) == span - 2 * (handoff - 256));
  CHECK(model.withGraphNodes(one_graph, 256, 1'600).span({}) == span - 2 * (handoff - 256) + 1'600);
  // Two graphs back to back: the second's first kernel enters it after the first graph's last node.
  const std::vector<std::int64_t> two_graphs = {0, 0, 1, 1};
  CHECK(model.withGraphNodes(two_graphs, 256, 1'600).span({}) == span - 2 * (handoff - 256) + 1'600);
  // A graph's first kernel that the host releases late is not held by the entry.
  TraceBuilder late;
  late.launch(13, 0, 1, 2, 12);
  late.launch(13, 40, 41, 43, 53);
  late.launch(13, 41, 42, 54.2, 64.2);
  const Trace late_trace = late.build();
  const DeviceView late_view(late_trace, Scope{}, 0);
  const ScheduleModel late_model(late_view);
  CHECK(late_model.withGraphNodes({-1, 0, 0}, 256, 1'600).span({}) ==
        late_model.withGraphNodes({-1, 0, 0}, 256).span({}));
}

TEST_CASE("a stream hands off between engines with the delay the trace shows for queued ops") {
  // One stream: an HtoD copy, two kernels and a DtoH copy all issued up front, then a kernel the
  // host launched late. The queued ops start 5 µs after a copy (HtoD -> kernel), 1.2 µs after a
  // kernel (kernel -> kernel) and 4 µs before the DtoH copy: the model keeps those handoffs and
  // its span is the recorded 361 µs.
  TraceBuilder b;
  b.copyCall("cudaMemcpyAsync_v3020", 13, 0, 2, 2, 12, CopyKind::kHtoD);
  b.launch(13, 2, 3, 17, 117);
  b.launch(13, 3, 5, 118.2, 218.2);
  b.copyCall("cudaMemcpyAsync_v3020", 13, 5, 6, 222.2, 232.2, CopyKind::kDtoH);
  b.launch(13, 261, 263, 263, 363);
  const Trace trace = b.build();
  const DeviceView view(trace, Scope{}, 0);
  CHECK(view.streamHandoff(Engine::kH2D, Engine::kCompute) == TraceBuilder::ns(5));
  CHECK(view.streamHandoff(Engine::kCompute, Engine::kCompute) == TraceBuilder::ns(1.2));
  CHECK(view.streamHandoff(Engine::kCompute, Engine::kD2H) == TraceBuilder::ns(4));
  // Never seen queued after a DtoH copy, a kernel takes the handoff into kernels from other
  // engines; an engine to itself with no sample takes none (copy engines have their turnaround).
  CHECK(view.streamHandoff(Engine::kD2H, Engine::kCompute) == TraceBuilder::ns(5));
  CHECK(view.streamHandoff(Engine::kH2D, Engine::kH2D) == 0);
  const ScheduleModel model(view);
  CHECK(model.span({}) == TraceBuilder::ns(361));
  // The host gives the last launch 40 µs back: the kernel is queued behind the DtoH copy and
  // starts 5 µs after it ends, not right at its end (span 335.2 µs, not 330.2).
  std::vector<Ns> earlier(view.ops().size(), 0);
  earlier[at(view, 263)] = TraceBuilder::ns(40);
  CHECK(model.span({}, earlier) == TraceBuilder::ns(335.2));
}

TEST_CASE("a DtoH copy never seen queued before a kernel hands off over the host link") {
  // One stream: a kernel queued behind an HtoD copy starts 2 µs after it (HtoD -> kernel
  // measured); after a synchronize, a DtoH copy and a kernel the host issued only after it ended
  // (15 µs apart): no kernel was ever queued behind a DtoH copy. That handoff is the host link's
  // 5 µs, not the HtoD copy's 2 µs into kernels; nor was a DtoH copy ever queued behind another
  // engine's op, so the kernel -> DtoH handoff is the host link's 5 µs too (the trace shows 6 µs
  // between them), not the HtoD copy's 2 µs into kernels. A what-if that gives the last launch
  // 20 µs back queues it behind the DtoH copy: it starts 5 µs after the copy ends (span 238 ->
  // 228 µs, not 225).
  TraceBuilder b;
  b.copyCall("cudaMemcpyAsync_v3020", 13, 0, 2, 2, 12, CopyKind::kHtoD);
  b.launch(13, 2, 3, 14, 114);
  b.call("cudaStreamSynchronize_v3020", 4, 114.5);
  b.copyCall("cudaMemcpyAsync_v3020", 13, 115, 116, 120, 125, CopyKind::kDtoH);
  b.launch(13, 126, 127, 140, 240);
  const Trace trace = b.build();
  const DeviceView view(trace, Scope{}, 0);
  CHECK(view.streamHandoff(Engine::kH2D, Engine::kCompute) == TraceBuilder::ns(2));
  CHECK(view.streamHandoff(Engine::kD2H, Engine::kCompute) == TraceBuilder::ns(5));
  CHECK(view.streamHandoff(Engine::kCompute, Engine::kD2H) == TraceBuilder::ns(5));
  const ScheduleModel model(view);
  CHECK(model.span({}) == TraceBuilder::ns(238));
  std::vector<Ns> earlier(view.ops().size(), 0);
  earlier[at(view, 140)] = TraceBuilder::ns(20);
  CHECK(model.span({}, earlier) == TraceBuilder::ns(228));
}

TEST_CASE("a handoff between engines on the device is not borrowed from a host-link copy") {
  // One stream: a kernel queued behind an HtoD copy (5 µs, over the host link) and a kernel
  // queued behind it (1.2 µs); then, the host waiting for each, a device-to-device copy and a
  // kernel. The device signals a device-to-device copy's or a kernel's end itself (about a
  // microsecond on an H100): never seen queued, those pairs take no handoff, not the HtoD copy's
  // 5 µs into kernels nor the median of all pairs into the copy. A kernel released 5.5 µs before
  // a memset ends (its call plus the launch latency) that starts 1 µs after it is such a handoff:
  // with it, device-to-device copy -> kernel takes 1 µs.
  const auto build = [](bool queued_memset) {
    TraceBuilder b;
    b.copyCall("cudaMemcpyAsync_v3020", 13, 0, 2, 2, 12, CopyKind::kHtoD);
    b.launch(13, 2, 3, 17, 117);
    b.launch(13, 3, 5, 118.2, 218.2);
    b.call("cudaStreamSynchronize_v3020", 6, 218.5);
    b.copyCall("cudaMemcpyAsync_v3020", 13, 219, 220, 225, 226, CopyKind::kDtoD);
    b.call("cudaStreamSynchronize_v3020", 221, 226.5);
    b.launch(13, 227, 228, 235, 335);
    if (queued_memset) {
      b.memset(13, 350, 351, b.call("cudaMemsetAsync_v3020", 336, 337));
      b.launch(13, 337.5, 338.5, 352, 362);
    }
    return b.build();
  };
  const Trace alone = build(false);
  const DeviceView view(alone, Scope{}, 0);
  CHECK(view.streamHandoff(Engine::kH2D, Engine::kCompute) == TraceBuilder::ns(5));
  CHECK(view.streamHandoff(Engine::kD2D, Engine::kCompute) == 0);
  CHECK(view.streamHandoff(Engine::kCompute, Engine::kD2D) == 0);
  const Trace with_memset = build(true);
  const DeviceView measured(with_memset, Scope{}, 0);
  CHECK(measured.streamHandoff(Engine::kMemset, Engine::kCompute) == TraceBuilder::ns(1));
  CHECK(measured.streamHandoff(Engine::kD2D, Engine::kCompute) == TraceBuilder::ns(1));
}

TEST_CASE("a trace that shows no queued handoff still pays one between a host copy and a kernel") {
  // The host waits for every op (a cudaMemcpy, then a kernel it synchronizes): no stream ever has
  // an op queued behind another, so the trace measures no handoff. A what-if that queues the
  // kernel behind the copy on one stream still has the device signal the copy's end: 5 µs (an
  // H100's), never more than the trace shows between two ops of a stream on those engines (the
  // DtoH copy starts 2 µs after the kernel); a device-to-device copy, a memset or another kernel
  // hands off to a kernel in about a microsecond, which stays unmodelled (0).
  TraceBuilder b;
  b.copyCall("cudaMemcpy_v3020", test::kNullStream, 0, 20, 5, 15, CopyKind::kHtoD);
  b.launch(test::kNullStream, 25, 27, 35, 135);
  b.call("cudaStreamSynchronize_v3020", 28, 135.5);
  b.copyCall("cudaMemcpy_v3020", test::kNullStream, 136, 160, 137, 142, CopyKind::kDtoH);
  const Trace trace = b.build();
  const DeviceView view(trace, Scope{}, 0);
  CHECK(view.streamHandoff(Engine::kH2D, Engine::kCompute) == TraceBuilder::ns(5));
  CHECK(view.streamHandoff(Engine::kCompute, Engine::kD2H) == TraceBuilder::ns(2));
  CHECK(view.streamHandoff(Engine::kD2H, Engine::kH2D) == TraceBuilder::ns(5));
  CHECK(view.streamHandoff(Engine::kD2D, Engine::kCompute) == 0);
  CHECK(view.streamHandoff(Engine::kCompute, Engine::kCompute) == 0);
  CHECK(view.streamHandoff(Engine::kH2D, Engine::kH2D) == 0);
}

TEST_CASE("a handoff sample needs its op released and no other kernel running into a kernel") {
  // Stream 13: kernel A, launched onto an idle device, starts 7 µs after its call returns (the
  // launch latency); B, queued long before A ends, starts 1.2 µs after it (the handoff). C's call
  // returns 2.2 µs before B ends and C starts 10 µs after B, more than the latency after its call:
  // it was still being submitted, and its gap holds the submission, which the schedule adds as
  // C's release. D, queued, starts 20.8 µs after C while a kernel of stream 14 runs through the
  // gap (D may have waited for the SMs that kernel held, which the schedule's SM sharing adds).
  // Neither is a handoff sample: kernel to kernel stays 1.2 µs, not the median of 1.2, 10, 20.8.
  TraceBuilder b;
  b.launch(15, 0, 1, 2, 4);
  b.launch(13, 5, 6, 13, 113);
  b.launch(13, 7, 8, 114.2, 214.2);
  b.launch(13, 210, 212, 224.2, 324.2);
  b.launch(14, 295, 296, 305, 505);
  b.launch(13, 305.5, 306.5, 345, 395);
  const Trace trace = b.build();
  const DeviceView view(trace, Scope{}, 0);
  CHECK(view.launchLatency(Engine::kCompute) == TraceBuilder::ns(7));
  CHECK(view.streamHandoff(Engine::kCompute, Engine::kCompute) == TraceBuilder::ns(1.2));
}

TEST_CASE("a handoff sample between engines needs its op released well before the previous end") {
  // Stream 13: an HtoD copy, then a kernel queued 100 µs ahead of the copy's end that starts 5 µs
  // after it (a handoff sample); then a DtoH copy whose call returns 0.5 µs before the kernel ends
  // and that starts 9.5 µs after it. Released within 3 µs of the kernel's end, the copy was still
  // being taken in: its gap is no kernel -> DtoH handoff, which, never seen otherwise, takes the
  // host link's 5 µs, not 9.5.
  TraceBuilder b;
  b.launch(15, 0, 1, 2, 4);
  b.copyCall("cudaMemcpyAsync_v3020", 13, 5, 6, 7, 107, CopyKind::kHtoD);
  b.launch(13, 8, 9, 112, 212);
  b.copyCall("cudaMemcpyAsync_v3020", 13, 211, 211.5, 221.5, 231.5, CopyKind::kDtoH);
  const Trace trace = b.build();
  const DeviceView view(trace, Scope{}, 0);
  CHECK(view.streamHandoff(Engine::kH2D, Engine::kCompute) == TraceBuilder::ns(5));
  CHECK(view.streamHandoff(Engine::kCompute, Engine::kD2H) == TraceBuilder::ns(5));
}

TEST_CASE("kernels of one graph launch hand off to each other with the graph's own delay") {
  // Stream 13: three queued kernels of 10 µs launched one by one, each starting 1.2 µs after the
  // one before it ends; stream 14 replays a graph of three kernel nodes, each starting 0.3 µs
  // after the one before it. Made nodes of one graph, the first stream's kernels hand off in
  // 0.3 µs: the span (stream 13's end) is 2 x 0.9 µs shorter; nodes of two graphs keep the
  // stream's handoff between them.
  TraceBuilder b;
  b.launch(13, 0, 1, 2, 12);
  b.launch(13, 1, 2, 13.2, 23.2);
  b.launch(13, 2, 3, 24.4, 34.4);
  b.graphLaunch(14, 3, 4, 3, 5, 5, 5.3);
  const Trace trace = b.build();
  const DeviceView view(trace, Scope{}, 0);
  CHECK(view.graphNodeHandoff() == TraceBuilder::ns(0.3));
  const ScheduleModel model(view);
  CHECK(model.span({}) == TraceBuilder::ns(32.4));
  std::vector<std::int64_t> nodes(view.ops().size(), -1);
  nodes[at(view, 2)] = nodes[at(view, 13.2)] = nodes[at(view, 24.4)] = 0;
  CHECK(model.withGraphNodes(nodes, view.graphNodeHandoff()).span({}) == TraceBuilder::ns(30.6));
  nodes[at(view, 24.4)] = 1;
  CHECK(model.withGraphNodes(nodes, view.graphNodeHandoff()).span({}) == TraceBuilder::ns(31.5));
  // A graph never hands off slower than its stream did.
  CHECK(model.withGraphNodes(nodes, TraceBuilder::ns(5)).span({}) == TraceBuilder::ns(32.4));
}

// A synchronizing loop: each step launches a 100 µs kernel, synchronizes, then runs 50 µs of its
// own code before the next launch.
TraceBuilder synchronizingLoop(int steps) {
  TraceBuilder b;
  for (int i = 0; i < steps; ++i) {
    const double t = 160.0 * i;
    b.launch(13, t, t + 2, t + 3, t + 103);
    b.call("cudaDeviceSynchronize_v3020", t + 4, t + 105);
  }
  return b;
}

TEST_CASE("an asynchronous copy the driver held is released at its start, not its call's") {
  // A kernel on stream 13 (2-102), then a cudaMemcpyAsync to it called at 20 that returned at 160,
  // its copy run 150-170. As a call that blocked until its op ran, the copy is released 50 µs
  // after its call began (its startup after the kernel ended) and runs right after the kernel; as
  // a call the driver held (another thread's allocation) that submitted it as it was let go, it
  // runs when it did.
  TraceBuilder b;
  b.launch(13, 0, 1, 2, 102);
  b.copyCall("cudaMemcpyAsync_v3020", 13, 20, 160, 150, 170, CopyKind::kHtoD);
  const Trace trace = b.build();
  const DeviceView view(trace, Scope{}, 0);
  const HostTimeline host = buildHostTimeline(view);
  CHECK(ScheduleModel(view, host).span({}) < TraceBuilder::ns(130));
  CHECK(ScheduleModel(view, host, {}, {at(view, 150)}).span({}) == TraceBuilder::ns(168));
}

TEST_CASE("with the host modelled, a faster kernel lets a synchronizing loop run ahead") {
  const Trace trace = synchronizingLoop(3).build();
  const DeviceView view(trace, Scope{}, 0);
  const HostTimeline host = buildHostTimeline(view);
  REQUIRE(host.barriers.size() == 3);
  const ScheduleModel model(view, host);
  // The recorded 420 µs: each kernel starts the trace's 1 µs launch latency after its call.
  CHECK(model.span({}) == TraceBuilder::ns(420));
  // Kernels of 40 µs instead of 100: each synchronize returns 60 µs sooner, and so does every
  // later launch: 3 x 60 µs, and the launch after each of the first two synchronizes resumes from
  // a 39 µs block, not a 99 µs one (launchAfterSleep). Without the host modelled the launches
  // stay where they were and only the last kernel's 60 µs come off.
  std::vector<FasterOp> faster;
  for (std::size_t p = 0; p < view.ops().size(); ++p) faster.push_back({p, TraceBuilder::ns(40)});
  const Ns resumed = launchAfterSleep(TraceBuilder::ns(99)) - launchAfterSleep(TraceBuilder::ns(39));
  // (to a few ns: the schedule's blocks are not exactly the trace's 99 and 39 µs)
  CHECK(std::abs(model.span({}, {}, faster) - (TraceBuilder::ns(420 - 3 * 60) - 2 * resumed)) <= 10);
  CHECK(ScheduleModel(view).span({}, {}, faster) == TraceBuilder::ns(360));
}

TEST_CASE("a synchronize that no longer waits lets the host launch the next step sooner") {
  const Trace trace = synchronizingLoop(3).build();
  const DeviceView view(trace, Scope{}, 0);
  const HostTimeline host = buildHostTimeline(view);
  const ScheduleModel model(view, host);
  std::vector<CallChange> removed;
  for (const auto& barrier : host.barriers) removed.push_back({barrier.call, false, 0});
  // The host reaches each next launch 55 µs of its own code after the previous synchronize
  // began (instead of after it returned): kernels back to back, 3 x 100 µs.
  CHECK(model.span({}, {}, {}, removed) == TraceBuilder::ns(300));
}

TEST_CASE("a thread without blocking calls follows its process's last blocking call") {
  // Thread 1 launches and synchronizes; thread 2 (PyTorch's autograd thread) launches a kernel
  // after each synchronize: it moves with them.
  TraceBuilder b = synchronizingLoop(2);
  const std::uint32_t corr = b.call("cudaLaunchKernel_v7000", 110, 112);
  b.trace().runtime_calls.back().tid = 2;
  b.kernel(13, 113, 143, corr);
  const Trace trace = b.build();
  const DeviceView view(trace, Scope{}, 0);
  const HostTimeline host = buildHostTimeline(view);
  const std::size_t other = at(view, 113);
  REQUIRE(host.barrier_of[other] == 0);
  const ScheduleModel model(view, host);
  std::vector<FasterOp> faster = {{at(view, 3), TraceBuilder::ns(40)}};
  // The first kernel 60 µs shorter: the first synchronize, thread 2's kernel and the second step
  // all move 60 µs earlier, and what follows the synchronize's 39 µs block (not 99) resumes sooner.
  const Ns resumed = launchAfterSleep(TraceBuilder::ns(99)) - launchAfterSleep(TraceBuilder::ns(39));
  CHECK(model.span({}, {}, faster) == model.span({}) - TraceBuilder::ns(60) - resumed);
}

TEST_CASE("an op ends once: a synchronize waits for all it waited for when a copy's end is queued again unchanged") {
  // A 500 µs kernel on stream 13 (5-505) and a download on stream 14 (6-106); another thread's
  // upload on stream 15 starts 10 ns before the download ends, so the duplex slowdown the schedule
  // gives the download rounds to nothing and its end is queued a second time, unchanged. A device
  // synchronize (12-506) waits for the kernel and the download; the kernel launched after it on
  // stream 16 (510-610) waits for the 500 µs kernel too. The download ending twice once counted
  // for both and made the synchronize return with it (lab g000310: a split's schedule let a
  // cudaFree return before the kernel it waited for, 595 µs claimed where the split saved 20).
  TraceBuilder b;
  b.launch(13, 1, 3, 5, 505);
  b.copyCall("cudaMemcpyAsync_v3020", 14, 4, 6, 6, 106, CopyKind::kDtoH);
  b.deviceSynchronize(12, 506);
  b.copyCall("cudaMemcpyAsync_v3020", 15, 105.5, 105.99, 105.99, 125.99, CopyKind::kHtoD);
  b.trace().runtime_calls.back().tid = 2;
  b.launch(16, 507, 509, 510, 610);
  const Trace trace = b.build();
  const DeviceView view(trace, Scope{}, 0);
  const HostTimeline host = buildHostTimeline(view);
  REQUIRE(host.barriers.size() == 1);
  REQUIRE(host.barriers[0].waited_for.size() == 2);
  const ScheduleModel model(view, host);
  const diagnosis::ScheduleEdgeCheck check;
  const std::uint64_t broken = diagnosis::brokenEdgeSchedules();
  CHECK(std::abs(model.span({}) - TraceBuilder::ns(605)) <= TraceBuilder::ns(2));
  CHECK(diagnosis::brokenEdgeSchedules() == broken);
}

TEST_CASE("a synchronize still waits for what it waited for when another thread's op ends after it") {
  // Thread 1 launches a 500 µs kernel and synchronizes the device (10-505), then launches a
  // second kernel. Thread 2 launched a short kernel on another stream (5-7) that the device ran
  // only after the synchronize returned (506-510): it was submitted after the call began, so the
  // call did not wait for it, but it did wait for thread 1's kernel.
  TraceBuilder b;
  b.launch(13, 1, 2, 3, 503);
  b.call("cudaDeviceSynchronize_v3020", 10, 505);
  b.launch(14, 5, 7, 506, 510);
  b.trace().runtime_calls.back().tid = 2;
  b.launch(13, 507, 508, 509, 609);
  const Trace trace = b.build();
  const DeviceView view(trace, Scope{}, 0);
  const HostTimeline host = buildHostTimeline(view);
  REQUIRE(host.barriers.size() == 1);
  CHECK(host.barriers[0].waited_for == std::vector<std::size_t>{at(view, 3)});
  CHECK(host.barriers[0].own == TraceBuilder::ns(2));
  // With a 100 µs first kernel the synchronize returns 400 µs sooner, and so does the launch
  // after it (resuming from a 93 µs block, not a 493 µs one): both of thread 1's kernels move.
  const ScheduleModel model(view, host);
  const std::vector<FasterOp> faster = {{at(view, 3), TraceBuilder::ns(100)}};
  const Ns resumed = launchAfterSleep(TraceBuilder::ns(493)) - launchAfterSleep(TraceBuilder::ns(93));
  CHECK(model.span({}, {}, faster) == model.span({}) - TraceBuilder::ns(400) - resumed);
}

TEST_CASE("a blocking copy wakes as slowly after a long wait as its sleep says") {
  // copyReturnAfterSleep: nothing under 0.17 ms, 7.2 µs at 1.7 ms, held at 16.5 µs beyond 5.5 ms.
  CHECK(copyReturnAfterSleep(TraceBuilder::ns(100)) == 0);
  CHECK(copyReturnAfterSleep(TraceBuilder::ns(1700)) == TraceBuilder::ns(7.2));
  CHECK(copyReturnAfterSleep(TraceBuilder::ns(900)) > copyReturnAfterSleep(TraceBuilder::ns(600)));
  CHECK(copyReturnAfterSleep(TraceBuilder::ns(20000)) == TraceBuilder::ns(16.5));
  // A thread alone in its process: 1.6 µs at 1.7 ms, held at 2.9 µs beyond 5.5 ms.
  CHECK(copyReturnAfterSleep(TraceBuilder::ns(100), true) == 0);
  CHECK(copyReturnAfterSleep(TraceBuilder::ns(1700), true) == TraceBuilder::ns(1.6));
  CHECK(copyReturnAfterSleep(TraceBuilder::ns(20000), true) == TraceBuilder::ns(2.9));
  // Thread 1 launches a 1 ms kernel, then a synchronous DtoH cudaMemcpy that sleeps until the
  // kernel ends (1003 µs), drives its 4 µs op and returns; 16 µs later it launches a 100 µs
  // kernel. With a 100 µs first kernel the copy sleeps 103 µs: it returns, and the launch after it
  // comes, sooner by what the shorter sleep takes off both (launchAfterSleep,
  // copyReturnAfterSleep, the curve of a thread alone: no other thread calls).
  TraceBuilder b;
  b.launch(13, 0, 2, 5, 1005);
  b.copyCall("cudaMemcpy_v3020", 13, 3, 1014, 1006, 1010, CopyKind::kDtoH);
  b.launch(13, 1030, 1032, 1035, 1135);
  const Trace trace = b.build();
  const DeviceView view(trace, Scope{}, 0);
  const HostTimeline host = buildHostTimeline(view);
  REQUIRE(host.barriers.size() == 1);
  const ScheduleModel model(view, host);
  const std::vector<FasterOp> faster = {{at(view, 5), TraceBuilder::ns(100)}};
  const Ns resumed = launchAfterSleep(TraceBuilder::ns(1003)) - launchAfterSleep(TraceBuilder::ns(103)) +
                     copyReturnAfterSleep(TraceBuilder::ns(1003), true) -
                     copyReturnAfterSleep(TraceBuilder::ns(103), true);
  CHECK(resumed > TraceBuilder::ns(4));
  CHECK(std::abs(model.span({}) - model.span({}, {}, faster) - (TraceBuilder::ns(900) + resumed)) <= 10);
}

TEST_CASE("a blocking copy wakes later after a long wait where other threads call") {
  // The program above with a second thread that only creates an event meanwhile: the process
  // has another calling thread, so the copy's return takes the pooled curve (7.2 µs at 1.7 ms
  // against the thread alone's 1.6), and the faster kernel takes more off the span.
  const auto build = [](bool second_thread) {
    TraceBuilder b;
    b.launch(13, 0, 2, 5, 1005);
    b.copyCall("cudaMemcpy_v3020", 13, 3, 1014, 1006, 1010, CopyKind::kDtoH);
    b.launch(13, 1030, 1032, 1035, 1135);
    if (second_thread) {
      b.call("cudaEventCreate_v3020", 500, 502);
      b.trace().runtime_calls.back().tid = 2;
    }
    return b.build();
  };
  const auto saving = [](const Trace& trace) {
    const DeviceView view(trace, Scope{}, 0);
    const HostTimeline host = buildHostTimeline(view);
    REQUIRE(host.barriers.size() == 1);
    const ScheduleModel model(view, host);
    const std::vector<FasterOp> faster = {{at(view, 5), TraceBuilder::ns(100)}};
    return model.span({}) - model.span({}, {}, faster);
  };
  const Trace alone = build(false);
  const Trace beside = build(true);
  const auto longer = [](bool one_thread) {
    return copyReturnAfterSleep(TraceBuilder::ns(1003), one_thread) -
           copyReturnAfterSleep(TraceBuilder::ns(103), one_thread);
  };
  const Ns difference = longer(false) - longer(true);
  CHECK(difference > TraceBuilder::ns(1));
  CHECK(std::abs(saving(beside) - saving(alone) - difference) <= 10);
}

TEST_CASE("a synchronize waited for its own thread's work even when the device clock runs ahead") {
  // The device's timestamps 3 µs ahead of the host's: each kernel is recorded ending 1 µs after
  // the synchronize that waited for it returned. The thread launched it before the call, so the
  // call waited for it: with 40 µs kernels the loop still runs ahead, 3 x 60 µs.
  TraceBuilder b;
  for (int i = 0; i < 3; ++i) {
    const double t = 160.0 * i;
    b.launch(13, t, t + 2, t + 6, t + 106);
    b.call("cudaDeviceSynchronize_v3020", t + 4, t + 105);
  }
  const Trace trace = b.build();
  const DeviceView view(trace, Scope{}, 0);
  const HostTimeline host = buildHostTimeline(view);
  REQUIRE(host.barriers.size() == 3);
  for (const auto& barrier : host.barriers) {
    CHECK(barrier.waited_for.size() == 1);
    CHECK(barrier.own == 0);
  }
  const ScheduleModel model(view, host);
  std::vector<FasterOp> faster;
  for (std::size_t p = 0; p < view.ops().size(); ++p) faster.push_back({p, TraceBuilder::ns(40)});
  const Ns resumed = launchAfterSleep(TraceBuilder::ns(102)) - launchAfterSleep(TraceBuilder::ns(42));
  CHECK(std::abs(model.span({}) - model.span({}, {}, faster) - (TraceBuilder::ns(3 * 60) + 2 * resumed)) <= 10);
}

TEST_CASE("a kernel launched onto an idle device starts the trace's launch latency after its call") {
  // Each step launches a 100 µs kernel (call 0-2 µs) that starts 6 µs after its call returned on
  // an idle device, and synchronizes (returning 1 µs after the kernel ended); the next step begins
  // 200 µs later. Recorded span: 8 to 508 µs.
  TraceBuilder b;
  for (int i = 0; i < 3; ++i) {
    const double t = 200.0 * i;
    b.launch(13, t, t + 2, t + 8, t + 108);
    b.call("cudaDeviceSynchronize_v3020", t + 3, t + 109);
  }
  const Trace trace = b.build();
  const DeviceView view(trace, Scope{}, 0);
  CHECK(view.launchLatency(Engine::kCompute) == TraceBuilder::ns(6));
  CHECK(view.launchLatency(Engine::kH2D) == 0);  // no copy: nothing measured
  const HostTimeline host = buildHostTimeline(view);
  const ScheduleModel model(view, host);
  // The schedule of the recorded constraints is the trace's (without the latency: 12 µs short,
  // the two later kernels each starting at their call's return).
  CHECK(model.span({}) == TraceBuilder::ns(500));
  // Without the synchronizes the host launches ahead and each later kernel queues behind the one
  // before: it starts at the hand-off (0: the trace shows no queued pair), the latency hidden.
  std::vector<CallChange> removed;
  for (const auto& barrier : host.barriers) removed.push_back({barrier.call, false, 0});
  CHECK(model.span({}, {}, {}, removed) == TraceBuilder::ns(300));
}

TEST_CASE("an op queued behind its stream's previous op starts at the hand-off, not after the latency") {
  // X: a 3 µs kernel of another stream starting the span. A: call 20-22 µs, starts 28 on the idle
  // device (6 µs latency), 100 µs. B: launched at 30-32 µs while A runs, starts 2 µs after A
  // ends: the trace's kernel-to-kernel hand-off. B does not count toward the latency (the device
  // was busy before it started), nor X (its call returned before the span began).
  TraceBuilder b;
  b.launch(14, 0, 1, 2, 5);
  b.launch(13, 20, 22, 28, 128);
  b.launch(13, 30, 32, 130, 230);
  const Trace trace = b.build();
  const DeviceView view(trace, Scope{}, 0);
  CHECK(view.launchLatency(Engine::kCompute) == TraceBuilder::ns(6));
  CHECK(view.streamHandoff(Engine::kCompute, Engine::kCompute) == TraceBuilder::ns(2));
  const ScheduleModel model(view);
  CHECK(model.span({}) == TraceBuilder::ns(228));
  // A 5 µs long: B is no longer queued when its call returns, and starts the latency after it
  // (38 µs), not at A's end plus the hand-off (35 µs).
  CHECK(model.span({}, {}, {{at(view, 28), TraceBuilder::ns(5)}}) == TraceBuilder::ns(136));
}

TEST_CASE("the host's launches follow a synchronize that returned before its kernel's recorded end by their recorded time after that end") {
  // The device's timestamps 3 µs ahead of the host's (as in the test above): each synchronize is
  // recorded returning 1 µs before its kernel ends. The schedule returns it as the kernel ends; the
  // next step's launch follows by its recorded time after that end, so the recorded constraints
  // give back the recorded span instead of one that grows 1 µs a step.
  TraceBuilder b;
  for (int i = 0; i < 4; ++i) {
    const double t = 160.0 * i;
    b.launch(13, t, t + 2, t + 6, t + 106);
    b.call("cudaDeviceSynchronize_v3020", t + 4, t + 105);
  }
  const Trace trace = b.build();
  const DeviceView view(trace, Scope{}, 0);
  const ScheduleModel model(view, buildHostTimeline(view));
  CHECK(model.span({}) == view.spanLength());
}

TEST_CASE("a kernel its thread issues sooner in a what-if queues ahead of another thread's") {
  // A kernel that fills the device runs from 2 to 102 µs. Thread 1 issues a 2-wave kernel at
  // 10 µs (it runs from 102 to 302), thread 2 a 64-block kernel at 20 µs, which waited behind it
  // to the middle of its last wave (252 µs) and, sharing those SMs with the wave's last blocks,
  // ended 12.5 µs late: span 362.5 µs.
  TraceBuilder b;
  b.launch(13, 0, 1, 2, 102).grid_blocks = 132 * 8;
  b.launch(14, 10, 11, 102, 302).grid_blocks = 132 * 8 * 2;
  b.launch(15, 20, 21, 252, 352).grid_blocks = 64;
  b.trace().runtime_calls.back().tid = 2;
  const Trace trace = b.build();
  const DeviceView view(trace, Scope{}, 0);
  const ScheduleModel model(view);
  CHECK(model.span({}) == TraceBuilder::ns(362.5));
  std::vector<Ns> earlier(view.ops().size(), 0);
  CHECK(model.span({}, earlier) == TraceBuilder::ns(362.5));
  // Thread 2 given 15 µs of host time back issues its kernel at 5 µs, before thread 1's: the
  // block scheduler serves it first as the device frees up, and the 2-wave kernel starts beside it,
  // on the SMs it leaves: its blocks advance at 992 / 1056 of the rate they had alone in the trace
  // until the 64-block kernel ends (100 µs), and it ends 100 x 64 / 1056 µs later, at 308.1 µs.
  earlier[at(view, 252)] = TraceBuilder::ns(15);
  CHECK(model.span({}, earlier) == 306'060);
}

TEST_CASE("a thread issues a legacy-stream op only after the ops its earlier work waited for") {
  // Thread 2 launches kernel A on the legacy stream (call 40-42 µs, run 43-143) and records an
  // event after it. Thread 1 makes its stream 14 wait for that event and launches B there (call
  // 50-52, run 145-245), records an event after B, makes the legacy stream wait for it and
  // launches C there (call 60-62, run 247-347), then synchronizes the device. With the legacy barrier
  // decided as the what-if issues the work (withBarrierIssueOrder) and thread 1 given 25 µs of
  // host time back before C, C's own issue time comes before A's; but thread 1 issued C after its
  // wait for A's event, which it could make only once A was issued: C queues behind A. Queued
  // ahead of it, A would wait for C, C for B and B for A: no op would run, and the span would fall
  // back to the recorded one (lab g000188, twenty-first session).
  TraceBuilder b;
  b.launch(7, 40, 42, 43, 143);
  b.trace().runtime_calls.back().tid = 2;
  b.launch(14, 50, 52, 145, 245);
  b.launch(7, 60, 62, 247, 347);
  b.call("cudaDeviceSynchronize_v3020", 70, 348);
  const Trace trace = b.build();
  const DeviceView view(trace, Scope{}, 0);
  const HostTimeline host = buildHostTimeline(view);
  REQUIRE(!host.barriers.empty());
  const std::size_t a = at(view, 43), waits = at(view, 145), c = at(view, 247);
  const std::vector<OrderEdge> events = {{a, waits, 2'000}, {waits, c, 2'000}};
  std::vector<std::int64_t> classes(view.ops().size(), -1);
  classes[a] = 0;  // context 0's legacy stream
  classes[c] = 0;
  const ScheduleModel model = ScheduleModel(view, host, events).withBarrierIssueOrder(classes);
  // B 50 µs shorter: every op runs, and the span is the schedule's, 50 µs short of the recorded
  // 304 µs; C issued 25 µs sooner still waits for B, which waits for A: the same span.
  const std::vector<FasterOp> faster = {{waits, TraceBuilder::ns(50)}};
  std::vector<Ns> earlier(view.ops().size(), 0);
  earlier[c] = TraceBuilder::ns(25);
  const std::uint64_t unrun = diagnosis::unrunSchedules();
  const Ns span = model.span(events, {}, faster);
  CHECK(span < view.spanLength() - TraceBuilder::ns(40));
  CHECK(model.span(events, earlier, faster) == span);
  CHECK(diagnosis::unrunSchedules() == unrun);
}

TEST_CASE("a synchronize waits only for the other threads' work issued before it begins") {
  // Thread 1: a kernel, a synchronize, 47 µs of host code, a second synchronize, a kernel.
  // Thread 2 (its own synchronize first) launches a 107 µs kernel at 140 µs, before thread 1's
  // second synchronize began at 150: the trace shows that one waiting for it.
  TraceBuilder b;
  b.launch(13, 0, 1, 2, 102);
  b.call("cudaDeviceSynchronize_v3020", 1.5, 103);
  b.call("cudaDeviceSynchronize_v3020", 150, 250);
  b.launch(13, 251, 252, 253, 303);
  b.streamSynchronize(14, 0.5, 1);
  b.trace().runtime_calls.back().tid = 2;
  b.launch(14, 140, 141, 142, 249);
  b.trace().runtime_calls.back().tid = 2;
  const Trace trace = b.build();
  const DeviceView view(trace, Scope{}, 0);
  const HostTimeline host = buildHostTimeline(view);
  const ScheduleModel model(view, host);
  CHECK(model.span({}) == TraceBuilder::ns(301));
  // The first kernel 60 µs shorter: thread 1 begins its second synchronize at 90 µs, before
  // thread 2 issues its kernel (thread 2 is not faster): it waits for none of it, returns after
  // its own 1 µs and launches its last kernel 3 µs later; the span ends with thread 2's kernel.
  const std::vector<FasterOp> faster = {{at(view, 2), TraceBuilder::ns(40)}};
  CHECK(model.span({}, {}, faster) == TraceBuilder::ns(249 - 2));
  // Where the other kernel was issued before the synchronize begins, it still waits for it, 5 µs
  // longer (from 145 µs), and thread 1's last launch resumes from that 104 µs block.
  const std::vector<FasterOp> slightly = {{at(view, 2), TraceBuilder::ns(95)}};
  const Ns resumed = launchAfterSleep(TraceBuilder::ns(104)) - launchAfterSleep(TraceBuilder::ns(99));
  CHECK(model.span({}, {}, slightly) == TraceBuilder::ns(301) + resumed);
}

TEST_CASE("a synchronize is no proof of waiting for work another thread launched") {
  // Thread 2 launched the kernel while thread 1's synchronize was in flight, and the kernel
  // ended after the synchronize returned: it waited for none of it.
  TraceBuilder b;
  b.call("cudaDeviceSynchronize_v3020", 10, 30);
  const std::uint32_t corr = b.call("cudaLaunchKernel_v7000", 5, 8);
  b.trace().runtime_calls.back().tid = 2;
  b.kernel(13, 20, 120, corr);
  const Trace trace = b.build();
  const DeviceView view(trace, Scope{}, 0);
  const HostTimeline host = buildHostTimeline(view);
  REQUIRE(host.barriers.size() == 1);
  CHECK(host.barriers[0].waited_for.empty());
  CHECK(host.barriers[0].own == TraceBuilder::ns(20));
}

TEST_CASE("a copy call that returned before its copy ended waited for none of it") {
  // A pageable HtoD cudaMemcpy returns once the host has staged the data, before the DMA ends.
  TraceBuilder b;
  b.copyCall("cudaMemcpy_v3020", 13, 0, 50, 40, 80, CopyKind::kHtoD, MemKind::kPageable);
  b.launch(13, 51, 52, 80, 180);
  const Trace trace = b.build();
  const DeviceView view(trace, Scope{}, 0);
  const HostTimeline host = buildHostTimeline(view);
  REQUIRE(host.barriers.size() == 1);
  CHECK(host.barriers[0].waited_for.empty());
  CHECK(host.barriers[0].own == TraceBuilder::ns(50));
}

TEST_CASE("a blocking call's op is released when the call began, after the op it waited for") {
  // Thread 2's cudaMemcpy on the legacy stream began at 10 µs, before thread 1 launched a 500 µs
  // kernel there at 20, but the driver queued it behind the kernel: its copy ran 530-550. Ops of
  // one stream count as issued in the order they ran, so the recorded order holds (the copy
  // follows the kernel: 24-524, then 529-549, after the 5 µs between them that the trace shows
  // and takes as their handoff, none being queued; the kernel started 1 µs after its launch
  // returned).
  TraceBuilder b;
  b.copyCall("cudaMemcpy_v3020", test::kNullStream, 10, 555, 530, 550, CopyKind::kHtoD);
  b.trace().runtime_calls.back().tid = 2;
  b.launch(test::kNullStream, 20, 24, 25, 525);
  const Trace trace = b.build();
  const DeviceView view(trace, Scope{}, 0);
  const ScheduleModel model(view, buildHostTimeline(view));
  CHECK(model.span({}) == TraceBuilder::ns(525));
  // The copy on a lane of its own (thread 2's own stream): released at its call's start plus the
  // 5 µs it took after the kernel ended (15 µs; nothing is released before the span's start, 25),
  // it runs beside the kernel: 500 µs. With its recorded start as release it could not move.
  std::vector<std::uint64_t> lane = {1, 2};
  REQUIRE(at(view, 25) == 0);
  CHECK(model.withLanes(lane).span({}) == TraceBuilder::ns(500));
}

TEST_CASE("a pageable cudaMemcpy first waits for its stream, then stages the data") {
  // cudaMemcpy from pageable memory synchronizes its stream before staging (CUDA's API
  // synchronization behavior) and returns once the data is staged, before the DMA ends: it waited
  // for the kernel before it, then took 5 µs of its own; its DMA (from the staging buffer, after
  // the call returned) follows the call.
  TraceBuilder b;
  b.launch(13, 0, 1, 5, 105);
  b.copyCall("cudaMemcpy_v3020", 13, 2, 110, 112, 130, CopyKind::kHtoD, MemKind::kPageable);
  const Trace trace = b.build();
  const DeviceView view(trace, Scope{}, 0);
  const HostTimeline host = buildHostTimeline(view);
  REQUIRE(host.barriers.size() == 1);
  REQUIRE(host.barriers[0].waited_for.size() == 1);
  CHECK(host.barriers[0].waited_for[0] == at(view, 5));
  CHECK(host.barriers[0].own == TraceBuilder::ns(5));
  CHECK(host.barrier_of[at(view, 112)] == 0);
  // A kernel of 40 µs instead of 100: the copy call returns 60 µs sooner, and its DMA with it.
  const ScheduleModel model(view, host);
  CHECK(model.span({}) - model.span({}, {}, {{at(view, 5), TraceBuilder::ns(40)}}) ==
        TraceBuilder::ns(60));
}

TEST_CASE("a staged copy waits for its stream's previous staged copy to leave the staging buffer") {
  // Two pageable HtoD cudaMemcpyAsync on stream 13 behind a 500 µs kernel there: the first stages
  // its data in 28 µs and returns, its DMA held behind the kernel (505-515); the second began at
  // 31 µs, but the driver stages a stream's copies one after another: it returned 29 µs after the
  // first copy's DMA ended (as recorded on an H100 with event waits holding the copies), not after
  // 514 µs of its own.
  TraceBuilder b;
  b.launch(13, 0, 1, 5, 505);
  b.copyCall("cudaMemcpyAsync_v3020", 13, 2, 30, 505, 515, CopyKind::kHtoD, MemKind::kPageable);
  b.copyCall("cudaMemcpyAsync_v3020", 13, 31, 544, 545, 555, CopyKind::kHtoD, MemKind::kPageable);
  const Trace trace = b.build();
  const DeviceView view(trace, Scope{}, 0);
  const HostTimeline host = buildHostTimeline(view);
  REQUIRE(host.barriers.size() == 2);
  CHECK(host.barriers[0].waited_for.empty());
  CHECK(host.barriers[0].staged);
  REQUIRE(host.barriers[1].waited_for.size() == 1);
  CHECK(host.barriers[1].waited_for[0] == at(view, 505));
  CHECK(host.barriers[1].own == TraceBuilder::ns(29));
  CHECK(host.barriers[1].staged);
  // A kernel of 400 µs instead of 500: the first copy ends 100 µs sooner, the second call returns
  // 100 µs sooner, and its DMA with it. Counting the call's 513 µs as its own would save nothing.
  const ScheduleModel model(view, host);
  CHECK(model.span({}) - model.span({}, {}, {{at(view, 5), TraceBuilder::ns(400)}}) ==
        TraceBuilder::ns(100));
}

TEST_CASE("a staged cudaMemcpy made pinned waits for its copy") {
  // A pageable HtoD cudaMemcpy (call 0-8 µs) returned once staged, before its DMA (9-10); the
  // thread then launched a kernel (12-13, ran 20-120). Pinned, the call starts its copy 5 µs in
  // (4 µs of staging gone) and returns 5 µs after the copy ends: at 11, not 8, and the kernel
  // follows 3 µs later. Without the wait for its copy the call returned 5 µs after it began.
  TraceBuilder b;
  b.copyCall("cudaMemcpy_v3020", 13, 0, 8, 9, 10, CopyKind::kHtoD, MemKind::kPageable);
  b.launch(13, 12, 13, 20, 120);
  const Trace trace = b.build();
  const DeviceView view(trace, Scope{}, 0);
  const HostTimeline host = buildHostTimeline(view);
  REQUIRE(host.barriers.size() == 1);
  CHECK(host.barriers[0].waited_for.empty());
  const ScheduleModel model(view, host);
  const std::size_t copy = at(view, 9);
  std::vector<Ns> earlier(view.ops().size(), 0);
  earlier[copy] = TraceBuilder::ns(4);
  const Ns own = TraceBuilder::ns(5);
  const auto call = view.launchCall(view.op(view.ops()[copy]));
  REQUIRE(call);
  const Ns returned_at_once = model.span({}, earlier, {}, {{*call, true, own}});
  const Ns waits_for_copy =
      model.span({}, earlier, {}, {{*call, true, own, 0, static_cast<std::int64_t>(copy)}});
  CHECK(waits_for_copy - returned_at_once == TraceBuilder::ns(11 - 5));
}

TEST_CASE("a memset on the legacy stream waited for the blocking streams' work before it") {
  // Thread 1 launched a 500 µs kernel on blocking stream 13 (5-505); thread 2's cudaMemset began
  // at 10 µs, its op on the legacy stream ran once the kernel had ended (552-553.2), and the call
  // returned as its op began (553: the op ends after it by the clocks' disagreement). The call
  // slept until the kernel ended, then took 48 µs of its own: not 543 µs of its own time. Thread
  // 2 then launched a kernel (560-561, ran 565-665).
  TraceBuilder b;
  b.launch(13, 0, 1, 5, 505);
  b.memset(test::kNullStream, 552, 553.2, b.call("cudaMemset_v3020", 10, 553));
  b.trace().runtime_calls.back().tid = 2;
  b.launch(test::kNullStream, 560, 561, 565, 665);
  b.trace().runtime_calls.back().tid = 2;
  const Trace trace = b.build();
  const DeviceView view(trace, Scope{}, 0);
  const HostTimeline host = buildHostTimeline(view);
  REQUIRE(host.barriers.size() == 1);
  REQUIRE(host.barriers[0].waited_for.size() == 1);
  CHECK(host.barriers[0].waited_for[0] == at(view, 5));
  CHECK(host.barriers[0].own == TraceBuilder::ns(48));
  // A kernel of 400 µs instead of 500: the memset returns 100 µs sooner, and the thread's kernel
  // with it (the memset's op, released as its call began, follows the kernel as the legacy
  // barrier orders it).
  const std::vector<OrderEdge> legacy = {{at(view, 5), at(view, 552)}};
  const ScheduleModel model(view, host, legacy);
  CHECK(model.span(legacy) - model.span(legacy, {}, {{at(view, 5), TraceBuilder::ns(400)}}) ==
        TraceBuilder::ns(100));
}

TEST_CASE("a memset whose op followed no work that ended inside its call took its own time") {
  // The driver's own work before it submits the op (22 µs), nothing before it on the device.
  TraceBuilder b;
  b.launch(13, 0, 1, 5, 8);
  b.memset(test::kNullStream, 31.8, 32.9, b.call("cudaMemset_v3020", 10, 32));
  const Trace trace = b.build();
  const DeviceView view(trace, Scope{}, 0);
  const HostTimeline host = buildHostTimeline(view);
  REQUIRE(host.barriers.size() == 1);
  CHECK(host.barriers[0].waited_for.empty());
  CHECK(host.barriers[0].own == TraceBuilder::ns(22));
}

TEST_CASE("a staged copy held by a stream wait returns as its copy ends") {
  // Stream 13 waits for a 500 µs DtoH copy of stream 14 (5-505). A pageable HtoD
  // cudaMemcpyAsync on stream 13 began at 10 µs; the wait held its DMA until 6 µs after the
  // download ended (511-611), and the call returned with it (610), as the driver stages such a
  // copy only as its DMA drains the staging buffers (g000260's 5.7 MB copies on an H100). The
  // call waited for its copy; it is not 600 µs of host time. The thread then launched a kernel.
  TraceBuilder b;
  b.copyCall("cudaMemcpyAsync_v3020", 14, 0, 1, 5, 505, CopyKind::kDtoH);
  b.eventRecord(14, 1, 2, 3);
  b.streamWaitEvent(13, 3, 4, 1);
  b.copyCall("cudaMemcpyAsync_v3020", 13, 10, 610, 511, 611, CopyKind::kHtoD, MemKind::kPageable);
  b.launch(15, 612, 613, 620, 720);
  const Trace trace = b.build();
  const DeviceView view(trace, Scope{}, 0);
  const HostTimeline host = buildHostTimeline(view);
  REQUIRE(host.barriers.size() == 1);
  REQUIRE(host.barriers[0].waited_for.size() == 1);
  CHECK(host.barriers[0].waited_for[0] == at(view, 511));
  CHECK(host.barriers[0].own == 0);
  // Without the wait the upload runs at once (16-116: released 6 µs after its call began, as it
  // started 6 µs after the download), the call returns as it ends, and the kernel follows:
  // the span ends with the download, 505 µs, not 720, and 8 µs later: upload and download
  // share the link for the upload's 100 µs, each 8% slower (kDuplexSlowdown).
  const std::vector<OrderEdge> wait = {{at(view, 5), at(view, 511), TraceBuilder::ns(6)}};
  const ScheduleModel model(view, host, wait);
  CHECK(model.span(wait) == TraceBuilder::ns(720 - 5));
  CHECK(model.savingWithout({}, wait) == TraceBuilder::ns(720 - 505 - 8));
}

TEST_CASE("a staged copy held behind its own stream's previous op returns as its copy ends") {
  // A 500 µs kernel on stream 13 (5-505). A pageable HtoD cudaMemcpyAsync on stream 13 began at
  // 10 µs and returned at 610, its copy running 511-611: the driver stages a large upload only as
  // its DMA drains the staging buffers, and the DMA waited for the kernel (lab g000117: a worker's
  // 5.9 MB upload called 14.3 ms before it ran, behind its stream's kernel that the legacy
  // stream's barrier held; in the program without that barrier the call returned with its copy,
  // 0.5 ms after the kernel's end). For the asynchronous fix's what-if the call waited for its
  // copy, not 600 µs of its own; other what-ifs keep it as its own time.
  TraceBuilder b;
  b.launch(13, 1, 3, 5, 505);
  b.copyCall("cudaMemcpyAsync_v3020", 13, 10, 610, 511, 611, CopyKind::kHtoD, MemKind::kPageable);
  b.launch(13, 612, 613, 620, 720);
  const Trace trace = b.build();
  const DeviceView view(trace, Scope{}, 0);
  const HostTimeline held = buildHostTimeline(view, pageableCopyCalls(view), true);
  REQUIRE(held.barriers.size() == 1);
  REQUIRE(held.barriers[0].waited_for.size() == 1);
  CHECK(held.barriers[0].waited_for[0] == at(view, 511));
  CHECK(held.barriers[0].own == 0);
  const HostTimeline& own = buildHostTimeline(view);
  REQUIRE(own.barriers.size() == 1);
  CHECK(own.barriers[0].waited_for.empty());
  CHECK(own.barriers[0].own == TraceBuilder::ns(600));
  // The copy must start as the kernel ends: one that started 30 µs after it waited for more.
  TraceBuilder late;
  late.launch(13, 1, 3, 5, 505);
  late.copyCall("cudaMemcpyAsync_v3020", 13, 10, 640, 535, 641, CopyKind::kHtoD, MemKind::kPageable);
  const Trace late_trace = late.build();
  const DeviceView late_view(late_trace, Scope{}, 0);
  const HostTimeline late_host = buildHostTimeline(late_view, pageableCopyCalls(late_view), true);
  REQUIRE(late_host.barriers.size() == 1);
  CHECK(late_host.barriers[0].own == TraceBuilder::ns(630));
}

}  // namespace
}  // namespace cuoverlap

namespace cuoverlap {
namespace {

TEST_CASE("a call carried past a busy call's end by its thread's earlier turn takes no turn") {
  // Thread 1 issues three calls 5 µs apart (4 µs each) while thread 2's legacy call is busy
  // over [0, 30 µs): the first takes a turn (24 µs), which carries the second to 25 µs (still
  // inside: a turn) and the third to 50 µs, past the busy call's end: no turn.
  HostTimeline host;
  host.barrier_of.assign(3, -1);
  HostTurns turns;
  turns.op_thread = {1, 1, 1};
  turns.op_call_start = {1'000, 6'000, 11'000};
  turns.op_call_end = {5'000, 10'000, 15'000};
  ScheduledHost times;
  times.release = {5'000, 10'000, 15'000};
  times.recorded_release = times.release;
  const std::vector<BusyCall> busy = {{0, 30'000, 2}};
  std::vector<std::uint8_t> candidate(3, 1);
  std::vector<CallChange> changed;
  std::vector<Ns> earlier;
  REQUIRE(addTurnsBeside(host, turns, times, busy, candidate, changed, earlier));
  CHECK(candidate == std::vector<std::uint8_t>{0, 0, 1});
  CHECK(earlier == std::vector<Ns>{-20'000, -40'000, -40'000});
}

}  // namespace
}  // namespace cuoverlap
