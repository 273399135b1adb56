// The capture window without a GPU: the spec parser `record` and the collector share
// (schema/capture_spec.h) and the state machine the CUPTI callbacks feed (capture_window.h).
#include <catch2/catch.hpp>

#include <map>
#include <string>

#include "capture_spec.h"
#include "capture_window.h"

namespace {

using cuoverlap::collector::CaptureWindow;
using cuoverlap::collector::WindowChange;
using cuoverlap::schema::CaptureKind;
using cuoverlap::schema::CaptureSpec;

CaptureSpec parsed(const std::string& text) {
  CaptureSpec spec;
  const std::string error = cuoverlap::schema::parseCaptureKind(text, spec);
  INFO(text << ": " << error);
  REQUIRE(error.empty());
  return spec;
}

constexpr std::uint64_t kSecond = 1000000000;

}  // namespace

TEST_CASE("capture spec: the kinds, instance numbers and their canonical spelling") {
  CHECK(parsed("cudaProfilerApi").kind == CaptureKind::kCudaProfilerApi);
  CHECK(parsed("signal").kind == CaptureKind::kSignal);
  const CaptureSpec range = parsed("nvtx:step@50-60");
  CHECK(range.kind == CaptureKind::kNvtx);
  CHECK(range.range == "step");
  CHECK(range.first == 50);
  CHECK(range.last == 60);
  CHECK(cuoverlap::schema::describeCapture(range) == "nvtx:step@50-60");
  CHECK(parsed("nvtx:step").first == 1);
  CHECK(parsed("nvtx:step").last == 1);
  CHECK(parsed("nvtx:step@7").first == 7);
  CHECK(parsed("nvtx:step@7").last == 7);
  CHECK(cuoverlap::schema::describeCapture(parsed("nvtx:step@7")) == "nvtx:step@7");
  // The last '@' separates the numbers: a name may hold one.
  CHECK(parsed("nvtx:a@b@2-3").range == "a@b");
}

TEST_CASE("capture spec: bad input says what is wrong") {
  CaptureSpec spec;
  CHECK(cuoverlap::schema::parseCaptureKind("nvtx:step@9-3", spec).find("FIRST (9) is after LAST (3)") !=
        std::string::npos);
  CHECK(cuoverlap::schema::parseCaptureKind("range:step", spec).find("unknown capture kind") != std::string::npos);
  CHECK_FALSE(cuoverlap::schema::parseCaptureKind("nvtx:step@0", spec).empty());
  CHECK_FALSE(cuoverlap::schema::parseCaptureKind("nvtx:step@", spec).empty());
  CHECK_FALSE(cuoverlap::schema::parseCaptureKind("nvtx:step@99999999999999999999", spec).empty());
  double seconds = 0;
  CHECK(cuoverlap::schema::parseCaptureSeconds("--delay", "2.5", seconds).empty());
  CHECK(seconds == 2.5);
  CHECK_FALSE(cuoverlap::schema::parseCaptureSeconds("--delay", "nan", seconds).empty());
  CHECK_FALSE(cuoverlap::schema::parseCaptureSeconds("--delay", "1e9", seconds).empty());
}

