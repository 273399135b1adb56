// JUnit XML as GitHub Actions reporters, GitLab and Jenkins read it: <testsuites> with totals,
// one <testsuite> per trace, one <testcase> per check with a <failure> when it failed.
#include <fmt/format.h>

#include <iterator>
#include <string>
#include <vector>

#include "cuoverlap/gate.h"

namespace cuoverlap {
namespace {

double secondsOf(const JunitRun& run, const std::string& trace) {
  for (const auto& [path, seconds] : run.trace_seconds) {
    if (path == trace) return seconds;
  }
  return 0.0;
}

double totalSeconds(const JunitRun& run) {
  double total = 0.0;
  for (const auto& entry : run.trace_seconds) total += entry.second;
  return total;
}

std::string suiteAttributes(const JunitRun& run, double seconds) {
  std::string attributes = fmt::format(" time=\"{:.3f}\"", seconds);
  if (!run.timestamp.empty()) attributes += fmt::format(" timestamp=\"{}\"", escapeXml(run.timestamp));
  if (!run.hostname.empty()) attributes += fmt::format(" hostname=\"{}\"", escapeXml(run.hostname));
  return attributes;
}

std::size_t countFailures(const std::vector<const GateCheck*>& checks) {
  std::size_t failures = 0;
  for (const GateCheck* check : checks) failures += check->passed ? 0 : 1;
  return failures;
}

void appendCase(std::string& out, const GateCheck& check) {
  const std::string where =
      check.device_id ? fmt::format("device {}: ", *check.device_id) : std::string();
  const std::string name = fmt::format("{}{} {}", where, check.name, check.expectation);
  fmt::format_to(std::back_inserter(out),
                 "    <testcase classname=\"cuoverlap.gate\" name=\"{}\" time=\"0.000\">",
                 escapeXml(name));
  if (!check.passed) {
    const std::string message = fmt::format("{}: {}, expected {}", check.name, check.actual, check.expectation);
    fmt::format_to(std::back_inserter(out), "\n      <failure message=\"{0}\" type=\"threshold\">{0}</failure>\n    ",
                   escapeXml(message));
  }
  out += "</testcase>\n";
}

}  // namespace

std::string gateJunitXml(const std::vector<GateCheck>& checks, const JunitRun& run) {
  // Group by trace, keeping the order in which traces were given.
  std::vector<std::pair<std::string, std::vector<const GateCheck*>>> suites;
  for (const GateCheck& check : checks) {
    if (suites.empty() || suites.back().first != check.trace) suites.push_back({check.trace, {}});
    suites.back().second.push_back(&check);
  }
  std::size_t failures = 0;
  for (const auto& suite : suites) failures += countFailures(suite.second);
  std::string out = fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"cuoverlap gate\" tests=\"{}\" "
      "failures=\"{}\" errors=\"0\" time=\"{:.3f}\">\n",
      checks.size(), failures, totalSeconds(run));
  for (const auto& [trace, suite_checks] : suites) {
    fmt::format_to(std::back_inserter(out),
                   "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"0\"{}>\n",
                   escapeXml(trace), suite_checks.size(), countFailures(suite_checks),
                   suiteAttributes(run, secondsOf(run, trace)));
    for (const auto& [path, scope] : run.trace_scopes) {
      if (path != trace) continue;
      fmt::format_to(std::back_inserter(out),
                     "    <properties>\n      <property name=\"scope\" value=\"{}\"/>\n    </properties>\n",
                     escapeXml(scope));
    }
    for (const GateCheck* check : suite_checks) appendCase(out, *check);
    out += "  </testsuite>\n";
  }
  out += "</testsuites>\n";
  return out;
}

std::string gateJunitErrorXml(const std::string& message, const JunitRun& run) {
  const std::string text = escapeXml(message);
  return fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<testsuites name=\"cuoverlap gate\" tests=\"1\" failures=\"0\" errors=\"1\" time=\"{0:.3f}\">\n"
      "  <testsuite name=\"cuoverlap gate\" tests=\"1\" failures=\"0\" errors=\"1\" skipped=\"0\"{1}>\n"
      "    <testcase classname=\"cuoverlap.gate\" name=\"gate could not judge the traces\" time=\"0.000\">\n"
      "      <error message=\"{2}\" type=\"bad-input\">{2}</error>\n"
      "    </testcase>\n"
      "  </testsuite>\n"
      "</testsuites>\n",
      totalSeconds(run), suiteAttributes(run, totalSeconds(run)), text);
}

}  // namespace cuoverlap
