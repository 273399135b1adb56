// A rank's wait for late peers, left out of its exposed communication (definition: peer_wait.h).
#include "peer_wait.h"

#include <algorithm>

#include <fmt/format.h>

#include "cuoverlap/units.h"
#include "diagnosis/finding_builder.h"
#include "diagnosis/rules/rules.h"

namespace cuoverlap::job {
namespace {

constexpr std::string_view kExposedCommunication = "exposed-communication";

// The exposed-communication finding of `device` with `wait` of its exposed time left out.
// Returns how much of the device's charged cost that gives up.
Ns discount(std::vector<Finding>& findings, DeviceReport& device, Ns wait) {
  const auto it = std::find_if(findings.begin(), findings.end(), [&](const Finding& f) {
    return f.id == kExposedCommunication && f.device_id == device.metrics.device_id;
  });
  if (it == findings.end() || wait <= 0) return 0;
  const Ns exposed = device.metrics.communication.exposed_ns;
  wait = std::min(wait, exposed);
  const Ns left = exposed - wait;
  const double span = static_cast<double>(device.metrics.span_ns);
  if (left < diagnosis::kMinimumCostNs ||
      static_cast<double>(left) < diagnosis::kExposedCommunicationMinShare * span) {
    const Ns given_up = it->time_ns;
    findings.erase(it);
    return given_up;
  }
  Finding& f = *it;
  // The rule's overlap efficiency (estimate = efficiency x exposed time) carries over.
  const double efficiency = exposed > 0 ? static_cast<double>(f.estimated_ns) / static_cast<double>(exposed) : 1.0;
  const Ns estimate = static_cast<Ns>(efficiency * static_cast<double>(left));
  const double scale = f.estimated_ns > 0 ? static_cast<double>(estimate) / static_cast<double>(f.estimated_ns) : 0.0;
  const auto scaled = [scale](Ns v) { return static_cast<Ns>(scale * static_cast<double>(v)); };
  const Ns time = scaled(f.time_ns);
  const Ns given_up = f.time_ns - time;
  f.estimated_ns = estimate;
  f.time_ns = time;
  f.charged_elsewhere_ns = scaled(f.charged_elsewhere_ns);
  f.beyond_region_ns = scaled(f.beyond_region_ns);
  f.beyond_explainable_ns = std::max<Ns>(0, estimate - time - f.charged_elsewhere_ns - f.beyond_region_ns);
  if (time <= 0) {
    f.severity = Severity::kInfo;
  } else if (f.base_severity == Severity::kWarning) {
    f.severity = static_cast<double>(time) >= diagnosis::kErrorShareOfSpan * span ? Severity::kError
                                                                                   : Severity::kWarning;
  }
  f.summary += fmt::format(
      "; {} of that exposed time was this rank waiting at the start of collectives for a later rank "
      "to start them (skew, rank-straggler's, which no overlap on this rank hides): left out, "
      "hiding the rest would save about {}",
      units::formatDuration(wait), units::formatDuration(estimate));
  return given_up;
}

void lowerExplained(FindingsExplained& explained, Ns given_up) {
  explained.explained_ns = std::max<Ns>(0, explained.explained_ns - given_up);
  explained.fraction = explained.explainable_ns > 0
                           ? static_cast<double>(explained.explained_ns) / explained.explainable_ns
                           : 0.0;
}

}  // namespace

Ns exposedWithin(const RankCollective& collective, Ns wait) {
  Ns total = 0;
  for (const Interval& piece : collective.exposed) {
    if (piece.start >= wait) break;
    total += std::min(piece.end, wait) - piece.start;
  }
  return total;
}

void PeerWaitTally::add(const Match& match) {
  const Ns last_start = match.first_start + match.skew;
  for (const auto& [row, collective] : match.by_rank) {
    if (row == match.last_row) continue;
    const Ns own_start = collective->start - offsets_[row];
    const Ns exposed = exposedWithin(*collective, last_start - own_start);
    rows_[row].comm_peer_wait_ns += exposed;
    const std::optional<Interval>& steady = ranks_[row].steady_window;
    if (steady && collective->start >= steady->start && collective->start < steady->end) {
      rows_[row].comm_peer_wait_steady_ns += exposed;
    }
  }
}

void discountPeerWaits(Report& report) {
  if (!report.job) return;
  for (const RankRow& row : report.job->ranks) {
    if (row.file_index >= report.traces.size()) continue;
    TraceReport& trace = report.traces[row.file_index];
    for (DeviceReport& device : trace.devices) {
      if (device.metrics.device_id != row.device_id) continue;
      lowerExplained(device.explained, discount(trace.findings, device, row.comm_peer_wait_ns));
    }
    if (!trace.steady_state || !trace.steady_state->found) continue;
    for (DeviceReport& device : trace.steady_state->devices) {
      if (device.metrics.device_id != row.device_id) continue;
      lowerExplained(device.explained,
                     discount(trace.steady_state->findings, device, row.comm_peer_wait_steady_ns));
    }
  }
}

}  // namespace cuoverlap::job
