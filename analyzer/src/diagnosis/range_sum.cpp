// Summing range instances (--range): per device, counts and times are added; ratios are
// recomputed from the sums (overlap_ratio = 1 - busy/sum, pipeline_efficiency = ideal/span,
// engine shares = busy/span), and copy_hidden_fraction is the instances' fractions weighted by
// their copy-engine busy time; communication times are added and its hidden_fraction recomputed. Gaps: counts, times and per-cause totals added, the largest 10 kept.
// Findings: merged per (id, device) with counts and times added and the worst severity.
#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "cuoverlap/diagnosis.h"

namespace cuoverlap {
namespace {

Ns copyBusy(const DeviceMetrics& m) {
  Ns busy = 0;
  for (const EngineUsage& e : m.engines) {
    if (e.engine != Engine::kCompute && e.engine != Engine::kMemset && e.engine != Engine::kComm) {
      busy += e.busy_ns;
    }
  }
  return busy;
}

void addMetrics(DeviceMetrics& sum, const DeviceMetrics& m, double& hidden_weighted) {
  sum.kernels += m.kernels;
  sum.memcpys += m.memcpys;
  sum.memsets += m.memsets;
  sum.span_ns += m.span_ns;
  sum.busy_ns += m.busy_ns;
  sum.idle_ns += m.idle_ns;
  sum.sum_ns += m.sum_ns;
  sum.ideal_ns += m.ideal_ns;
  sum.communication.kernels += m.communication.kernels;
  sum.communication.busy_ns += m.communication.busy_ns;
  sum.communication.hidden_ns += m.communication.hidden_ns;
  sum.communication.exposed_ns += m.communication.exposed_ns;
  hidden_weighted += m.copy_hidden_fraction * static_cast<double>(copyBusy(m));
  if (sum.engines.size() < m.engines.size()) sum.engines.resize(m.engines.size());
  for (std::size_t i = 0; i < m.engines.size(); ++i) {
    sum.engines[i].engine = m.engines[i].engine;
    sum.engines[i].busy_ns += m.engines[i].busy_ns;
  }
  if (sum.concurrency_ns.size() < m.concurrency_ns.size()) {
    sum.concurrency_ns.resize(m.concurrency_ns.size());
  }
  for (std::size_t k = 0; k < m.concurrency_ns.size(); ++k) sum.concurrency_ns[k] += m.concurrency_ns[k];
}

void addGaps(GapAnalysis& sum, const GapAnalysis& g) {
  sum.threshold_ns = g.threshold_ns;
  sum.count += g.count;
  sum.time_ns += g.time_ns;
  for (const GapCauseTotal& t : g.totals) {
    auto it = std::find_if(sum.totals.begin(), sum.totals.end(),
                           [&](const GapCauseTotal& s) { return s.cause == t.cause; });
    if (it == sum.totals.end()) it = sum.totals.insert(sum.totals.end(), GapCauseTotal{t.cause});
    it->count += t.count;
    it->time_ns += t.time_ns;
  }
  sum.largest.insert(sum.largest.end(), g.largest.begin(), g.largest.end());
}

void finish(DeviceReport& report, double hidden_weighted) {
  DeviceMetrics& m = report.metrics;
  m.overlap_ratio = m.sum_ns > 0 ? 1.0 - static_cast<double>(m.busy_ns) / m.sum_ns : 0.0;
  m.pipeline_efficiency = m.span_ns > 0 ? static_cast<double>(m.ideal_ns) / m.span_ns : 0.0;
  for (EngineUsage& e : m.engines) {
    e.share = m.span_ns > 0 ? static_cast<double>(e.busy_ns) / m.span_ns : 0.0;
  }
  m.communication.hidden_fraction =
      m.communication.busy_ns > 0
          ? static_cast<double>(m.communication.hidden_ns) / m.communication.busy_ns
          : 0.0;
  const Ns copy = copyBusy(m);
  m.copy_hidden_fraction = copy > 0 ? hidden_weighted / static_cast<double>(copy) : 0.0;
  GapAnalysis& g = report.gaps;
  for (GapCauseTotal& t : g.totals) {
    t.share_of_idle = m.idle_ns > 0 ? static_cast<double>(t.time_ns) / m.idle_ns : 0.0;
  }
  std::stable_sort(g.totals.begin(), g.totals.end(),
                   [](const auto& a, const auto& b) { return a.time_ns > b.time_ns; });
  std::stable_sort(g.largest.begin(), g.largest.end(),
                   [](const IdleGap& a, const IdleGap& b) { return a.duration() > b.duration(); });
  if (g.largest.size() > kLargestGaps) g.largest.resize(kLargestGaps);
  std::stable_sort(g.largest.begin(), g.largest.end(),
                   [](const IdleGap& a, const IdleGap& b) { return a.start < b.start; });
}

}  // namespace

std::vector<DeviceReport> sumRangeInstances(const std::vector<RangeInstance>& instances) {
  std::map<std::uint16_t, std::pair<DeviceReport, double>> sums;
  for (const RangeInstance& instance : instances) {
    for (const DeviceReport& device : instance.devices) {
      auto& [sum, hidden] = sums[device.metrics.device_id];
      sum.metrics.device_id = device.metrics.device_id;
      sum.metrics.name = device.metrics.name;
      addMetrics(sum.metrics, device.metrics, hidden);
      addGaps(sum.gaps, device.gaps);
      sum.explained.explainable_ns += device.explained.explainable_ns;
      sum.explained.explained_ns += device.explained.explained_ns;
    }
  }
  std::vector<DeviceReport> result;
  for (auto& [id, entry] : sums) {
    finish(entry.first, entry.second);
    FindingsExplained& e = entry.first.explained;
    e.fraction = e.explainable_ns > 0 ? static_cast<double>(e.explained_ns) / e.explainable_ns : 0.0;
    result.push_back(std::move(entry.first));
  }
  return result;
}

std::vector<Finding> mergeRangeFindings(const std::vector<RangeInstance>& instances) {
  std::vector<Finding> merged;
  std::vector<std::size_t> instances_of;  // per merged finding: instances where it fired
  for (const RangeInstance& instance : instances) {
    for (const Finding& f : instance.findings) {
      auto it = std::find_if(merged.begin(), merged.end(), [&](const Finding& m) {
        return m.id == f.id && m.device_id == f.device_id;
      });
      if (it == merged.end()) {
        merged.push_back(f);
        instances_of.push_back(1);
        continue;
      }
      ++instances_of[static_cast<std::size_t>(it - merged.begin())];
      it->count += f.count;
      it->time_ns += f.time_ns;
      it->severity = std::max(it->severity, f.severity);
      for (const Evidence& e : f.evidence) {
        if (it->evidence.size() < 5) it->evidence.push_back(e);
      }
    }
  }
  // Each summary was written for one instance; say so rather than show its count as the total.
  for (std::size_t i = 0; i < merged.size(); ++i) {
    merged[i].summary = fmt::format("in {} of {} range instances; first: {}", instances_of[i],
                                    instances.size(), merged[i].summary);
  }
  std::stable_sort(merged.begin(), merged.end(),
                   [](const Finding& a, const Finding& b) { return a.time_ns > b.time_ns; });
  return merged;
}

}  // namespace cuoverlap
