// The CI gate: thresholds on the overlap metrics and forbidden findings, checked per device of
// every trace in a Report. Each check is one line of output and one JUnit test case.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cuoverlap/report.h"

namespace cuoverlap {

struct GateThresholds {
  std::optional<double> min_overlap;              // overlap_ratio >= X
  std::optional<double> min_copy_hidden;          // copy_hidden_fraction >= X
  std::optional<double> max_idle_fraction;        // idle_ns / span_ns <= X
  std::optional<double> min_pipeline_efficiency;  // pipeline_efficiency >= X
  std::optional<double> min_comm_hidden;          // communication.hidden_fraction >= X, per
                                                  // device that ran communication kernels
  std::optional<Ns> max_rank_skew_ns;             // job: largest collective skew <= D
  std::vector<std::string> fail_on;               // finding ids that must not appear

  bool empty() const {
    return !min_overlap && !min_copy_hidden && !max_idle_fraction && !min_pipeline_efficiency &&
           !min_comm_hidden && !max_rank_skew_ns && fail_on.empty();
  }
};

struct GateCheck {
  std::string trace;               // the trace's path
  std::optional<std::uint16_t> device_id;  // empty for finding checks (the whole scoped trace)
  std::string name;                // "overlap_ratio", ..., or "finding legacy-default-stream"
  std::string expectation;         // ">= 0.6000", "<= 0.1000", "absent"
  std::string actual;              // "0.2857", or "present: 3 occurrence(s), about 1.2 ms lost"
  bool passed = false;
};

// The finding ids --fail-on accepts (docs/findings.md); a typo must not make a gate pass silently.
const std::vector<std::string>& knownFindingIds();

// A threshold as the user wrote it: a fraction ("0.6") or a percentage ("60%"), within [0, 1].
// Throws UserError naming `option` otherwise.
double parseFraction(const std::string& text, const std::string& option);

// Metric checks per device of each trace, then one check per --fail-on id per trace (fails when
// a finding with that id is in the trace's findings, which the analysis already scoped). The
// communication check skips devices without communication kernels; the rank-skew check is one
// check over the job (failed when the files hold no job: fewer than two communicating ranks), and
// job findings (rank-straggler) count for --fail-on in a check of their own.
std::vector<GateCheck> evaluateGate(const Report& report, const GateThresholds& thresholds);

// Text from a trace (a path, a name) made inert for a terminal: controls, bidi and invalid UTF-8
// escaped visibly (the same rule as every text report).
std::string terminalSafe(std::string_view text);

// "PASS  trace.sqlite  device 0  overlap_ratio  0.7340 (>= 0.6000)"
std::string formatGateCheck(const GateCheck& check);

// What a CI system shows beside the checks: when and where the gate ran and how long each trace
// took to read and analyze (a suite's `time`; a check itself takes no measurable time).
struct JunitRun {
  std::string timestamp;  // ISO 8601, e.g. "2026-11-22T09:30:00"
  std::string hostname;
  std::vector<std::pair<std::string, double>> trace_seconds;  // per trace path
  std::vector<std::pair<std::string, std::string>> trace_scopes;  // per trace path: what was judged
};

// A JUnit XML document: one <testsuite> per trace, one <testcase> per check, <failure> on fails.
std::string gateJunitXml(const std::vector<GateCheck>& checks, const JunitRun& run = {});
// The document for a gate that could not judge (bad input or usage, exit 2): one suite with one
// <testcase> holding an <error> with the message, so CI shows why.
std::string gateJunitErrorXml(const std::string& message, const JunitRun& run = {});

// Text made safe for XML 1.0 element content and quoted attributes.
std::string escapeXml(std::string_view text);

}  // namespace cuoverlap
