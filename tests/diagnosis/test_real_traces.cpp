// Golden diagnosis of real traces.
// 1. The Nsight Systems exports in tests/data/nsys give the findings their data shows
//    (checked by hand with SQL: docs/findings.md, "Checked on real exports").
// 2. Every streams scenario of workloads/streams/scenarios.json whose recorded trace
//    tests/data/streams_<scenario>.sqlite exists gives exactly the manifest's findings and an
//    overlap ratio in the manifest's range. Scenarios without a trace are skipped (they are
//    recorded on the GPU machine); a trace that disagrees with the manifest fails.
// 3. No what-if schedule of them breaks one of its own edges (diagnosis/schedule_unrun.h).
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "cuoverlap/analysis.h"
#include "cuoverlap/reader.h"
#include "diagnosis/schedule_unrun.h"
#include "findings_test_util.h"
#include "../trace_files.h"

namespace cuoverlap {
namespace {

using test::findingById;
using test::idsOf;

bool exists(const std::string& path) { return std::ifstream(path).good(); }

TraceReport analyzeFile(const std::string& path, Trace& trace) {
  trace = readTrace(path);
  return analyzeTrace(trace, AnalysisOptions{});
}

const std::string kShared = CUOVERLAP_SHARED_TRACES;

TEST_CASE("cuDF group-by: one null stream, pageable copies, synchronizes and allocations") {
  const std::string path = kShared + "/nvtxex_cudf-groupby.sqlite.gz";
  if (!exists(path)) FAIL("missing shared trace " << path);
  Trace trace;
  const TraceReport report = analyzeFile(path, trace);
  // Every copy is pageable (synchronous to the host on any stream): pageable-memcpy's case.
  // single-stream names the null stream with the whole advice (pinned buffers, the work split),
  // whose saving is mostly pinning's: the ledger charges it only what the split saves with the
  // copies as they ran (under 0.1 ms of its 8.8). Its 50 copies of a few hundred bytes, two or
  // three in a row, each followed by a cudaStreamSynchronize and the next one's cudaMalloc, are
  // no transfer in pieces: the host waited between them (many-small-copies until lab round 12).
  CHECK(idsOf(report.findings) == std::set<std::string>{"pageable-memcpy", "blocking-sync-call",
                                                        "implicit-sync-call", "host-busy",
                                                        "single-stream"});
  const Finding* whole = findingById(report.findings, "single-stream");
  REQUIRE(whole != nullptr);
  CHECK(whole->time_ns < 100'000);
  CHECK(fixSavingNs(*whole) > 8'000'000);
  const Finding* pageable = findingById(report.findings, "pageable-memcpy");
  REQUIRE(pageable != nullptr);
  CHECK(pageable->count == 97);  // SQL: 69 HtoD from srcKind 0 + 28 DtoH to dstKind 0
  CHECK(pageable->evidence.size() == 5);
  const Finding* implicit = findingById(report.findings, "implicit-sync-call");
  REQUIRE(implicit != nullptr);
  // All 344 cudaMalloc/cudaFree calls inside the op span: hoisting them gives their time back to
  // the launches after them, whether or not the device still had work.
  CHECK(implicit->count == 344);
  // The largest gaps are the host's own work: SQL shows no CUDA call on thread 137893 from
  // +2.379 ms to +8.403 ms (6.0 ms) before the cudaMalloc that the old model blamed for the gap.
  const Finding* busy = findingById(report.findings, "host-busy");
  REQUIRE(busy != nullptr);
  CHECK(busy->time_ns > 40'000'000);
  REQUIRE(report.devices.size() == 1);
  const GapAnalysis& gaps = report.devices[0].gaps;
  REQUIRE(!gaps.totals.empty());
  CHECK(gaps.totals[0].cause == GapCause::kHostBusy);
}

TEST_CASE("gpu4_report1: six async copies from pageable memory") {
  const std::string path = kShared + "/gpu4_report1.sqlite.gz";
  if (!exists(path)) FAIL("missing shared trace " << path);
  Trace trace;
  const TraceReport report = analyzeFile(path, trace);
  // Each stream copies its two 32 KiB inputs one after the other: merged, one copy's fixed cost
  // and one call per stream go (many-small-copies, 2 runs); the ledger charges them first. Of the
  // two cudaLaunchKernel calls, the first took 141.5 µs and the second 6.7 µs: lazy loading of
  // vecAdd's module (issue 21: with two launches, the slow one was its own median, host-launch).
  CHECK(idsOf(report.findings) == std::set<std::string>{"many-small-copies", "module-load", "pageable-memcpy"});
  const Finding* f = findingById(report.findings, "pageable-memcpy");
  REQUIRE(f != nullptr);
  CHECK(f->count == 6);
  CHECK(f->evidence.at(0).api == "cudaMemcpyAsync");
  const Finding* merge = findingById(report.findings, "many-small-copies");
  REQUIRE(merge != nullptr);
  CHECK(merge->count == 2);
  CHECK(merge->time_ns < f->time_ns);
}

// An incidental finding (the manifest's incidental_findings) may cost at most this share of the span.
constexpr double kIncidentalShare = 0.05;

TEST_CASE("gpu4_report: 1024-block vecAdds on four streams each fill the T4: only lazy loading") {
  // SQL: 40 SMs x 4 resident blocks of 256 threads = 160 < 1024 blocks for every kernel; the
  // kernel on stream 15 started 22 µs after its launch, in the second half of stream 14's kernel,
  // but it fills the device itself, so running the two side by side could not have saved time.
  // The first cudaLaunchKernel took 1.536 ms, the three others 6-8 µs: lazy module loading, of
  // which 65 µs left the device idle (2.9% of the 2.26 ms span).
  const std::string path = kShared + "/gpu4_report.sqlite.gz";
  if (!exists(path)) FAIL("missing shared trace " << path);
  Trace trace;
  const TraceReport report = analyzeFile(path, trace);
  // Each stream's two 2 MiB uploads (a and b) pay a pinned copy's fixed cost each: one buffer
  // and one copy would save about 3.6 µs a stream (many-small-copies, incidental: 0.6%).
  CHECK(idsOf(report.findings) == std::set<std::string>{"many-small-copies", "module-load"});
  const Finding* merge = findingById(report.findings, "many-small-copies");
  REQUIRE(merge != nullptr);
  CHECK(static_cast<double>(merge->time_ns) <
        kIncidentalShare * static_cast<double>(report.devices.at(0).metrics.span_ns));
  const Finding* load = findingById(report.findings, "module-load");
  REQUIRE(load != nullptr);
  CHECK(load->severity == Severity::kInfo);
  CHECK(load->evidence.at(0).api == "cudaLaunchKernel");
}

TEST_CASE("the healthy H100 trace has no finding and its gaps are the host's launch loop") {
  // Every 10 µs gap: 7 µs in no CUDA call, then the 3 µs tail of the next launch.
  const std::string path = kShared + "/nsysai_healthy_1pct.sqlite.gz";
  if (!exists(path)) FAIL("missing shared trace " << path);
  Trace trace;
  const TraceReport report = analyzeFile(path, trace);
  CHECK(report.findings.empty());
  REQUIRE(report.devices.size() == 1);
  const GapAnalysis& gaps = report.devices[0].gaps;
  REQUIRE(gaps.totals.size() == 2);
  CHECK(gaps.totals[0].cause == GapCause::kHostBusy);
  CHECK(gaps.totals[1].cause == GapCause::kHostLaunch);
  CHECK(gaps.largest.size() == kLargestGaps);
}

// The manifest's expected diagnosis of one scenario.
struct ScenarioExpectation {
  std::string name;
  std::set<std::string> findings;
  double overlap_min = 0.0;
  double overlap_max = 1.0;
};

// Accepts {"scenarios": [{"name", "findings"|"expected_findings", optional "further_findings",
// "overlap_ratio": [lo, hi] or {"min", "max"}}]} or the same entries keyed by name.
ScenarioExpectation parseScenario(const std::string& name, const nlohmann::json& entry) {
  ScenarioExpectation e;
  e.name = entry.value("name", name);
  const char* findings_key = entry.contains("expected_findings") ? "expected_findings" : "findings";
  for (const auto& id : entry.at(findings_key)) e.findings.insert(id.get<std::string>());
  // Findings beyond what the scenario is built to show, each a further fix measured to save.
  for (const auto& id : entry.value("further_findings", nlohmann::json::array())) {
    e.findings.insert(id.get<std::string>());
  }
  const char* range_key = entry.contains("overlap_ratio") ? "overlap_ratio" : "expected_overlap_ratio";
  const auto& range = entry.at(range_key);
  e.overlap_min = range.is_array() ? range.at(0).get<double>() : range.at("min").get<double>();
  e.overlap_max = range.is_array() ? range.at(1).get<double>() : range.at("max").get<double>();
  return e;
}

std::vector<ScenarioExpectation> readManifest(const std::string& path) {
  const nlohmann::json doc = nlohmann::json::parse(std::ifstream(path));
  const nlohmann::json& list = doc.is_object() && doc.contains("scenarios") ? doc["scenarios"] : doc;
  std::vector<ScenarioExpectation> result;
  for (auto it = list.begin(); it != list.end(); ++it) {
    result.push_back(parseScenario(list.is_object() ? it.key() : std::string(), *it));
  }
  return result;
}

TEST_CASE("every recorded streams scenario gives exactly its manifest's diagnosis") {
  const std::string manifest = CUOVERLAP_SCENARIOS;
  if (!exists(manifest)) {
    WARN("no scenario manifest yet: " << manifest);
    return;
  }
  const auto scenarios = readManifest(manifest);
  REQUIRE(!scenarios.empty());
  std::set<std::string> incidental;
  for (const auto& id : nlohmann::json::parse(std::ifstream(manifest)).value(
           "incidental_findings", nlohmann::json::array())) {
    incidental.insert(id.get<std::string>());
  }
  int checked = 0;
  const diagnosis::ScheduleEdgeCheck check;
  const std::uint64_t broken = diagnosis::brokenEdgeSchedules();
  for (const ScenarioExpectation& scenario : scenarios) {
    const std::string trace_path =
        std::string(CUOVERLAP_TEST_DATA) + "/streams_" + scenario.name + cuoverlap_test::kStoredSuffix;
    INFO("scenario " << scenario.name);
    // Every scenario has a trace recorded on the GPU (scripts/record_goldens.sh).
    CHECK(exists(trace_path));
    if (!exists(trace_path)) continue;
    Trace trace;
    const TraceReport report = analyzeFile(trace_path, trace);
    // Incidental findings (the manifest's list: lazy module loading) may come and go between runs;
    // they are compared away, but must stay small. So may blocking-sync-call as information: only
    // synchronizes that found nothing in flight (a setup synchronize's own 10 µs), no scenario's
    // subject; as a warning it counts.
    std::set<std::string> ids;
    for (const Finding& f : report.findings) {
      const bool idle_synchronizes = f.id == "blocking-sync-call" && f.severity == Severity::kInfo;
      if (!incidental.count(f.id) && !idle_synchronizes) {
        ids.insert(f.id);
        continue;
      }
      INFO(f.id << " costs " << f.time_ns << " ns");
      CHECK(static_cast<double>(f.time_ns) <
            kIncidentalShare * static_cast<double>(report.devices.at(0).metrics.span_ns));
    }
    std::set<std::string> expected = scenario.findings;
    for (const std::string& id : incidental) expected.erase(id);
    CHECK(ids == expected);
    REQUIRE(!report.devices.empty());
    for (const DeviceReport& device : report.devices) {
      CHECK(device.metrics.overlap_ratio >= scenario.overlap_min);
      CHECK(device.metrics.overlap_ratio <= scenario.overlap_max);
    }
    ++checked;
  }
  CHECK(checked == static_cast<int>(scenarios.size()));
  CHECK(diagnosis::brokenEdgeSchedules() == broken);
}

// One window of a committed lab trace (a scored baseline run, as `lab score` analyzes it).
TraceReport analyzeLabWindow(const Trace& trace, std::int64_t start, std::int64_t end) {
  AnalysisOptions options;
  options.scope.window_start = start;
  options.scope.window_end = end;
  return analyzeTrace(trace, options);
}

// The committed lab trace at `relative` under tests/data, read.
Trace readLabTrace(const std::string& relative) {
  const std::string path = std::string(CUOVERLAP_TEST_DATA) + "/" + relative;
  REQUIRE(exists(path));
  return readTrace(path);
}

TEST_CASE("a lab program's split keeps every edge of its schedule (c1 g000310, window 1)") {
  // g000310's first loop (seven steps of a kernel that fills the device, each step synchronized)
  // split over three streams saves 22 µs in the fixed program's own trace (nvidia-h200,
  // docs/findings.md, forty-fourth session). In this window of the committed corpus the split's
  // schedule once let a lane's download end twice, and the second loop's cudaFree return before
  // the kernel it waited for: 595 µs claimed for that split. It is one of the finding's fixes.
  const Trace trace = readLabTrace("lab/c_batch002.sqlite.gz");
  const diagnosis::ScheduleEdgeCheck check;
  const std::uint64_t broken = diagnosis::brokenEdgeSchedules();
  const TraceReport report = analyzeLabWindow(trace, 1795711118363310472, 1795711118374227696);
  CHECK(diagnosis::brokenEdgeSchedules() == broken);
  const Finding* split = findingById(report.findings, "single-stream");
  REQUIRE(split != nullptr);
  REQUIRE(split->fixes.size() == 2);
  for (const FixSaving& fix : split->fixes) CHECK(fix.saving_ns < 300'000);
}

TEST_CASE("a loop's repeats of one sweep are sweeps alike in every run (h200h g001041)") {
  // g001041's loop of five steps, split over three streams, saved 369 µs on the H200 (held-out
  // corpus). Its 4-block kernel sweeps a 23.5 MB buffer in 997-1008 µs a step, at the line where
  // a few-block kernel counts as a sweep that the split keeps in order (kSweepingKernelNs). Judged
  // run by run, one 997 µs run in window 0 ran free beside the next lane's sweep: 1048 µs claimed
  // there, 34 in window 1. The repeats of one kernel are classed by their typical run. (The
  // fortieth session's H200 recording of the held-out corpus, trimmed to this program's kept runs
  // when the fifty-seventh session replaced that corpus: tests/data/README.md.)
  const Trace trace = readLabTrace("lab_cases/g001041.sqlite.gz");
  const std::pair<std::int64_t, std::int64_t> windows[] = {{1795875296825823218, 1795875296865590801},
                                                           {1795875298295131645, 1795875298334821886}};
  for (const auto& [start, end] : windows) {
    INFO("window from " << start);
    const TraceReport report = analyzeLabWindow(trace, start, end);
    const Finding* split = findingById(report.findings, "single-stream");
    REQUIRE(split != nullptr);
    CHECK(split->time_ns < 100'000);
  }
}

TEST_CASE("a step's closing synchronize keeps its lane's work in the split (fresh H200 g008112)") {
  // g008112's loop runs `host 29 µs; copy; 528-block kernel; host 5 µs; 2112-block kernel; host 45
  // µs; stream synchronize` three times; split over three streams (the lab's multi-stream), each
  // step's synchronize waits for its own lane, so the lanes cannot overlap: -24 ± 27 µs measured
  // (the forty-sixth session's fresh sample on an H200, 21 runs). The host's gaps around the
  // synchronizes (45 µs before, 29 after) took them for the next steps' openers and the split
  // claimed 465 µs (an info finding: single-stream, no time lost, its multi-stream fix 465 µs);
  // the synchronize after the last step (and none before the first) says they close their steps.
  const Trace trace = readLabTrace("lab_cases/g008112.sqlite.gz");
  const TraceReport report = analyzeLabWindow(trace, 1795931692438290666, 1795931692443479606);
  // No fix of the finding saves anything now, so it is not reported; where it is, its split saves
  // nothing to speak of.
  if (const Finding* split = findingById(report.findings, "single-stream")) {
    for (const FixSaving& fix : split->fixes) {
      INFO(fix.fix);
      CHECK(fix.saving_ns < 50'000);
    }
  }
}

TEST_CASE("a free still waits for the work its moved memset stood for (fresh H200 g008019)") {
  // g008019's main thread frees a buffer each step (`cudaFree`: the device synchronized) and sets a
  // buffer with `cudaMemset` on the legacy stream, where a worker's kernels queue; the last op
  // there before each free was main's memset. Made asynchronous on main's own stream (async-memset,
  // 8 µs saved) or with the worker's kernels on a stream of its own (own-streams, 79 µs saved;
  // the forty-sixth session's fresh sample on an H200), the free still waits for the worker's
  // kernels; the what-ifs let it return 550 µs sooner and claimed 558 and 567 µs.
  const Trace trace = readLabTrace("lab_cases/g008019.sqlite.gz");
  const TraceReport report = analyzeLabWindow(trace, 1795931566283742566, 1795931566290139990);
  const Finding* memsets = findingById(report.findings, "sync-memset");
  REQUIRE(memsets != nullptr);
  CHECK(fixSavingNs(*memsets) < 150'000);
  const Finding* legacy = findingById(report.findings, "legacy-default-stream");
  REQUIRE(legacy != nullptr);
  CHECK(fixSavingNs(*legacy) < 150'000);
  const Finding* frees = findingById(report.findings, "implicit-sync-call");
  REQUIRE(frees != nullptr);
  CHECK(fixSavingNs(*frees) > 600'000);  // hoist-alloc: 854 µs saved, unchanged
}

TEST_CASE("a synchronous copy's own short op is work its call waited for (c7 g005009, window 4)") {
  // g005009 makes 18 synchronous 4 KiB cudaMemcpy calls, each a host round trip the device idles
  // through; made asynchronous they saved 152 µs (the study corpus). Its copies run 0.9-1.1 µs: a
  // call counted only with 1 µs of work in flight, so in this window, whose copies all ran under
  // 1.0 µs, none was charged and sync-memcpy was silent, while the other windows claimed 184-200.
  const Trace trace = readLabTrace("lab_study2/batch000.sqlite.gz");
  const TraceReport report = analyzeLabWindow(trace, 1795773039636505162, 1795773039640495853);
  const Finding* copies = findingById(report.findings, "sync-memcpy");
  REQUIRE(copies != nullptr);
  CHECK(fixSavingNs(*copies) > 120'000);
  CHECK(fixSavingNs(*copies) < 260'000);
}

TEST_CASE("multi-gpu on two H200s: both devices traced, pipelined, no finding") {
  // Recorded with `cuoverlap record` on a 2 x H200 host: 12 tiles per GPU, 3 streams each.
  const std::string path = std::string(CUOVERLAP_TEST_DATA) + "/streams_multi-gpu_2xH200.sqlite.gz";
  REQUIRE(exists(path));
  Trace trace;
  const TraceReport report = analyzeFile(path, trace);
  CHECK(report.findings.empty());
  REQUIRE(report.devices.size() == 2);
  for (const DeviceReport& device : report.devices) {
    INFO("device " << device.metrics.device_id);
    CHECK(device.metrics.name == "NVIDIA H200");
    CHECK(device.metrics.kernels == 12);
    CHECK(device.metrics.memcpys == 24);
    CHECK(device.metrics.overlap_ratio > 0.4);
    CHECK(device.metrics.copy_hidden_fraction > 0.8);
  }
}


// Gaps and metrics count the same ops: no gap lies outside the metrics' span and the gaps never
// add up to more than the idle time (nsysai_healthy_1pct has start-0 rows that once broke this).
void checkGapsInsideIdle(const std::string& path) {
  Trace trace;
  const TraceReport report = analyzeFile(path, trace);
  for (const DeviceReport& device : report.devices) {
    INFO(path << " device " << device.metrics.device_id);
    CHECK(device.gaps.time_ns <= device.metrics.idle_ns);
    for (const IdleGap& gap : device.gaps.largest) {
      CHECK(gap.start >= device.metrics.first_start);
      CHECK(gap.end <= device.metrics.last_end);
    }
  }
}

TEST_CASE("every real and recorded trace: gap total <= idle time, gaps inside the span") {
  int checked = 0;
  for (const std::string& dir : {kShared, std::string(CUOVERLAP_TEST_DATA)}) {
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
      if (!cuoverlap_test::isTraceFile(entry.path())) continue;
      checkGapsInsideIdle(entry.path().string());
      ++checked;
    }
  }
  CHECK(checked >= 5);
}

}  // namespace
}  // namespace cuoverlap
