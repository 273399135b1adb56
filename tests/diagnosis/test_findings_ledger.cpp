// The cost ledger (analyzer/src/diagnosis/cost_ledger.h): on every real trace we have, per device,
// the findings' costs add up to what the report says they explain and never exceed span - ideal;
// no finding is charged more than its own estimate. Plus the serialization costs on hand-built
// traces (what removing a barrier or a wait would save) and the n log n shapes of issue 13.
#include <catch2/catch.hpp>

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "cuoverlap/analysis.h"
#include "cuoverlap/reader.h"
#include "diagnosis/cost_ledger.h"
#include "diagnosis/device_view.h"
#include "diagnosis/finding_builder.h"
#include "findings_test_util.h"
#include "trace_builder.h"
#include "../trace_files.h"

namespace cuoverlap {
namespace {

namespace fs = std::filesystem;
using test::findingById;

std::vector<std::string> realTraces() {
  std::vector<std::string> paths;
  for (const std::string& dir : {std::string(CUOVERLAP_TEST_DATA), std::string(CUOVERLAP_SHARED_TRACES),
                                std::string(CUOVERLAP_TEST_DATA) + "/frameworks"}) {
    std::error_code error;
    for (const auto& entry : fs::directory_iterator(dir, error)) {
      if (cuoverlap_test::isTraceFile(entry.path())) paths.push_back(entry.path().string());
    }
  }
  return paths;
}

// The part of each finding charged through the ledger (time_ns less what its fix would take off
// the ideal itself) adds up to findings_explain_ns and stays within span - ideal; the parts that
// lower the ideal add up to the device's ideal_reduction_ns.
void checkLedger(const TraceReport& report) {
  for (const DeviceReport& device : report.devices) {
    Ns sum = 0;
    Ns lower_ideal = 0;
    for (const Finding& f : report.findings) {
      if (f.device_id != device.metrics.device_id) continue;
      INFO(report.path << " device " << f.device_id << ": " << f.id);
      const Ns charged = f.time_ns - f.ideal_reduction_ns;
      CHECK(charged >= 0);
      CHECK(f.ideal_reduction_ns >= 0);
      CHECK(charged <= f.estimated_ns);
      // What the rule found and was not charged is accounted for (reports print where it went).
      CHECK(charged + f.charged_elsewhere_ns + f.beyond_region_ns + f.beyond_explainable_ns ==
            f.estimated_ns);
      CHECK((f.charged_to.empty() || f.charged_elsewhere_ns > 0));
      sum += charged;
      lower_ideal += f.ideal_reduction_ns;
    }
    INFO(report.path << " device " << device.metrics.device_id);
    CHECK(sum == device.explained.explained_ns);
    CHECK(sum <= device.explained.explainable_ns);
    CHECK(lower_ideal == device.explained.ideal_reduction_ns);
    // The ledger's ideal only lets kernels share SMs: never above the metrics' ideal.
    CHECK(device.explained.explainable_ns >= device.metrics.span_ns - device.metrics.ideal_ns);
    CHECK(device.explained.explainable_ns <= device.metrics.span_ns);
  }
}

TEST_CASE("ledger: on every real trace, findings never claim more than span - ideal") {
  const std::vector<std::string> paths = realTraces();
  REQUIRE(paths.size() >= 10);
  for (const std::string& path : paths) {
    Trace trace = readTrace(path);
    checkLedger(analyzeTrace(trace, AnalysisOptions{}));
  }
}

// Per round: a kernel on blocking stream 13, one on the null stream, one on 13; each fills a
// quarter of the SMs, so the null-stream kernel could have run beside the first.
Trace nullStreamBarrier(int rounds) {
  test::TraceBuilder b;
  double t = 0;
  // The host launches everything up front (2 µs a call), the GPU runs it one kernel at a time.
  for (int r = 0; r < rounds; ++r, t += 300) {
    const double call = r * 6.0;
    b.launch(13, call, call + 1, t + 5, t + 105).grid_blocks = 132 * 2;
    b.launch(test::kNullStream, call + 2, call + 3, t + 105, t + 205).grid_blocks = 132 * 2;
    b.launch(13, call + 4, call + 5, t + 205, t + 300).grid_blocks = 132 * 2;
  }
  return b.build();
}

TEST_CASE("legacy-default-stream costs the overlap the barrier prevented") {
  const Trace trace = nullStreamBarrier(10);
  AnalysisOptions options;
  const TraceReport report = analyzeTrace(trace, options);
  const Finding* f = findingById(report.findings, "legacy-default-stream");
  REQUIRE(f != nullptr);
  // Without the barrier each round is 195 µs of stream 13 with the null kernel beside it: the
  // span shrinks by ~105 µs a round (not the null kernels' 100 µs each by coincidence: the last
  // round's kernel ends the span either way).
  CHECK(f->time_ns >= 900 * test::kUs);
  CHECK(f->time_ns <= 1100 * test::kUs);
}

// Four streams, one small kernel each per round, kernel k waiting (event) for kernel k-1.
Trace waitChain(int rounds, bool waits) {
  test::TraceBuilder b;
  b.addStream(16, StreamFlag::kNonBlocking);
  const std::uint32_t streams[] = {13, 14, 15, 16};
  double t = 0;
  int k = 0;
  for (int r = 0; r < rounds; ++r) {
    for (std::uint32_t s : streams) {
      const double call = k * 2.0;
      if (waits && k > 0) b.streamWaitEvent(s, call, call + 0.5, k);
      b.launch(s, call + 0.5, call + 1, waits ? t : call + 1, (waits ? t : call + 1) + 50)
          .grid_blocks = 8;
      b.eventRecord(s, k + 1, call + 1.2, call + 1.4);
      t += 50;
      ++k;
    }
  }
  return b.build();
}

TEST_CASE("cross-stream-kernel-wait: a chain of waits between small kernels costs the span") {
  const TraceReport bad = analyzeTrace(waitChain(20, true), AnalysisOptions{});
  const Finding* f = findingById(bad.findings, "cross-stream-kernel-wait");
  REQUIRE(f != nullptr);
  CHECK(f->severity == Severity::kInfo);
  const TraceReport fixed = analyzeTrace(waitChain(20, false), AnalysisOptions{});
  CHECK(findingById(fixed.findings, "cross-stream-kernel-wait") == nullptr);
  const Ns saving = bad.devices[0].metrics.span_ns - fixed.devices[0].metrics.span_ns;
  CHECK(static_cast<double>(f->time_ns) >= 0.7 * static_cast<double>(saving));
  CHECK(static_cast<double>(f->time_ns) <= 1.3 * static_cast<double>(saving));
}

// Stream 13 runs a one-block kernel for 600 µs and records an event; stream 14 waits for it and
// runs a kernel of `blocks` blocks for 100 µs.
Trace longNarrowKernelThenWait(std::uint32_t blocks, std::uint32_t first_blocks) {
  test::TraceBuilder b;
  b.launch(13, 1, 2, 5, 605).grid_blocks = first_blocks;
  b.eventRecord(13, 1, 3, 4);
  b.streamWaitEvent(14, 5, 6, 1);
  b.launch(14, 7, 8, 605, 705).grid_blocks = blocks;
  return b.build();
}

TEST_CASE("cross-stream-kernel-wait: a device-filling kernel held behind a one-block kernel costs "
          "what sharing the SMs saves") {
  // One wave over all 132 SMs (8 blocks of 256 threads each) beside a kernel of one block: the
  // what-if runs both at once, so the span shrinks from 700 to 600 µs, however full the device.
  const Finding* f = nullptr;
  const auto findings = test::findingsOf(longNarrowKernelThenWait(132 * 8, 1));
  f = findingById(findings, "cross-stream-kernel-wait");
  REQUIRE(f != nullptr);
  CHECK(f->time_ns >= 95 * test::kUs);
  CHECK(f->time_ns <= 100 * test::kUs);
  // Two kernels of three waves each share the SMs only in the first's last wave: without the wait
  // the second starts at that wave's middle (505 µs) beside its last blocks (half of the SMs,
  // falling to none by 605 µs) and ends at 630 µs, 75 µs before it did, not 100.
  const auto full = test::findingsOf(longNarrowKernelThenWait(3 * 132 * 8, 3 * 132 * 8));
  f = findingById(full, "cross-stream-kernel-wait");
  REQUIRE(f != nullptr);
  // The ledger leaves it none of the span (the wait's time is charged elsewhere): its estimate.
  CHECK(f->estimated_ns == 75 * test::kUs);
}

// Stream 13 runs two 100 µs kernels, recording event 1 after each; stream 14 waits for the event
// before each of its two 95 µs kernels (one call site, run twice). The first wait held its kernel
// back ~100 µs; the second only 5 µs, as the first had already delayed stream 14 by as much.
Trace oneSiteTwoRounds(bool waits) {
  test::TraceBuilder b;
  b.launch(13, 0.5, 1, 5, 105).grid_blocks = 8;
  b.eventRecord(13, 1, 1.1, 1.2);
  if (waits) b.streamWaitEvent(14, 1.3, 1.4, 1);
  b.launch(14, 1.5, 2, waits ? 108 : 5, waits ? 203 : 100).grid_blocks = 1;
  b.launch(13, 2.1, 2.5, 106, 206).grid_blocks = 8;
  b.eventRecord(13, 1, 2.6, 2.7);
  if (waits) b.streamWaitEvent(14, 2.8, 2.9, 1);
  b.launch(14, 3, 3.4, waits ? 208 : 101, waits ? 303 : 196).grid_blocks = 1;
  return b.build();
}

TEST_CASE("cross-stream-kernel-wait: the fix drops a call site, also its rounds that held their "
          "kernel only briefly") {
  // Dropping the first round's wait alone would leave the second holding stream 14's kernel
  // until 208 µs (no saving); the call site goes whole, as the fixed trace has it: 303 -> 206 µs.
  const TraceReport bad = analyzeTrace(oneSiteTwoRounds(true), AnalysisOptions{});
  const Finding* f = findingById(bad.findings, "cross-stream-kernel-wait");
  REQUIRE(f != nullptr);
  const TraceReport fixed = analyzeTrace(oneSiteTwoRounds(false), AnalysisOptions{});
  const Ns saving = bad.devices[0].metrics.span_ns - fixed.devices[0].metrics.span_ns;
  CHECK(saving > 90 * test::kUs);
  CHECK(static_cast<double>(f->estimated_ns) >= 0.7 * static_cast<double>(saving));
  CHECK(static_cast<double>(f->estimated_ns) <= 1.3 * static_cast<double>(saving));
  // The evidence is the round that held its kernel back.
  CHECK(f->count == 1);
}

TEST_CASE("event waits and ops without launch calls stay n log n (issue 13)") {
  // 64k waits on stream 14, each before an op of 14 without a launch call: the old releasedOp
  // scanned every later op of the stream for each wait (main at c48e57f: 4.9 s at 16k, 20.3 s at
  // 32k; now 0.09 s at 64k, -O2 on the CPU box).
  test::TraceBuilder b;
  constexpr int kOps = 65'536;
  for (int i = 0; i < kOps; ++i) {
    const double t = i * 10.0;
    b.streamWaitEvent(14, t, t + 1, 1);
    b.kernel(14, t + 2, t + 8);
  }
  const Trace trace = b.build();
  const auto start = std::chrono::steady_clock::now();
  const auto findings = test::findingsOf(trace);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(seconds < 8.0);  // a guard against the quadratic walk, not a speed target (0.1-0.4 s alone)
}

}  // namespace
}  // namespace cuoverlap

