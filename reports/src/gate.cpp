#include "cuoverlap/gate.h"

#include <fmt/format.h>

#include <iterator>

#include "cuoverlap/error.h"
#include "cuoverlap/units.h"
#include "render_common.h"

namespace cuoverlap {
namespace {

void addMetricCheck(std::vector<GateCheck>& checks, const TraceReport& trace,
                    const DeviceMetrics& m, std::string_view name, double value,
                    std::optional<double> threshold, bool at_least) {
  if (!threshold) return;
  GateCheck check;
  check.trace = trace.path;
  check.device_id = m.device_id;
  check.name = std::string(name);
  check.expectation = fmt::format("{} {:.4f}", at_least ? ">=" : "<=", *threshold);
  check.actual = fmt::format("{:.4f}", value);
  check.passed = at_least ? value >= *threshold : value <= *threshold;
  checks.push_back(std::move(check));
}

void addFindingCheck(std::vector<GateCheck>& checks, const TraceReport& trace, const std::string& id) {
  GateCheck check;
  check.trace = trace.path;
  check.name = "finding " + id;
  check.expectation = "absent";
  bool present = false;
  std::uint64_t count = 0;
  Ns time_ns = 0;
  for (const Finding& finding : trace.findings) {
    if (finding.id != id) continue;
    present = true;
    count += finding.count;
    time_ns += finding.time_ns;
  }
  check.passed = !present;
  check.actual = present ? fmt::format("present: {} occurrence(s), about {} lost", count,
                                       units::formatDuration(time_ns))
                         : "absent";
  checks.push_back(std::move(check));
}

void addRankSkewCheck(std::vector<GateCheck>& checks, const Report& report, Ns max_skew) {
  GateCheck check;
  check.trace = "job";
  check.name = "max_rank_skew";
  check.expectation = "<= " + units::formatDuration(max_skew);
  if (!report.job || report.job->matched == 0) {
    check.actual = "no collectives matched across ranks (give the files of every rank)";
    check.passed = false;
  } else {
    check.actual = units::formatDuration(report.job->max_skew_ns);
    check.passed = report.job->max_skew_ns <= max_skew;
  }
  checks.push_back(std::move(check));
}

void addJobFindingCheck(std::vector<GateCheck>& checks, const JobAnalysis& job, const std::string& id) {
  TraceReport as_trace;
  as_trace.path = "job";
  as_trace.findings = job.findings;
  addFindingCheck(checks, as_trace, id);
}

}  // namespace

const std::vector<std::string>& knownFindingIds() {
  static const std::vector<std::string> kIds = {
      "legacy-default-stream", "single-stream",      "pageable-memcpy",
      "sync-memcpy",           "sync-memset",        "blocking-sync-call",
      "implicit-sync-call",    "event-wait-serialization", "host-launch-bound",
      "device-saturating-kernel", "low-overlap",
      "exposed-communication",    "communication-serialized", "rank-straggler",
      "host-busy",             "module-load",        "many-small-copies",
      "early-result-wait",
  };
  return kIds;
}

double parseFraction(const std::string& text, const std::string& option) {
  std::string number = text;
  double scale = 1.0;
  if (!number.empty() && number.back() == '%') {
    number.pop_back();
    scale = 0.01;
  }
  std::size_t used = 0;
  double value = 0.0;
  try {
    value = std::stod(number, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (number.empty() || used != number.size()) {
    throw UserError(fmt::format("{}: '{}' is not a number (use 0.6 or 60%)", option, text));
  }
  value *= scale;
  if (!(value >= 0.0 && value <= 1.0)) {
    throw UserError(fmt::format("{}: '{}' is outside 0..1 (0%..100%)", option, text));
  }
  return value;
}

std::vector<GateCheck> evaluateGate(const Report& report, const GateThresholds& thresholds) {
  std::vector<GateCheck> checks;
  for (const TraceReport& trace : report.traces) {
    for (const DeviceReport& device : trace.devices) {
      const DeviceMetrics& m = device.metrics;
      addMetricCheck(checks, trace, m, "overlap_ratio", m.overlap_ratio, thresholds.min_overlap, true);
      addMetricCheck(checks, trace, m, "copy_hidden_fraction", m.copy_hidden_fraction,
                     thresholds.min_copy_hidden, true);
      addMetricCheck(checks, trace, m, "idle_fraction", units::idleShare(m),
                     thresholds.max_idle_fraction, false);
      addMetricCheck(checks, trace, m, "pipeline_efficiency", m.pipeline_efficiency,
                     thresholds.min_pipeline_efficiency, true);
      if (m.communication.kernels > 0) {
        addMetricCheck(checks, trace, m, "comm_hidden_fraction", m.communication.hidden_fraction,
                       thresholds.min_comm_hidden, true);
      }
    }
    for (const std::string& id : thresholds.fail_on) addFindingCheck(checks, trace, id);
  }
  if (thresholds.max_rank_skew_ns) addRankSkewCheck(checks, report, *thresholds.max_rank_skew_ns);
  if (report.job) {
    for (const std::string& id : thresholds.fail_on) addJobFindingCheck(checks, *report.job, id);
  }
  return checks;
}

std::string terminalSafe(std::string_view text) { return render::inert(text); }

std::string formatGateCheck(const GateCheck& check) {
  const std::string where =
      check.device_id ? fmt::format("device {}", *check.device_id) : std::string("all devices");
  return render::inert(fmt::format("{}  {}  {}  {}  {} ({})", check.passed ? "PASS" : "FAIL",
                                   check.trace, where, check.name, check.actual, check.expectation));
}

std::string escapeXml(std::string_view text) {
  // render::inert leaves valid UTF-8 without the characters XML 1.0 forbids (C0 controls but tab
  // and newline, U+FFFE/U+FFFF, surrogates), shown visibly instead; what is left is markup.
  // Tab and newline are references, so that attribute value normalization keeps them.
  const std::string safe = render::inert(text, render::Newlines::kKeep);
  std::string out;
  out.reserve(safe.size());
  for (char c : safe) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      case '\n': out += "&#10;"; break;
      case '\t': out += "&#9;"; break;
      default: out += c;
    }
  }
  return out;
}

}  // namespace cuoverlap
