// A capture window: which part of a run the collector records (`record --capture`, `--delay`,
// `--duration`; docs/collector.md, "Capture windows"). Parsed by `record` to reject bad input
// before the program starts, and again by the collector from CUOVERLAP_CAPTURE, so both agree.
//
//   cudaProfilerApi        between cudaProfilerStart/cuProfilerStart and the matching Stop
//   nvtx:NAME              the first push/pop or start/end range NAME in the default domain
//   nvtx:NAME@N            its N-th instance (1-based, counted per process)
//   nvtx:NAME@FIRST-LAST   from the start of instance FIRST to the end of instance LAST
//   signal                 SIGUSR2 opens and closes the window
// --delay S ignores triggers (and, without --capture, opens the window) S seconds after the
// collector started in the process; --duration S closes a window S seconds after it opened.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

namespace cuoverlap::schema {

inline constexpr const char* kEnvCapture = "CUOVERLAP_CAPTURE";          // the spec, as below
inline constexpr const char* kEnvCaptureDelay = "CUOVERLAP_DELAY";       // seconds, decimal
inline constexpr const char* kEnvCaptureDuration = "CUOVERLAP_DURATION";  // seconds, decimal
// Set by `record --capture signal`: while this file exists, every traced process of the run
// holds its window open (SIGUSR2 to `record` creates and removes it).
inline constexpr const char* kCaptureOpenFile = "capture-open";

enum class CaptureKind : std::uint8_t { kNone, kCudaProfilerApi, kNvtx, kSignal };

struct CaptureSpec {
  CaptureKind kind = CaptureKind::kNone;
  std::string range;              // kNvtx: the range name
  std::uint64_t first = 1, last = 1;  // kNvtx: instance numbers, 1-based, inclusive
  double delay_s = 0.0;           // 0: none
  double duration_s = 0.0;        // 0: until the trigger closes it or the process ends

  // Whether the collector records only a window (any option given).
  bool active() const { return kind != CaptureKind::kNone || delay_s > 0.0 || duration_s > 0.0; }
};

namespace capture_detail {

inline bool parseCount(std::string_view text, std::uint64_t& out) {
  if (text.empty() || text.size() > 18) return false;
  out = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    out = out * 10 + static_cast<std::uint64_t>(c - '0');
  }
  return out > 0;
}

}  // namespace capture_detail

// Parses the --capture value into `spec`; returns "" or a one-line reason.
inline std::string parseCaptureKind(std::string_view text, CaptureSpec& spec) {
  if (text == "cudaProfilerApi") return spec.kind = CaptureKind::kCudaProfilerApi, "";
  if (text == "signal") return spec.kind = CaptureKind::kSignal, "";
  if (text.substr(0, 5) != "nvtx:") {
    return "unknown capture kind '" + std::string(text) +
           "' (expected cudaProfilerApi, nvtx:NAME[@FIRST[-LAST]] or signal)";
  }
  std::string_view rest = text.substr(5);
  const std::size_t at = rest.rfind('@');
  spec.kind = CaptureKind::kNvtx;
  spec.range = std::string(rest.substr(0, at));
  if (spec.range.empty()) return "--capture nvtx: needs a range name: nvtx:NAME[@FIRST[-LAST]]";
  spec.first = spec.last = 1;
  if (at == std::string_view::npos) return "";
  std::string_view numbers = rest.substr(at + 1);
  const std::size_t dash = numbers.find('-');
  const std::string_view first = numbers.substr(0, dash);
  const std::string_view last = dash == std::string_view::npos ? first : numbers.substr(dash + 1);
  if (!capture_detail::parseCount(first, spec.first) || !capture_detail::parseCount(last, spec.last)) {
    return "bad instance numbers '" + std::string(numbers) +
           "' in --capture (expected @N or @FIRST-LAST, counting from 1)";
  }
  if (spec.first > spec.last) {
    return "--capture " + std::string(text) + ": FIRST (" + std::to_string(spec.first) +
           ") is after LAST (" + std::to_string(spec.last) + ")";
  }
  return "";
}

// A --delay/--duration value: non-negative seconds, at most a week. Returns "" or the reason.
inline std::string parseCaptureSeconds(std::string_view option, std::string_view text, double& out) {
  const std::string copy(text);
  char* end = nullptr;
  out = copy.empty() ? -1.0 : std::strtod(copy.c_str(), &end);
  if (copy.empty() || *end != '\0' || !(out >= 0.0) || out > 7 * 24 * 3600.0) {
    return "bad " + std::string(option) + " '" + copy + "' (expected seconds, e.g. 5 or 0.5)";
  }
  return "";
}

// "nvtx:step@50-60", "cudaProfilerApi", "signal"; then " delay 5 s", " duration 10 s" as given.
inline std::string describeCapture(const CaptureSpec& spec) {
  std::string text;
  switch (spec.kind) {
    case CaptureKind::kCudaProfilerApi: text = "cudaProfilerApi"; break;
    case CaptureKind::kSignal: text = "signal"; break;
    case CaptureKind::kNvtx:
      text = "nvtx:" + spec.range + "@" + std::to_string(spec.first);
      if (spec.last != spec.first) text += "-" + std::to_string(spec.last);
      break;
    case CaptureKind::kNone: break;
  }
  auto seconds = [](double value) {
    std::string s = std::to_string(value);
    s.erase(s.find_last_not_of('0') + 1);
    if (!s.empty() && s.back() == '.') s.pop_back();
    return s;
  };
  if (spec.delay_s > 0.0) text += std::string(text.empty() ? "" : " ") + "delay " + seconds(spec.delay_s) + " s";
  if (spec.duration_s > 0.0) {
    text += std::string(text.empty() ? "" : " ") + "duration " + seconds(spec.duration_s) + " s";
  }
  return text;
}

// The spec from the three environment variables `record` sets; `error` gets the first problem
// (the collector then records the whole run and warns).
template <typename Lookup>
CaptureSpec captureSpecFrom(Lookup lookup, std::string& error) {
  CaptureSpec spec;
  error.clear();
  const char* kind = lookup(kEnvCapture);
  if (kind != nullptr && *kind != '\0') error = parseCaptureKind(kind, spec);
  const char* delay = lookup(kEnvCaptureDelay);
  if (error.empty() && delay != nullptr && *delay != '\0') error = parseCaptureSeconds(kEnvCaptureDelay, delay, spec.delay_s);
  const char* duration = lookup(kEnvCaptureDuration);
  if (error.empty() && duration != nullptr && *duration != '\0') {
    error = parseCaptureSeconds(kEnvCaptureDuration, duration, spec.duration_s);
  }
  if (!error.empty()) spec = CaptureSpec{};
  return spec;
}

}  // namespace cuoverlap::schema