TEST_CASE("capture spec from the environment: a bad variable leaves the whole run") {
  std::map<std::string, std::string> env = {{"CUOVERLAP_CAPTURE", "nvtx:step@2-4"},
                                            {"CUOVERLAP_DURATION", "1.5"}};
  auto lookup = [&env](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  std::string error;
  CaptureSpec spec = cuoverlap::schema::captureSpecFrom(lookup, error);
  CHECK(error.empty());
  CHECK(spec.active());
  CHECK(cuoverlap::schema::describeCapture(spec) == "nvtx:step@2-4 duration 1.5 s");
  env["CUOVERLAP_CAPTURE"] = "nvtx:step@4-2";
  spec = cuoverlap::schema::captureSpecFrom(lookup, error);
  CHECK_FALSE(error.empty());
  CHECK_FALSE(spec.active());
}

TEST_CASE("capture window nvtx: opens at instance FIRST's push, closes at instance LAST's pop") {
  CaptureWindow window(parsed("nvtx:step@2-3"), 0);
  std::uint64_t t = 100;
  // Instance 1, with a nested range of another name.
  CHECK(window.onRangePush(1, "step", ++t) == WindowChange::kNone);
  CHECK(window.onRangePush(1, "forward", ++t) == WindowChange::kNone);
  CHECK(window.onRangePop(1, ++t) == WindowChange::kNone);
  CHECK(window.onRangePop(1, ++t) == WindowChange::kNone);
  const std::uint64_t open_at = ++t;
  CHECK(window.onRangePush(1, "step", open_at) == WindowChange::kOpen);   // instance 2
  CHECK(window.onRangePush(2, "step", ++t) == WindowChange::kNone);      // another thread: instance 3
  // A thread's pops end only its own pushes: thread 1's pop ends instance 2, not LAST.
  CHECK(window.onRangePop(1, ++t) == WindowChange::kNone);
  CHECK(window.isOpen());
  CHECK(window.onRangePop(3, ++t) == WindowChange::kNone);  // a pop without a push
  CHECK(window.onRangePop(2, ++t) == WindowChange::kClose);  // ends instance 3
  CHECK_FALSE(window.isOpen());
  CHECK(window.summary(t).first_open_ns == open_at);
}

TEST_CASE("capture window nvtx: exactly instances FIRST..LAST, the NVTX ranges kept by time") {
  CaptureWindow window(parsed("nvtx:step@3-4"), 0);
  std::uint64_t t = 0;
  std::map<int, WindowChange> opened, closed;
  std::map<int, std::pair<std::uint64_t, std::uint64_t>> spans;
  for (int step = 1; step <= 6; ++step) {
    const std::uint64_t start = t += 10;
    opened[step] = window.onRangePush(7, "step", start);
    const std::uint64_t end = t += 10;
    closed[step] = window.onRangePop(7, end);
    spans[step] = {start, end};
  }
  CHECK(opened[3] == WindowChange::kOpen);
  CHECK(closed[4] == WindowChange::kClose);
  int kept = 0;
  for (const auto& entry : spans) {
    // The marker records are taken in the same call as the trigger: a few ns either side.
    const bool keep = window.overlapsWindow(entry.second.first + 1, entry.second.second - 1);
    kept += keep ? 1 : 0;
    CHECK(keep == (entry.first == 3 || entry.first == 4));
  }
  CHECK(kept == 2);
  const auto summary = window.summary(1000);
  CHECK(summary.opened);
  CHECK(summary.windows == 1);
  CHECK(summary.instances == 6);
  CHECK(summary.first_open_ns == spans[3].first);
  CHECK(summary.last_close_ns == spans[4].second);
}

TEST_CASE("capture window nvtx: start/end ranges are matched by id, other names ignored") {
  CaptureWindow window(parsed("nvtx:load@2"), 0);
  CHECK(window.onRangeStart(11, "load", 1) == WindowChange::kNone);
  CHECK(window.onRangeStart(12, "other", 2) == WindowChange::kNone);
  CHECK(window.onRangeStart(13, "load", 3) == WindowChange::kOpen);
  CHECK(window.onRangeEnd(11, 4) == WindowChange::kNone);
  CHECK(window.onRangeEnd(12, 5) == WindowChange::kNone);
  CHECK(window.onRangeEnd(13, 6) == WindowChange::kClose);
  CHECK(window.summary(10).instances == 2);
}

TEST_CASE("capture window: a range that never reaches FIRST never opens") {
  CaptureWindow window(parsed("nvtx:step@50-60"), 0);
  for (std::uint64_t i = 0; i < 12; ++i) {
    CHECK(window.onRangePush(1, "step", 2 * i) == WindowChange::kNone);
    CHECK(window.onRangePop(1, 2 * i + 1) == WindowChange::kNone);
  }
  const auto summary = window.summary(100);
  CHECK_FALSE(summary.opened);
  CHECK(summary.instances == 12);
  CHECK_FALSE(window.overlapsWindow(0, 100));
}

TEST_CASE("capture window cudaProfilerApi: start/stop pairs, repeated calls change nothing") {
  CaptureWindow window(parsed("cudaProfilerApi"), 0);
  CHECK(window.onRangePush(1, "step", 1) == WindowChange::kNone);  // other triggers ignored
  CHECK(window.onProfilerStop(2) == WindowChange::kNone);
  CHECK(window.onProfilerStart(3) == WindowChange::kOpen);
  CHECK(window.onProfilerStart(4) == WindowChange::kNone);  // the runtime's call reaches the driver's
  CHECK(window.onProfilerStop(5) == WindowChange::kClose);
  CHECK(window.onProfilerStart(6) == WindowChange::kOpen);
  const auto summary = window.summary(9);  // still open at the end: closed at the session's end
  CHECK(summary.windows == 2);
  CHECK(summary.first_open_ns == 3);
  CHECK(summary.last_close_ns == 9);
  CHECK(window.overlapsWindow(4, 4));
  CHECK(window.overlapsWindow(5, 5));  // the closing instant belongs to the window
  CHECK(window.overlapsWindow(100, 200));  // the open window reaches the future
}

TEST_CASE("capture window signal, delay and duration") {
  CaptureSpec spec = parsed("signal");
  spec.delay_s = 1.0;
  spec.duration_s = 2.0;
  CaptureWindow window(spec, 10 * kSecond);
  CHECK(window.onSwitch(true, 10 * kSecond + 5) == WindowChange::kNone);  // inside the delay
  CHECK(window.onSwitch(true, 11 * kSecond) == WindowChange::kOpen);
  CHECK(window.nextDeadlineNs() == 13 * kSecond);
  CHECK(window.onTick(12 * kSecond) == WindowChange::kNone);
  CHECK(window.onTick(13 * kSecond) == WindowChange::kClose);
  CHECK(window.onSwitch(false, 14 * kSecond) == WindowChange::kNone);

  CaptureSpec timed;
  timed.delay_s = 0.5;
  CaptureWindow by_clock(timed, 0);
  CHECK(by_clock.nextDeadlineNs() == kSecond / 2);
  CHECK(by_clock.onTick(kSecond / 4) == WindowChange::kNone);
  CHECK(by_clock.onTick(kSecond / 2) == WindowChange::kOpen);
  CHECK(by_clock.nextDeadlineNs() == 0);  // no duration: open until the end
  CHECK(by_clock.onTick(kSecond) == WindowChange::kNone);
}
