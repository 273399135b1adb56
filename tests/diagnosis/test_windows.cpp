// Windowed sub-views (device_window.h) and BlockMaxTree: a window analyzed through the per-device
// index must equal the analysis of a view built from scratch with that window, on hand-built
// traces with long ops, long calls and stream waits straddling window edges, and on real exports.
#include <catch2/catch.hpp>

#include <random>
#include <string>

#include "cuoverlap/analysis.h"
#include "cuoverlap/diagnosis.h"
#include "cuoverlap/reader.h"
#include "diagnosis/block_max.h"
#include "trace_builder.h"

namespace cuoverlap {
namespace {

using test::TraceBuilder;

TEST_CASE("BlockMaxTree answers range maxima and finds every earlier item still running") {
  std::mt19937 rng(7);
  for (std::size_t n : {0u, 1u, 63u, 64u, 65u, 1000u}) {
    std::vector<Ns> ends(n);
    for (Ns& e : ends) e = static_cast<Ns>(rng() % 10'000);
    const auto value = [&](std::size_t p) { return ends[p]; };
    const diagnosis::BlockMaxTree tree(n, value);
    for (int q = 0; q < 200; ++q) {
      const std::size_t l = n ? rng() % (n + 1) : 0;
      const std::size_t r = l + (n - l ? rng() % (n - l + 1) : 0);
      Ns expected = diagnosis::BlockMaxTree::kNone;
      for (std::size_t p = l; p < r; ++p) expected = std::max(expected, ends[p]);
      CHECK(tree.maxIn(l, r, value) == expected);
      const Ns threshold = static_cast<Ns>(rng() % 10'000);
      std::vector<std::size_t> found;
      std::vector<std::size_t> wanted;
      tree.forEachAbove(r, threshold, value, [&](std::size_t p) { found.push_back(p); });
      for (std::size_t p = 0; p < r; ++p) {
        if (ends[p] > threshold) wanted.push_back(p);
      }
      CHECK(found == wanted);
    }
  }
}

void requireSameDevices(const std::vector<DeviceReport>& a, const std::vector<DeviceReport>& b) {
  REQUIRE(a.size() == b.size());
  for (std::size_t d = 0; d < a.size(); ++d) {
    const DeviceMetrics& x = a[d].metrics;
    const DeviceMetrics& y = b[d].metrics;
    CHECK(x.device_id == y.device_id);
    CHECK(x.kernels == y.kernels);
    CHECK(x.memcpys == y.memcpys);
    CHECK(x.memsets == y.memsets);
    CHECK(x.first_start == y.first_start);
    CHECK(x.last_end == y.last_end);
    CHECK(x.busy_ns == y.busy_ns);
    CHECK(x.sum_ns == y.sum_ns);
    CHECK(x.ideal_ns == y.ideal_ns);
    CHECK(x.concurrency_ns == y.concurrency_ns);
    CHECK(x.copy_hidden_fraction == y.copy_hidden_fraction);
    const GapAnalysis& g = a[d].gaps;
    const GapAnalysis& h = b[d].gaps;
    CHECK(g.count == h.count);
    CHECK(g.time_ns == h.time_ns);
    REQUIRE(g.largest.size() == h.largest.size());
    for (std::size_t i = 0; i < g.largest.size(); ++i) {
      CHECK(g.largest[i].start == h.largest[i].start);
      CHECK(g.largest[i].cause == h.largest[i].cause);
      CHECK(g.largest[i].call == h.largest[i].call);
    }
  }
}

void requireSameFindings(const std::vector<Finding>& a, const std::vector<Finding>& b) {
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    CHECK(a[i].id == b[i].id);
    CHECK(a[i].count == b[i].count);
    CHECK(a[i].time_ns == b[i].time_ns);
    CHECK(a[i].summary == b[i].summary);
    CHECK(a[i].evidence.size() == b[i].evidence.size());
  }
}

void requireWindowsMatchFreshViews(const Trace& trace, const std::vector<Interval>& windows) {
  const AnalysisOptions whole;
  const std::vector<WindowReport> reports = analyzeWindows(trace, whole, windows);
  for (std::size_t w = 0; w < windows.size(); ++w) {
    AnalysisOptions options;
    options.scope.window_start = windows[w].start;
    options.scope.window_end = windows[w].end;
    const TraceReport fresh = analyzeTrace(trace, options);
    INFO("window " << windows[w].start << ".." << windows[w].end);
    requireSameDevices(reports[w].devices, fresh.devices);
    requireSameFindings(reports[w].findings, fresh.findings);
  }
}

// Short launches on three streams, long kernels, pageable copies, blocking syncs and stream waits.
Trace busyRandomTrace(unsigned seed) {
  std::mt19937 rng(seed);
  TraceBuilder b;
  double t = 10;
  for (int i = 0; i < 400; ++i) {
    const std::uint32_t stream = 13 + static_cast<std::uint32_t>(rng() % 3);
    const double launch = t + rng() % 5;
    const double start = launch + 5 + rng() % 30;
    const double length = (rng() % 20 == 0) ? 300 + rng() % 500 : 2 + rng() % 20;
    switch (rng() % 6) {
      case 0:
        b.copyCall("cudaMemcpyAsync_v3020", stream, launch, launch + 3, start, start + length,
                   CopyKind::kHtoD, rng() % 2 ? MemKind::kPageable : MemKind::kPinned);
        break;
      case 1: b.call("cudaStreamSynchronize_v3020", launch, start + length + 2); break;
      case 2: b.streamWaitEvent(stream, launch, launch + 1); break;
      default: b.launch(stream, launch, launch + 2 + rng() % 4, start, start + length);
    }
    t += 3 + rng() % 12;
  }
  return b.build();
}

TEST_CASE("a window cut from the device index equals a view built with that window") {
  for (unsigned seed : {1u, 2u, 3u}) {
    const Trace trace = busyRandomTrace(seed);
    std::mt19937 rng(seed);
    std::vector<Interval> windows{{TraceBuilder::ns(0), TraceBuilder::ns(1e6)}};
    for (int i = 0; i < 40; ++i) {
      const Ns start = TraceBuilder::ns(rng() % 4000);
      windows.push_back({start, start + TraceBuilder::ns(1 + rng() % 800)});
    }
    windows.push_back({TraceBuilder::ns(5000), TraceBuilder::ns(5000)});  // empty
    INFO("seed " << seed);
    requireWindowsMatchFreshViews(trace, windows);
  }
}

TEST_CASE("windows over a real Nsight export equal fresh views") {
  const Trace trace = readTrace(std::string(CUOVERLAP_SHARED_TRACES) + "/nvtxex_cudf-groupby.sqlite.gz");
  std::vector<Interval> windows;
  for (const NvtxRange& range : trace.nvtx) {
    if (isNvtxRange(range)) windows.push_back({range.start, range.end});
  }
  REQUIRE(windows.size() > 2);
  requireWindowsMatchFreshViews(trace, windows);
}

}  // namespace
}  // namespace cuoverlap
