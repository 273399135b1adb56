// Scope options: durations and windows as the user types them, and --range instances.
#include <catch2/catch.hpp>

#include <string>

#include "cuoverlap/analysis.h"
#include "cuoverlap/diagnosis.h"
#include "cuoverlap/error.h"
#include "trace_builder.h"

namespace cuoverlap {
namespace {

using test::TraceBuilder;

TEST_CASE("durations take ns, us, ms and s") {
  CHECK(parseDuration("250") == 250);
  CHECK(parseDuration("250ns") == 250);
  CHECK(parseDuration("12.5us") == 12'500);
  CHECK(parseDuration("3ms") == 3'000'000);
  CHECK(parseDuration("1.5s") == 1'500'000'000);
  CHECK_THROWS_AS(parseDuration(""), UserError);
  CHECK_THROWS_AS(parseDuration("10 us"), UserError);
  CHECK_THROWS_AS(parseDuration("10min"), UserError);
  CHECK_THROWS_AS(parseDuration("1.2.3us"), UserError);
}

// These escaped as std::invalid_argument/out_of_range (exit 3) or wrapped to a negative value.
TEST_CASE("durations without digits or beyond 2^62 ns are user errors") {
  CHECK_THROWS_AS(parseDuration("."), UserError);
  CHECK_THROWS_AS(parseDuration(".ms"), UserError);
  CHECK_THROWS_AS(parseDuration(std::string(400, '1')), UserError);
  CHECK_THROWS_AS(parseDuration("99999999999999999999s"), UserError);
  CHECK_THROWS_AS(parseWindow("0:99999999999999999999s"), UserError);
  CHECK(parseDuration("4611686018s") == 4'611'686'018'000'000'000);
  CHECK(parseDuration(".5us") == 500);
}

TEST_CASE("windows are START:END with END after START") {
  CHECK(parseWindow("1ms:2ms") == std::pair<Ns, Ns>{1'000'000, 2'000'000});
  CHECK(parseWindow("0:500us") == std::pair<Ns, Ns>{0, 500'000});
  CHECK_THROWS_AS(parseWindow("2ms"), UserError);
  CHECK_THROWS_AS(parseWindow("2ms:1ms"), UserError);
}

// Two instances of range "tile", each launching one kernel that runs after the range ended.
Trace twoTiles() {
  TraceBuilder b;
  for (int i = 0; i < 2; ++i) {
    const double base = 1000.0 * i;
    NvtxRange range;
    range.start = TraceBuilder::ns(base);
    range.end = TraceBuilder::ns(base + 10);
    range.text = b.intern("tile");
    range.pid = 4242;
    range.tid = 1;
    range.event_type = static_cast<std::int32_t>(schema::NvtxEventType::kPushPopRange);
    b.trace().nvtx.push_back(range);
    b.launch(13, base + 1, base + 2, base + 20, base + 120);
    b.launch(13, base + 3, base + 4, base + 150, base + 200);  // a 30 µs dependency gap
  }
  b.kernel(14, 600, 700);  // outside both instances
  return b.build();
}

TEST_CASE("--range analyzes each instance projected onto the GPU, and sums them") {
  const Trace trace = twoTiles();
  AnalysisOptions options;
  options.scope.range = "tile";
  const TraceReport report = analyzeTrace(trace, options);
  REQUIRE(report.range_instances.size() == 2);
  CHECK(report.range_instances[0].start == 20'000);  // the first op launched inside it
  CHECK(report.range_instances[0].end == 200'000);  // the last op launched inside it
  REQUIRE(report.range_instances[1].devices.size() == 1);
  CHECK(report.range_instances[1].devices[0].metrics.kernels == 2);
  REQUIRE(report.devices.size() == 1);
  CHECK(report.devices[0].metrics.kernels == 4);  // the kernel on stream 14 is outside
  CHECK(report.devices[0].gaps.count == 2);
  CHECK(report.devices[0].gaps.time_ns == 60'000);
}

TEST_CASE("--range findings: the fix's saving summed over instances, and spread instance by instance") {
  const auto finding = [](Ns estimated, Ns fix_alone) {
    Finding f;
    f.id = "blocking-sync-call";
    f.time_ns = estimated;
    f.estimated_ns = estimated;
    f.fix_alone_ns = fix_alone;
    f.charged_elsewhere_ns = 10;
    f.charged_to = {"host-busy"};
    return f;
  };
  std::vector<RangeInstance> instances(3);
  instances[0].findings = {finding(100, -1)};  // its fix saves its estimate
  instances[1].findings = {finding(500, 300)};  // its fix priced apart: 300
  // instances[2]: it did not fire
  const std::vector<Finding> merged = mergeRangeFindings(instances);
  REQUIRE(merged.size() == 1);
  const Finding& f = merged[0];
  CHECK(f.time_ns == 600);
  CHECK(f.estimated_ns == 600);
  CHECK(fixSavingNs(f) == 400);  // 100 + 300, not the first instance's 100
  CHECK(f.charged_elsewhere_ns == 20);
  CHECK(f.charged_to == std::vector<std::string>{"host-busy"});
  REQUIRE(f.instance_saving.has_value());
  CHECK(f.instance_saving->instances == 3);
  CHECK(f.instance_saving->fired == 2);
  CHECK(f.instance_saving->saving.median == 100);  // of 0, 100, 300
  CHECK(f.instance_saving->saving.p10 == 0);
  CHECK(f.instance_saving->saving.max == 300);
  // One instance: no spread to tell.
  const std::vector<Finding> one = mergeRangeFindings({instances[0]});
  REQUIRE(one.size() == 1);
  CHECK_FALSE(one[0].instance_saving.has_value());
  CHECK(fixSavingNs(one[0]) == 100);
}

TEST_CASE("--range findings: a finding twice in one instance fired in it once, its savings added") {
  Finding f;
  f.id = "blocking-sync-call";
  f.estimated_ns = 100;
  std::vector<RangeInstance> instances(2);
  instances[0].findings = {f, f};  // two of its kind in the first instance (a device's two calls)
  const std::vector<Finding> merged = mergeRangeFindings(instances);
  REQUIRE(merged.size() == 1);
  CHECK(merged[0].summary.rfind("in 1 of 2 range instances", 0) == 0);
  REQUIRE(merged[0].instance_saving.has_value());
  CHECK(merged[0].instance_saving->fired == 1);
  CHECK(merged[0].instance_saving->saving.max == 200);  // the first instance's two, added
  CHECK(merged[0].instance_saving->saving.p10 == 0);    // the second: it did not fire
  CHECK(fixSavingNs(merged[0]) == 200);
}

// Issue 11: "--range nosuch" used to print "no GPU activity in scope" and exit 0.
TEST_CASE("--range that matches no range name is a user error naming the closest names") {
  const Trace trace = twoTiles();
  AnalysisOptions options;
  options.scope.range = "tiles";
  CHECK_THROWS_WITH(analyzeTrace(trace, options), Catch::Contains("closest names: 'tile'"));
  options.scope.range = "/[/";
  CHECK_THROWS_AS(analyzeTrace(trace, options), UserError);
}

TEST_CASE("--range takes an exact name, a glob or a /regex/") {
  const Trace trace = twoTiles();
  AnalysisOptions options;
  for (const char* pattern : {"tile", "t*", "ti?e", "/il/", "/^tile$/"}) {
    options.scope.range = pattern;
    INFO(pattern);
    CHECK(analyzeTrace(trace, options).range_instances.size() == 2);
  }
  options.scope.range = "til";  // exact names are whole names
  CHECK_THROWS_AS(analyzeTrace(trace, options), UserError);
}

}  // namespace
}  // namespace cuoverlap