namespace cuoverlap {
namespace {

TEST_CASE("overlapping device-filling kernels stay n log n (issue 13)") {
  // 64k device-filling kernels on 7 streams, each overlapping the next 5,000: the old rule
  // scanned, per filling kernel, every op that started before its end (main at c48e57f: 2.3 s at
  // 16k, 4.9 s at 32k; now 0.12 s at 64k, -O2 on the CPU box).
  test::TraceBuilder b;
  for (std::uint32_t s = 16; s < 20; ++s) b.addStream(s, StreamFlag::kNonBlocking);
  constexpr int kOps = 65'536;
  for (int i = 0; i < kOps; ++i) {
    const double t = i * 1.0;
    b.launch(13 + i % 7, t, t + 0.5, t + 1, t + 5'000).grid_blocks = 132 * 8;
  }
  const Trace trace = b.build();
  const auto start = std::chrono::steady_clock::now();
  const auto findings = test::findingsOf(trace);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(seconds < 8.0);  // a guard against the quadratic walk, not a speed target (0.1-0.4 s alone)
}

}  // namespace
}  // namespace cuoverlap

namespace cuoverlap {
namespace {

// `n` 20 µs kernels, each launched `gap_us` after the previous one ended (a slow host).
Trace launchGaps(int n, double gap_us) {
  test::TraceBuilder b;
  double t = 0;
  for (int i = 0; i < n; ++i) {
    b.launch(13, t + gap_us - 2, t + gap_us - 1, t + gap_us, t + gap_us + 20);
    t += gap_us + 20;
  }
  return b.build();
}

TEST_CASE("host-launch-bound is graded: from 10% of the span, an error from 25%") {
  // Gaps of 3 µs between 20 µs kernels: 13% of the span (the old rule waited for 50%).
  const auto some = test::findingsOf(launchGaps(100, 3));
  const Finding* f = findingById(some, "host-launch-bound");
  REQUIRE(f != nullptr);
  CHECK(f->severity == Severity::kWarning);
  // The host code before each 1 µs launch is longer than the launch: a graph runs none of it.
  CHECK(std::llabs(f->time_ns - 99 * 3'000) <= 3'000);
  CHECK(f->summary.find("13% of the span") != std::string::npos);
  const auto many = test::findingsOf(launchGaps(100, 10));
  REQUIRE(findingById(many, "host-launch-bound") != nullptr);
  CHECK(findingById(many, "host-launch-bound")->severity == Severity::kError);
  // 1 µs gaps: 5% of the span, under the idle test; the busy-device path names them, as info, since
  // a graph, replacing the host code before each launch, would save about that much.
  const auto few = test::findingsOf(launchGaps(100, 1));
  const Finding* busy = findingById(few, "host-launch-bound");
  REQUIRE(busy != nullptr);
  CHECK(busy->severity == Severity::kInfo);
  CHECK(busy->summary.find("captured in CUDA graphs") != std::string::npos);
  CHECK(fixSavingNs(*busy) > 50'000);
  CHECK(fixSavingNs(*busy) <= 99 * 1'000);
}

TEST_CASE("transfer-bound: an HtoD engine busy most of the span, with bytes and bandwidth") {
  test::TraceBuilder b;
  for (int i = 0; i < 10; ++i) {
    const double t = i * 100.0;
    b.copyCall("cudaMemcpyAsync_v3020", 13, t, t + 1, t + 2, t + 98, CopyKind::kHtoD);
    b.launch(14, t + 1, t + 2, t + 50, t + 60);
  }
  const auto findings = test::findingsOf(b.build());
  const Finding* f = findingById(findings, "transfer-bound");
  REQUIRE(f != nullptr);
  CHECK(f->count == 10);
  CHECK(f->time_ns == 0);  // a fix lowers the ideal itself: not part of span - ideal
  CHECK(f->severity == Severity::kInfo);  // issue 21: a finding that costs nothing is no warning
  INFO(f->summary);
  CHECK(f->summary.find("HtoD copy engine was busy 96% of the span") != std::string::npos);
  CHECK(f->summary.find("10.0 MiB") != std::string::npos);
  CHECK(f->summary.find("pipeline efficiency") != std::string::npos);
  CHECK(f->advice.find("pageable") == std::string::npos);  // pinned copies: no pinning advice
}

TEST_CASE("transfer-bound does not fire when copies leave the engine idle") {
  test::TraceBuilder b;
  for (int i = 0; i < 10; ++i) {
    const double t = i * 100.0;
    b.copyCall("cudaMemcpyAsync_v3020", 13, t, t + 1, t + 2, t + 40, CopyKind::kHtoD);
    b.launch(14, t + 1, t + 2, t + 40, t + 100);
  }
  CHECK(findingById(test::findingsOf(b.build()), "transfer-bound") == nullptr);
}

TEST_CASE("single-stream needs a copy a second stream could hide") {
  // Each copy sits between two kernels (copy feeds the next kernel, and on one buffer must follow
  // the previous): the pinned, async twin of a sync-copy program. No copy the split could hide,
  // but copied ahead into a second buffer, each copy runs beside the kernel before it, whether or
  // not the kernels accumulate: that is the cost. The host issued a step every 100 µs, so the
  // device cannot run ahead of it: only the last copy's 48 µs (after its kernel's end) would come
  // back, and the copy-ahead's own event calls (two records and two waits a step, about 10 µs)
  // make the host's steps longer than that by the last one: nothing comes back.
  test::TraceBuilder chain;
  for (int i = 0; i < 10; ++i) {
    const double t = i * 100.0;
    chain.launch(13, t, t + 1, t + 2, t + 50);
    chain.copyCall("cudaMemcpyAsync_v3020", 13, t + 1, t + 2, t + 50, t + 100, CopyKind::kHtoD);
  }
  const auto chain_findings = test::findingsOf(chain.build());
  const Finding* ahead = findingById(chain_findings, "single-stream");
  REQUIRE(ahead != nullptr);
  REQUIRE_FALSE(ahead->fixes.empty());
  CHECK(ahead->fixes.front().fix == "copy-ahead");
  INFO("copy-ahead saves " << fixSavingNs(*ahead));
  CHECK(fixSavingNs(*ahead) == 0);
  // Copy-in, kernel, copy-out per tile (99 us each, 3 ms in all): split over three streams with
  // asynchronous copies, the tiles pipeline through the HtoD engine, the SMs and the DtoH engine
  // (10 x 99 us each, staggered by one op: about 1.19 ms), so the what-if saves about 1.81 ms.
  test::TraceBuilder tiles;
  for (int i = 0; i < 10; ++i) {
    const double t = i * 300.0;
    tiles.copyCall("cudaMemcpy_v3020", 13, t, t + 100, t + 1, t + 100, CopyKind::kHtoD);
    tiles.launch(13, t + 100, t + 101, t + 101, t + 200);
    tiles.copyCall("cudaMemcpy_v3020", 13, t + 101, t + 300, t + 200, t + 299, CopyKind::kDtoH);
  }
  const auto findings = test::findingsOf(tiles.build());
  const Finding* f = findingById(findings, "single-stream");
  REQUIRE(f != nullptr);
  CHECK(f->time_ns >= 1'700'000);
  CHECK(f->time_ns <= 1'850'000);
  // Pageable copies: single-stream names the loop with the whole advice (pinned buffers, the
  // split), its fix saving the split's with the copies at the pinned rate; the ledger charges
  // pageable-memcpy first, so single-stream's cost leaves out what pinning alone saves. A pinned
  // copy of 1 MiB in 20 µs after the loop gives the pinned rate (the loop's take 99 µs).
  test::TraceBuilder pageable;
  for (int i = 0; i < 10; ++i) {
    const double t = i * 300.0;
    pageable.copyCall("cudaMemcpy_v3020", 13, t, t + 100, t + 1, t + 100, CopyKind::kHtoD,
                      MemKind::kPageable);
    pageable.launch(13, t + 100, t + 101, t + 101, t + 200);
    pageable.copyCall("cudaMemcpy_v3020", 13, t + 101, t + 300, t + 200, t + 299, CopyKind::kDtoH,
                      MemKind::kPageable);
  }
  pageable.copyCall("cudaMemcpyAsync_v3020", 14, 3'000, 3'002, 3'001, 3'021, CopyKind::kHtoD);
  const auto pageable_findings = test::findingsOf(pageable.build());
  const Finding* whole = findingById(pageable_findings, "single-stream");
  const Finding* pinning = findingById(pageable_findings, "pageable-memcpy");
  REQUIRE(whole != nullptr);
  REQUIRE(pinning != nullptr);
  INFO("single-stream " << whole->time_ns << " of " << fixSavingNs(*whole) << ", pageable-memcpy "
                        << pinning->time_ns << " of " << fixSavingNs(*pinning));
  CHECK(pinning->time_ns > 0);
  CHECK(fixSavingNs(*whole) > fixSavingNs(*pinning));
  CHECK(whole->time_ns < fixSavingNs(*whole));
  CHECK(whole->time_ns + pinning->time_ns <= fixSavingNs(*whole) + 10'000);
}

TEST_CASE("evidence of a call that names no stream carries none") {
  test::TraceBuilder b;
  for (int i = 0; i < 3; ++i) {
    const double base = 200.0 * i;
    b.launch(13, base, base + 2, base + 5, base + 100);
    b.call("cudaDeviceSynchronize_v3020", base + 3, base + 101);
  }
  const auto findings = test::findingsOf(b.build());
  const Finding* f = findingById(findings, "blocking-sync-call");
  REQUIRE(f != nullptr);
  CHECK_FALSE(f->evidence.at(0).has_stream);
}

}  // namespace
}  // namespace cuoverlap

namespace cuoverlap {
namespace {

TEST_CASE("the what-if schedule of 64k small kernels stays fast") {
  // 21,846 rounds of the null-stream barrier (65,538 kernels of a quarter of the SMs, launched up
  // front): legacy-default-stream schedules them all twice.
  const Trace trace = nullStreamBarrier(21'846);
  const auto start = std::chrono::steady_clock::now();
  const auto findings = test::findingsOf(trace);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(findingById(findings, "legacy-default-stream") != nullptr);
  CHECK(seconds < 8.0);  // a guard against the quadratic walk, not a speed target (0.1-0.4 s alone)
}

TEST_CASE("a finding's examples are its most costly instances, however many came before") {
  // 100 instances, every 17th long: the five longest (i = 85, 68, 51, 34, 17) are the examples,
  // in time order. (The builder prunes its examples as it goes; an instance's weight once went to
  // whichever example pruning left last.)
  test::TraceBuilder b;
  b.kernel(13, 1, 200'000);
  const Trace trace = b.build();
  const diagnosis::DeviceView view(trace, Scope{}, 0);
  diagnosis::FindingBuilder builder(view, "example-test", Severity::kWarning);
  for (int i = 0; i < 100; ++i) {
    Evidence evidence;
    evidence.api = "call";
    evidence.time = Ns{i} * 1000;
    evidence.detail = std::to_string(i);
    const Ns length = i % 17 == 0 ? 500 + i : 10;
    builder.add(Interval{Ns{i} * 1000, Ns{i} * 1000 + length}, evidence);
  }
  const std::optional<Finding> finding = builder.build("summary", "advice");
  REQUIRE(finding.has_value());
  std::vector<std::string> shown;
  for (const Evidence& e : finding->evidence) shown.push_back(e.detail);
  CHECK(shown == std::vector<std::string>{"17", "34", "51", "68", "85"});
}

}  // namespace
}  // namespace cuoverlap

namespace cuoverlap {
namespace {

// A finding for the ledger: `estimate` over `region` (µs).
Finding ledgerFinding(const std::string& id, Ns estimate, std::vector<std::pair<double, double>> region) {
  Finding f;
  f.id = id;
  f.estimated_ns = estimate;
  for (const auto& [from, to] : region) f.cost_region.emplace_back(test::TraceBuilder::ns(from), test::TraceBuilder::ns(to));
  return f;
}

// Kernels [1, 100), [200, 300), [400, 500) µs: idle [100, 200) and [300, 400), 200 µs in all.
Trace twoGaps() {
  test::TraceBuilder b;
  b.kernel(13, 1, 100).grid_blocks = 132 * 8;
  b.kernel(13, 200, 300).grid_blocks = 132 * 8;
  b.kernel(13, 400, 500).grid_blocks = 132 * 8;
  return b.build();
}

TEST_CASE("ledger: a what-if saving beyond its own stretches is never charged twice") {
  // The double charge of issue 21 (blocking-sync-call and host-busy claiming 71.4 ms of a device's
  // 59.1 ms of idle time): a synchronize whose what-if saving (150 µs: the host's own work after
  // it starts sooner too) is larger than the idle stretch it names (50 µs after its drain), and
  // host-busy naming the host's own work in both gaps (150 µs). The synchronize is charged first;
  // what its stretch cannot hold takes idle time no finding holds yet, so host-busy keeps only the
  // rest and together they never claim more than the 200 µs of idle.
  const Trace trace = twoGaps();
  const diagnosis::DeviceView view(trace, Scope{}, 0);
  std::vector<Finding> findings = {
      ledgerFinding("host-busy", 150 * test::kUs, {{150, 200}, {300, 400}}),
      ledgerFinding("blocking-sync-call", 150 * test::kUs, {{100, 150}})};
  const FindingsExplained explained = diagnosis::chargeFindings(view, findings);
  const Finding* sync = findingById(findings, "blocking-sync-call");
  const Finding* busy = findingById(findings, "host-busy");
  REQUIRE(sync != nullptr);
  REQUIRE(busy != nullptr);
  CHECK(sync->time_ns == 150 * test::kUs);  // 50 µs in its stretch, 100 µs in host-busy's
  CHECK(busy->time_ns == 50 * test::kUs);
  CHECK(sync->time_ns + busy->time_ns <= 200 * test::kUs);  // the device's idle time
  CHECK(explained.explained_ns == 200 * test::kUs);
  // The rest of host-busy's estimate is said to be charged to the synchronize.
  CHECK(busy->charged_elsewhere_ns + busy->time_ns == busy->estimated_ns);
  CHECK(busy->charged_to == std::vector<std::string>{"blocking-sync-call"});
}

TEST_CASE("ledger: what no free device time can hold is not charged") {
  // Small kernels (the packed bound is the longest, 100 µs: 399 µs explainable). Two findings
  // hold [100, 500) between them, for 100 µs each; a third estimates 400 µs over [1, 50): it is
  // capped at the 199 µs still explainable, holds its 49 µs and the 50 µs no finding holds
  // ([50, 100)), and the remaining 100 µs would charge held time twice: not charged, and said.
  test::TraceBuilder b;
  for (const auto& [from, to] : {std::pair{1.0, 100.0}, {200.0, 300.0}, {400.0, 500.0}}) {
    b.kernel(13, from, to).grid_blocks = 8;
  }
  const Trace trace = b.build();
  const diagnosis::DeviceView view(trace, Scope{}, 0);
  std::vector<Finding> findings = {
      ledgerFinding("blocking-sync-call", 100 * test::kUs, {{100, 300}}),
      ledgerFinding("host-busy", 100 * test::kUs, {{300, 500}}),
      ledgerFinding("low-overlap", 400 * test::kUs, {{1, 50}})};
  const FindingsExplained explained = diagnosis::chargeFindings(view, findings);
  REQUIRE(explained.explainable_ns == 399 * test::kUs);
  Ns sum = 0;
  for (const Finding& f : findings) {
    sum += f.time_ns;
    CHECK(f.time_ns + f.charged_elsewhere_ns + f.beyond_region_ns + f.beyond_explainable_ns == f.estimated_ns);
  }
  const Finding* summary = findingById(findings, "low-overlap");
  REQUIRE(summary != nullptr);
  CHECK(summary->beyond_explainable_ns == 201 * test::kUs);
  CHECK(summary->time_ns == 99 * test::kUs);
  CHECK(summary->beyond_region_ns == 100 * test::kUs);
  CHECK(sum == 299 * test::kUs);  // [1, 500) less the 200 µs the first two hold but did not charge
  CHECK(explained.explained_ns == sum);
}

}  // namespace
}  // namespace cuoverlap
