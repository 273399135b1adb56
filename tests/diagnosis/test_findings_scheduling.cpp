// Scheduling findings: event-wait-serialization, host-launch-bound, device-saturating-kernel.
#include <catch2/catch.hpp>

#include <cstdlib>

#include "findings_test_util.h"
#include "trace_builder.h"

namespace cuoverlap {
namespace {

using test::findingById;
using test::findingsOf;
using test::idsOf;
using test::TraceBuilder;

TEST_CASE("event-wait-serialization fires when a copy-in waits for an unrelated kernel") {
  TraceBuilder b;
  b.launch(13, 0, 2, 5, 300);
  b.streamWaitEvent(14, 3, 4);
  // The H2D copy of the next chunk was ready at 6 µs but started when the kernel ended.
  b.copyCall("cudaMemcpyAsync_v3020", 14, 5, 6, 302, 400, CopyKind::kHtoD);
  const auto findings = findingsOf(b.build());
  const Finding* f = findingById(findings, "event-wait-serialization");
  REQUIRE(f != nullptr);
  CHECK(f->count == 1);
  // Held back 296 µs, but without the wait the copy runs beside the kernel and the span (2..397 µs
  // in the what-if schedule, the kernel released when its launch returned, the copy 2 µs after it
  // ended as the wait released it) shrinks by 98 µs and those 2 µs.
  CHECK(f->time_ns == 100'000);
  CHECK(f->evidence.at(0).stream_id == 14);
}

TEST_CASE("event-wait-serialization does not fire for a kernel waiting for its input copies") {
  TraceBuilder b;
  b.copyCall("cudaMemcpyAsync_v3020", 13, 0, 1, 5, 100, CopyKind::kHtoD);
  b.copyCall("cudaMemcpyAsync_v3020", 14, 2, 3, 100, 200, CopyKind::kHtoD);
  b.streamWaitEvent(15, 4, 5);
  b.streamWaitEvent(15, 6, 7);
  b.launch(15, 8, 9, 202, 300);
  CHECK(idsOf(findingsOf(b.build())).count("event-wait-serialization") == 0);
}

TEST_CASE("event-wait-serialization does not fire for a copy-out waiting for its kernel") {
  TraceBuilder b;
  b.launch(13, 0, 2, 5, 300);
  b.streamWaitEvent(14, 3, 4);
  b.copyCall("cudaMemcpyAsync_v3020", 14, 5, 6, 302, 400, CopyKind::kDtoH);
  CHECK(idsOf(findingsOf(b.build())).count("event-wait-serialization") == 0);
}

TEST_CASE("event-wait-serialization does not blame an unrelated copy that ended with the kernel") {
  // Recorded on an H100 (event-dag): the copy-out waited for its kernel, and an input copy of
  // another stream happened to end within the same 5 µs; the kernel explains the wait.
  TraceBuilder b;
  b.launch(13, 0, 2, 5, 300);
  b.copyCall("cudaMemcpyAsync_v3020", 15, 0, 1, 200, 301, CopyKind::kHtoD);
  b.streamWaitEvent(14, 3, 4);
  b.copyCall("cudaMemcpyAsync_v3020", 14, 5, 6, 302, 400, CopyKind::kDtoH);
  CHECK(idsOf(findingsOf(b.build())).count("event-wait-serialization") == 0);
}

TEST_CASE("event-wait-serialization needs synchronization records") {
  TraceBuilder b;
  b.launch(13, 0, 2, 5, 300);
  b.call("cudaStreamWaitEvent_v3020", 3, 4);
  b.copyCall("cudaMemcpyAsync_v3020", 14, 5, 6, 302, 400, CopyKind::kHtoD);
  CHECK(idsOf(findingsOf(b.build())).count("event-wait-serialization") == 0);
}

// `n` kernels of `kernel_us`, each launched by a call that takes `launch_us` after the previous
// launch returned: the device waits for the host whenever launch_us > kernel_us.
TraceBuilder launchLoop(int n, double kernel_us, double launch_us) {
  TraceBuilder b;
  double host = 0;
  double device_free = 0;
  for (int i = 0; i < n; ++i) {
    const double start = std::max(host + launch_us, device_free);
    b.launch(13, host, host + launch_us, start, start + kernel_us);
    host += launch_us;
    device_free = start + kernel_us;
  }
  return b;
}

TEST_CASE("host-launch-bound fires for tiny kernels launched slower than they run") {
  TraceBuilder b = launchLoop(200, 2, 6);
  const auto findings = findingsOf(b.build());
  const Finding* f = findingById(findings, "host-launch-bound");
  REQUIRE(f != nullptr);
  CHECK(f->count == 199);
  // A graph gives back 199 launch calls of 6 µs: the 200 kernels of 2 µs then run back to back.
  CHECK(std::llabs(f->time_ns - 199 * 6'000 + 199 * 2'000) <= 6'000);
  CHECK(f->advice.find("CUDA graph") != std::string::npos);
}

// `iterations` of a C++ loop: 4 kernels of 2 µs, each launched by a 5 µs call `between_us` after
// the previous one returned, then `work_us` of the host's own work before the next iteration.
TraceBuilder launchesAndWork(int iterations, double between_us, double work_us) {
  TraceBuilder b;
  double host = 0;
  for (int n = 0; n < iterations; ++n) {
    for (int i = 0; i < 4; ++i) {
      b.launch(13, host, host + 5, host + 5, host + 7);
      host += 5 + (i < 3 ? between_us : work_us);
    }
  }
  return b;
}

TEST_CASE("host-launch-bound: a graph removes launch calls, not the host's own work") {
  // Launches 1 µs apart, then 60 µs of work: the work stays, so each iteration is a graph, and
  // its launch replaces the first kernel's; the other three give back 5 + 1 µs each, less the
  // time a graph launch takes per further node (no graph in the trace: 0.35 µs a µs of this
  // host's 5 µs launch call beyond 2.2 µs, 0.98 µs), 15.06 µs an iteration. The graph submits its
  // nodes as its launch ends, its further nodes' 2.94 µs less 0.5 µs (the device gets them a little
  // before the call is done) after the first kernel's launch did: the last iteration's kernels end
  // 25 - (2.44 + 8 + 3 x 0.415) µs sooner. (The first graph's upload delays
  // every op after it alike: the span does not change.) The device idled 76 µs an iteration, which
  // the gaps alone would have claimed.
  const auto findings = findingsOf(launchesAndWork(30, 1, 60).build());
  const Finding* f = findingById(findings, "host-launch-bound");
  REQUIRE(f != nullptr);
  CHECK(std::llabs(fixSavingNs(*f) - 29 * 15'060 - 13'315) <= 2'000);
}

TEST_CASE("host-launch-bound: a graph launch's time per node is measured where the trace has one") {
  // After the loop above, one cudaGraphLaunch of 4 kernel nodes took 14 µs: a 5 µs launch call
  // and 3 µs for each further node. Each iteration's graph then gives back 3 x (6 - 3) µs, so the
  // graph launched after the loop ends 30 x 9 µs sooner, and the span starts 8.5 µs later: the
  // first graph submits its nodes as its launch ends, its further nodes' 9 µs less 0.5 µs after the
  // first kernel's launch did.
  TraceBuilder b = launchesAndWork(30, 1, 60);
  b.graphLaunch(13, 2600, 2614, 4, 2616, 2, 2);
  const auto findings = findingsOf(b.build());
  const Finding* f = findingById(findings, "host-launch-bound");
  REQUIRE(f != nullptr);
  CHECK(std::llabs(fixSavingNs(*f) - 30 * 9'000 - 8'500) <= 2'000);
}

TEST_CASE("host-launch-bound: a loop's body is one graph per iteration, not the whole loop") {
  // 30 iterations of 4 kernels of 2 µs (grids 1, 2, 4, 8), each launched by a 6 µs call right
  // after the previous one: no host code between the iterations, so only their repetition tells
  // where one ends. One graph an iteration: its launch keeps the first call (6 µs) plus 1.33 µs
  // for each further node (no graph in the trace: 0.35 µs a µs of the 6 µs call beyond 2.2),
  // 9.99 µs, longer than the device
  // takes for its 4 kernels (8 µs, 3 node handoffs of 0.415 µs and the stream's handoff to the next
  // graph), so the iterations follow each other 9.99 µs apart where they took 24 µs. The loop as
  // one graph of 120 nodes claimed 100 µs more.
  TraceBuilder b = launchLoop(120, 2, 6);
  std::uint32_t grid = 1;
  for (GpuOp& op : b.trace().ops) {
    op.grid_blocks = grid;
    grid = grid == 8 ? 1 : grid * 2;
  }
  const auto findings = findingsOf(b.build());
  const Finding* f = findingById(findings, "host-launch-bound");
  REQUIRE(f != nullptr);
  const Ns before = 119 * 6'000 + 2'000;  // the first kernel's start to the last's end
  const Ns after = 29 * 9'990 + 8'000 + 3 * 415;
  CHECK(std::llabs(fixSavingNs(*f) - (before - after)) <= 2'000);
}

TEST_CASE("host-launch-bound: a graph launch costs a typical launch call, not the run's slow first one") {
  // 30 iterations of 4 kernels of 2 µs launched back to back, then a stream synchronize: the first
  // launch call after the synchronize takes 15 µs, the others 5. The graph launch takes a typical
  // launch call (the run's median, 5 µs) and 0.98 µs for each further node (0.35 µs a µs of 5 µs
  // beyond 2.2): the first call gives back 10 µs, released with its op, each other one 4.02 µs, and
  // the first node waits 2.44 µs for the others (their 2.94 µs less 0.5 µs). No kernel waited in
  // the queue, so the stream hands off at once, as the nodes do. An iteration then takes 16.44 µs
  // (the graph's first op 7.44 µs after the synchronize returned, 8 µs of kernels, the
  // synchronize's 1 µs) where it took 33.
  // Charged the first call's 15 µs, as before, the graph claimed 10 µs an iteration less.
  TraceBuilder b;
  double host = 0;
  for (int n = 0; n < 30; ++n) {
    for (int i = 0; i < 4; ++i) {
      const double call = i == 0 ? 15 : 5;
      b.launch(13, host, host + call, host + call, host + call + 2);
      host += call;
    }
    b.streamSynchronize(13, host, host + 3);
    host += 3;
  }
  const auto findings = findingsOf(b.build());
  const Finding* f = findingById(findings, "host-launch-bound");
  REQUIRE(f != nullptr);
  const Ns before = 29 * 33'000 + 17'000;  // the first kernel's start to the last's end
  const Ns after = 29 * 16'440 + 8'000;
  CHECK(std::llabs(fixSavingNs(*f) - (before - after)) <= 2'000);
}

// `iterations` of 4 kernels of 2 µs, each launched by a `call_us` call 1 µs after the previous one
// returned, then 60 µs of the host's own work.
TraceBuilder launchCallsAndWork(int iterations, double call_us) {
  TraceBuilder b;
  double host = 0;
  for (int n = 0; n < iterations; ++n) {
    for (int i = 0; i < 4; ++i) {
      b.launch(13, host, host + call_us, host + call_us, host + call_us + 2);
      host += call_us + (i < 3 ? 1 : 60);
    }
  }
  return b;
}

TEST_CASE("host-launch-bound: a graph launch's time per node goes at the host's launch speed") {
  // 7 µs launch calls (no graph in the trace): a further node costs 0.35 µs a µs of the call
  // beyond 2.2 µs, 1.68 µs; each iteration's graph gives back 3 x (7 + 1 - 1.68) µs, and the last
  // iteration's kernels end 33 - (5.04 + 8 + 3 x 0.415) µs after its first launch call began where
  // they ended 33 µs after.
  const auto slow = findingsOf(launchCallsAndWork(30, 7).build());
  const Finding* f = findingById(slow, "host-launch-bound");
  REQUIRE(f != nullptr);
  CHECK(std::llabs(fixSavingNs(*f) - (29 * 18'960 + 18'715)) <= 2'000);
  // 3.5 µs launch calls: a node costs 0.35 x 1.3 = 0.455 µs, a quarter of the 7 µs host's (the
  // H100's 1.8 µs scaled by the call, 0.9 µs, charged such hosts about twice what they paid):
  // 3 x (3.5 + 1 - 0.455) µs an iteration, the last one's kernels 19 - (1.365 + 8 + 1.245) µs
  // sooner.
  const auto fast = findingsOf(launchCallsAndWork(30, 3.5).build());
  const Finding* g = findingById(fast, "host-launch-bound");
  REQUIRE(g != nullptr);
  CHECK(std::llabs(fixSavingNs(*g) - (29 * 12'135 + 8'390)) <= 2'000);
}

TEST_CASE("host-launch-bound: a graph relaunched long after its last launch takes longer") {
  // The loop above with 300 µs of the host's own work after each iteration, then with 500 µs: a
  // graph relaunched more than 400 µs after its last launch takes half a launch call (2.5 µs at
  // 5 µs calls) longer, which the host gets back less for each of the 29 relaunches.
  const auto launches = [](double work_us) {
    TraceBuilder b;
    double host = 0;
    for (int n = 0; n < 30; ++n) {
      for (int i = 0; i < 4; ++i) {
        b.launch(13, host, host + 5, host + 5, host + 7);
        host += 5 + (i < 3 ? 1 : work_us);
      }
    }
    return b;
  };
  const auto soon = findingsOf(launches(300).build());
  const auto late = findingsOf(launches(500).build());
  const Finding* f = findingById(soon, "host-launch-bound");
  const Finding* g = findingById(late, "host-launch-bound");
  REQUIRE(f != nullptr);
  REQUIRE(g != nullptr);
  CHECK(std::llabs(fixSavingNs(*f) - fixSavingNs(*g) - 29 * 2'500) <= 1'000);
}

TEST_CASE("host-launch-bound: per-launch host code (a dispatcher) goes with the launches") {
  // 20 µs of host code before every launch, longer than the 5 µs launch: the code only issues
  // launches, and a replay runs none of it. The kernels run back to back after the graph launch.
  const auto findings = findingsOf(launchesAndWork(30, 20, 20).build());
  const Finding* f = findingById(findings, "host-launch-bound");
  REQUIRE(f != nullptr);
  const Ns before = (30 * 4 - 1) * 25'000 + 2'000;  // the first kernel's start to the last's end
  const Ns after = 30 * 4 * 2'000;
  CHECK(std::llabs(fixSavingNs(*f) - (before - after)) <= 2'000);
}

TEST_CASE("host-launch-bound: a loop whose launches are often back to back is no dispatcher") {
  // Each iteration launches a kernel, 1 µs later a second one, then two more with 30 µs of the
  // host's own work after each of the three: the median time before a launch (30 µs) is longer
  // than the 5 µs launch call, but a quarter of the thread's launches follow the one before after
  // 1 µs, under 0.35 of its launch call, which a dispatcher's per-launch logic never does. The
  // work stays: each iteration's first two kernels are a graph that gives back the second launch
  // call and the 1 µs before it, less a further node's 0.98 µs, about 5 µs an iteration. Taken for
  // a dispatcher's, the work went with the launches and the graphs claimed 3.06 ms.
  TraceBuilder b;
  double host = 0;
  for (int n = 0; n < 30; ++n) {
    for (int i = 0; i < 4; ++i) {
      b.launch(13, host, host + 5, host + 5, host + 7);
      host += 5 + (i == 0 ? 1 : 30);
    }
  }
  const auto findings = findingsOf(b.build());
  const Finding* f = findingById(findings, "host-launch-bound");
  REQUIRE(f != nullptr);
  CAPTURE(fixSavingNs(*f));
  CHECK(fixSavingNs(*f) > 30 * 4'000);
  CHECK(fixSavingNs(*f) < 30 * 6'000);
}

TEST_CASE("host-launch-bound: a run is dispatched only where its thread's launches are") {
  // Each iteration launches three kernels 1 µs apart (5 µs calls), synchronizes, then launches a
  // kernel, runs 100 µs of its own work and launches another, and synchronizes. The second run's
  // one gap (100 µs) is longer than its launch call, but the thread's quickest quarter of gaps is
  // 1 µs, under 0.35 of its launch call: no dispatcher, so the 100 µs stays (lab c6 g004056's main
  // thread: a 183-189 µs host step between two launches, given back, claimed 530 µs for 5.9).
  TraceBuilder b;
  double host = 0;
  for (int n = 0; n < 30; ++n) {
    double device = host;
    for (int i = 0; i < 3; ++i) {
      device = std::max(device, host + 5);
      b.launch(13, host, host + 5, device, device + 2);
      device += 2;
      host += 5 + 1;
    }
    b.streamSynchronize(13, host, device + 1);
    host = device + 2;
    b.launch(13, host, host + 5, host + 5, host + 7);
    host += 5 + 100;
    b.launch(13, host, host + 5, host + 5, host + 7);
    b.streamSynchronize(13, host + 5, host + 8);
    host += 10;
  }
  const auto findings = findingsOf(b.build());
  const Finding* f = findingById(findings, "host-launch-bound");
  REQUIRE(f != nullptr);
  CAPTURE(fixSavingNs(*f));
  CHECK(fixSavingNs(*f) < 30 * 30'000);  // taken for a dispatcher's: over 30 x 100 µs
}

TEST_CASE("host-launch-bound does not fire for long kernels or a queue that keeps up") {
  CHECK(idsOf(findingsOf(launchLoop(200, 1000, 6).build())).empty());
  CHECK(idsOf(findingsOf(launchLoop(200, 8, 6).build())).empty());
  CHECK(idsOf(findingsOf(launchLoop(10, 2, 6).build())).empty());  // too few kernels
}

// `iterations` of a C++ loop: 10 kernels of 8 µs, each launched by a 6 µs call right after the
// previous one returned, then 20 µs of the host's own work (and a stream synchronize when `sync`).
// The host issues an iteration in 80 µs, the device runs one in 92 µs: every kernel but an
// iteration's first after a synchronize waited in the queue and started 1.2 µs (the stream's
// handoff) after the one before it ended. The loop starts at `origin_us`.
TraceBuilder queuedLaunches(int iterations, bool sync, double origin_us = 0) {
  TraceBuilder b;
  double host = origin_us;
  double device_free = origin_us - 1.2;
  for (int n = 0; n < iterations; ++n) {
    for (int i = 0; i < 10; ++i) {
      const double start = std::max(host + 6, device_free + 1.2);
      b.launch(13, host, host + 6, start, start + 8);
      device_free = start + 8;
      host += 6;
    }
    if (sync) {
      b.streamSynchronize(13, host, device_free + 1);
      host = device_free + 1;
    }
    host += 20;
  }
  return b;
}

TEST_CASE("host-launch-bound: on a busy device a graph saves its nodes' shorter handoffs") {
  // The device never waits for the host, but a graph's kernels follow each other 0.415 µs after
  // the one before (no graph in the trace: the H100's) instead of 1.2. Each iteration is a graph
  // (the host's work starts a new one): 9 x 0.785 µs saved an iteration (the first graph, which
  // submits its nodes as its launch ends, starts the span later but no sooner ends it), less the
  // device's 1.6 µs entry into each of the 29 graphs queued behind the one before, 6.0% of the
  // span: a warning.
  const auto findings = findingsOf(queuedLaunches(30, false).build());
  const Finding* f = findingById(findings, "host-launch-bound");
  REQUIRE(f != nullptr);
  CHECK(f->severity == Severity::kWarning);
  CHECK(f->count == 270);
  CHECK(std::llabs(fixSavingNs(*f) - (30 * 9 * 785 - 29 * 1'600)) <= 100);
  CHECK(f->advice.find("CUDA graph") != std::string::npos);
}

TEST_CASE("host-launch-bound: the trace's own graph replays give the node handoff") {
  // One replay of a graph of 4 kernel nodes (a 11.4 µs launch: 1.8 µs a node) whose nodes start
  // 0.2 µs after each other, then the loop above: each of its handoffs saves 1.0 µs, and its first
  // graph, which submits its nodes as its launch ends (9 x 1.8 µs of nodes, less 0.5 µs) and is
  // uploaded at that first launch (10.6 µs, this host's launch speed being the trace's own), starts
  // 26.3 µs later than its first kernel did, after the replay; the device enters each later graph
  // 1.6 µs later than it started a queued kernel.
  TraceBuilder b = queuedLaunches(30, false, 100);
  b.graphLaunch(13, 0, 11.4, 4, 13, 8, 8.2);
  const auto findings = findingsOf(b.build());
  const Finding* f = findingById(findings, "host-launch-bound");
  REQUIRE(f != nullptr);
  CHECK(std::llabs(fixSavingNs(*f) - (30 * 9 * 1'000 - 15'700 - 10'600 - 29 * 1'600)) <= 100);
}

TEST_CASE("host-launch-bound: no claim where a graph's later start outweighs its handoffs") {
  // The same loop with a synchronize after each iteration: each graph's first node starts 11.5 µs
  // later (9 further nodes of 1.33 µs, less 0.5), more than its 9 handoffs save (7 µs), every
  // iteration.
  const auto findings = findingsOf(queuedLaunches(30, true).build());
  const Finding* f = findingById(findings, "host-launch-bound");
  CHECK((f == nullptr || fixSavingNs(*f) == 0));
}

// Issue 21: a loop that replays a captured graph (one cudaGraphLaunch a step, 4 kernels of 2 µs as
// graph nodes, then 20 µs of host code) waits for the host between replays. The advice must fit
// what the trace shows: the program already launches graphs.
TEST_CASE("host-launch-bound on a graph replay loop does not advise capturing a graph") {
  TraceBuilder b;
  double host = 0;
  for (int step = 0; step < 30; ++step) {
    b.graphLaunch(13, host, host + 3, 4, host + 5, 2, 2);
    host += 30;  // the launch, then the host's own code until the next replay
  }
  const auto findings = findingsOf(b.build());
  const Finding* f = findingById(findings, "host-launch-bound");
  REQUIRE(f != nullptr);
  CHECK(f->count == 29);
  CHECK(f->summary.find("already run as graph nodes") != std::string::npos);
  CHECK(f->advice.find("cudaStreamBeginCapture") == std::string::npos);
  CHECK(f->advice.find("capture several steps") != std::string::npos);
}

// K: 2112 blocks of 256 threads on 132 SMs x 8 = two waves of 400 µs. J (64 blocks) on another
// stream is ready at 100 µs, in K's first wave, and waits for K's end; its stream then copies out,
// so J's stream ends the run.
TEST_CASE("device-saturating-kernel: at a higher priority J starts when K's wave in progress ends") {
  TraceBuilder b;
  b.launch(13, 0, 2, 5, 805).grid_blocks = 2112;
  b.launch(14, 98, 100, 800, 830);
  b.copyCall("cudaMemcpyAsync_v3020", 14, 101, 103, 830, 1330, CopyKind::kDtoH);
  const auto findings = findingsOf(b.build());
  const Finding* f = findingById(findings, "device-saturating-kernel");
  REQUIRE(f != nullptr);
  CHECK(f->count == 1);
  // The what-if: J from 405 µs, the copy to 935 µs (K's blocks J displaced end it at 835 µs),
  // against the recorded program, where J, ready before K's last wave, got no slot of it before
  // 800 µs (the trace's first freed slot, 0.99 of the wave: K's blocks ended together, and the
  // schedule hands K's SMs on there, not at the wave's middle): the copy to 1330 µs, 395 µs.
  CHECK(fixSavingNs(*f) == 395'000);
  CHECK(f->evidence.at(0).detail.find("2 waves of 400.0 µs") != std::string::npos);
  CHECK(f->advice.rfind("Give the latency-sensitive stream a higher priority", 0) == 0);
  CHECK(f->severity == Severity::kInfo);
}

TEST_CASE("device-saturating-kernel does not fire for a kernel that waits for K's event") {
  // The same kernels, but J's stream waits for an event recorded after K: J was not ready before
  // K ended, and no priority starts it sooner.
  constexpr std::uint64_t kEvent = 7;
  TraceBuilder b;
  b.launch(13, 0, 2, 5, 805).grid_blocks = 2112;
  b.eventRecord(13, kEvent, 3, 4);
  b.streamWaitEvent(14, 96, 97, kEvent);
  b.launch(14, 98, 100, 808, 838);
  b.launch(14, 101, 103, 838, 1338);
  CHECK(idsOf(findingsOf(b.build())).count("device-saturating-kernel") == 0);
}

TEST_CASE("device-saturating-kernel: K's displaced blocks delay what waits for K") {
  // K's stream goes on with a kernel (64 blocks) to 1300 µs; J's stream ends at 1335 µs. At a
  // higher priority J runs from K's first wave end (405 µs) and its successor ends at 935 µs, but
  // the 30 µs of K's blocks J displaced (K's last wave is full) push K and its successor to
  // 1330 µs: 5 µs saved, under the 10 µs a finding needs.
  TraceBuilder b;
  b.launch(13, 0, 2, 5, 805).grid_blocks = 2112;
  b.launch(13, 3, 4, 805, 1300);
  b.launch(14, 98, 100, 805, 835);
  b.launch(14, 101, 103, 835, 1335);
  CHECK(idsOf(findingsOf(b.build())).count("device-saturating-kernel") == 0);
  // With room for J's blocks in K's last wave K still ends at 805 µs; at the default priority J
  // starts in that wave's drain (its middle, 605 µs) and its successor ends by 1160 µs, before
  // K's successor (1300 µs): no priority shortens the run, no finding.
  TraceBuilder room;
  room.launch(13, 0, 2, 5, 805).grid_blocks = 2112 - 128;
  room.launch(13, 3, 4, 805, 1300);
  room.launch(14, 98, 100, 805, 835);
  room.launch(14, 101, 103, 835, 1335);
  CHECK(idsOf(findingsOf(room.build())).count("device-saturating-kernel") == 0);
}

TEST_CASE("device-saturating-kernel does not fire for a kernel ready in K's last wave") {
  // Ready at 450 µs, in K's second and last wave: no block of K frees an SM before K ends, so no
  // priority starts J sooner.
  TraceBuilder b;
  b.launch(13, 0, 2, 5, 805).grid_blocks = 2112;
  b.launch(14, 448, 450, 800, 830);
  b.launch(14, 451, 453, 830, 1330);
  CHECK(idsOf(findingsOf(b.build())).count("device-saturating-kernel") == 0);
}

TEST_CASE("device-saturating-kernel does not fire when K ends the run anyway") {
  // J waited from 100 µs to K's end and ran 6 µs after it; nothing follows on its stream. Started
  // at 405 µs it would have ended before K, which the span waits for anyway: 6 µs saved, under
  // the 10 µs a finding needs (the old cost, the wait itself, claimed 395 µs here).
  TraceBuilder b;
  b.launch(13, 0, 2, 5, 805).grid_blocks = 2112;
  b.launch(14, 98, 100, 805, 811);
  CHECK(idsOf(findingsOf(b.build())).count("device-saturating-kernel") == 0);
}

TEST_CASE("device-saturating-kernel does not fire for a kernel that leaves room") {
  TraceBuilder b;
  b.launch(13, 0, 2, 5, 805).grid_blocks = 132 * 8 - 1;
  b.launch(14, 98, 100, 800, 830);
  b.launch(14, 101, 103, 830, 1330);
  CHECK(idsOf(findingsOf(b.build())).count("device-saturating-kernel") == 0);
}

TEST_CASE("device-saturating-kernel does not fire when the waiting kernel fills the device too") {
  // Tile kernels of a compute-bound pipeline: each fills every SM, so running them side by side
  // would only time-slice the SMs and the wait costs nothing.
  TraceBuilder b;
  b.launch(13, 0, 2, 5, 805).grid_blocks = 2112;
  b.launch(14, 98, 100, 800, 830).grid_blocks = 132 * 8;
  b.launch(14, 101, 103, 830, 1330);
  CHECK(idsOf(findingsOf(b.build())).count("device-saturating-kernel") == 0);
}

TEST_CASE("device-saturating-kernel does not fire without the device's limits") {
  TraceBuilder b;
  b.launch(13, 0, 2, 5, 805).grid_blocks = 2112;
  b.launch(14, 98, 100, 800, 830);
  b.launch(14, 101, 103, 830, 1330);
  b.trace().devices[0].max_blocks_per_sm = 0;
  CHECK(idsOf(findingsOf(b.build())).count("device-saturating-kernel") == 0);
}

}  // namespace
}  // namespace cuoverlap
