// Summing range instances (--range): per device, counts and times are added; ratios are
// recomputed from the sums (overlap_ratio = 1 - busy/sum, pipeline_efficiency = ideal/span,
// engine shares = busy/span), and copy_hidden_fraction is the instances' fractions weighted by
// their copy-engine busy time. Gaps: counts, times and per-cause totals added, the largest 10 kept.
// Findings: merged per (id, device) with counts and times added and the worst severity; the
// summary says in how many instances it fired, and instance_saving spreads its fix's saving over
// the instances (0 in those it did not fire in). first_start/last_end: the earliest and latest op
// of any instance, so that gap and evidence times print relative to the device's first op.
// Spreads: per device, the median and p90 (nearest rank) of each instance's ratios.
#include "diagnosis/range_aggregate.h"

#include <algorithm>
#include <cmath>
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
  if (m.last_end > m.first_start || m.kernels + m.memcpys + m.memsets > 0) {
    const bool first = sum.kernels + sum.memcpys + sum.memsets == 0;
    sum.first_start = first ? m.first_start : std::min(sum.first_start, m.first_start);
    sum.last_end = first ? m.last_end : std::max(sum.last_end, m.last_end);
  }
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

template <typename T>
T nearestRank(std::vector<T> values, double q) {
  if (values.empty()) return T{};
  const auto rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(values.size())));
  const std::size_t index = std::min(values.size() - 1, rank == 0 ? 0 : rank - 1);
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(index), values.end());
  return values[index];
}

RatioSpread spreadOf(const std::vector<double>& values) {
  return {nearestRank(values, 0.5), nearestRank(values, 0.9)};
}

}  // namespace

DurationSpread durationSpread(const std::vector<Ns>& values) {
  if (values.empty()) return {};
  return {nearestRank(values, 0.5), nearestRank(values, 0.1), nearestRank(values, 0.9),
          *std::max_element(values.begin(), values.end())};
}

void RangeAggregator::add(std::size_t instance, const DeviceReport& device,
                          const std::vector<Finding>& findings) {
  PerDevice& d = devices_[device.metrics.device_id];
  d.sum.metrics.device_id = device.metrics.device_id;
  d.sum.metrics.name = device.metrics.name;
  addMetrics(d.sum.metrics, device.metrics, d.hidden_weighted);
  addGaps(d.sum.gaps, device.gaps);
  d.sum.explained.explainable_ns += device.explained.explainable_ns;
  d.sum.explained.explained_ns += device.explained.explained_ns;
  d.sum.explained.ideal_reduction_ns += device.explained.ideal_reduction_ns;
  const DeviceMetrics& m = device.metrics;
  if (m.kernels + m.memcpys + m.memsets > 0) {
    d.overlap.push_back(m.overlap_ratio);
    d.hidden.push_back(m.copy_hidden_fraction);
    d.efficiency.push_back(m.pipeline_efficiency);
    d.idle.push_back(m.span_ns > 0 ? static_cast<double>(m.idle_ns) / m.span_ns : 0.0);
  }
  for (const Finding& f : findings) {
    auto it = std::find_if(merged_.begin(), merged_.end(), [&](const Merged& m2) {
      return m2.finding.id == f.id && m2.finding.device_id == f.device_id;
    });
    if (it == merged_.end()) {
      merged_.push_back({f, {{instance, fixSavingNs(f)}}});
      continue;
    }
    if (it->savings.back().first == instance) {  // the same id twice in one instance: one saving
      it->savings.back().second += fixSavingNs(f);
    } else {
      it->savings.emplace_back(instance, fixSavingNs(f));
    }
    it->finding.count += f.count;
    it->finding.time_ns += f.time_ns;
    it->finding.ideal_reduction_ns += f.ideal_reduction_ns;
    // What the ledger left uncharged, summed too: the rendered "fixing it alone would save about
    // X; of that, Y is already charged to ..." is the instances' total, not the first one's.
    it->finding.estimated_ns += f.estimated_ns;
    it->finding.charged_elsewhere_ns += f.charged_elsewhere_ns;
    it->finding.beyond_explainable_ns += f.beyond_explainable_ns;
    it->finding.beyond_region_ns += f.beyond_region_ns;
    for (const std::string& id : f.charged_to) {
      if (std::find(it->finding.charged_to.begin(), it->finding.charged_to.end(), id) ==
          it->finding.charged_to.end()) {
        it->finding.charged_to.push_back(id);
      }
    }
    for (const FixSaving& fix : f.fixes) {
      auto same = std::find_if(it->finding.fixes.begin(), it->finding.fixes.end(),
                               [&](const FixSaving& g) {
                                 return g.fix == fix.fix && g.stream == fix.stream && g.thread == fix.thread;
                               });
      if (same == it->finding.fixes.end()) {
        it->finding.fixes.push_back(fix);
      } else {
        same->saving_ns += fix.saving_ns;
      }
    }
    it->finding.severity = std::max(it->finding.severity, f.severity);
    for (const Evidence& e : f.evidence) {
      if (it->finding.evidence.size() < 5) it->finding.evidence.push_back(e);
    }
  }
}

std::vector<DeviceReport> RangeAggregator::devices() const {
  std::vector<DeviceReport> result;
  for (const auto& [id, d] : devices_) {
    DeviceReport report = d.sum;
    finish(report, d.hidden_weighted);
    FindingsExplained& e = report.explained;
    e.fraction = e.explainable_ns > 0 ? static_cast<double>(e.explained_ns) / e.explainable_ns : 0.0;
    result.push_back(std::move(report));
  }
  return result;
}

std::vector<RangeDeviceSpread> RangeAggregator::spreads() const {
  std::vector<RangeDeviceSpread> result;
  for (const auto& [id, d] : devices_) {
    result.push_back({id, d.overlap.size(), spreadOf(d.overlap), spreadOf(d.hidden),
                      spreadOf(d.efficiency), spreadOf(d.idle)});
  }
  return result;
}

// Each summary was written for one instance; say so rather than show its count as the total.
std::vector<Finding> RangeAggregator::findings() const {
  std::vector<Finding> result;
  for (const Merged& m : merged_) {
    Finding f = m.finding;
    const std::size_t fired = m.savings.size();
    f.summary = fmt::format("in {} of {} range instances; first: {}", fired, instances_, f.summary);
    // What its fix saves over the instances: each instance's fix saving summed (the first
    // instance's estimate and fix_alone_ns alone would say what it saves in that one).
    Ns total = 0;
    for (const auto& [instance, ns] : m.savings) total += ns;
    f.fix_alone_ns = total;
    if (instances_ >= 2) {
      std::vector<Ns> saving(instances_ - std::min(instances_, fired), 0);
      for (const auto& [instance, ns] : m.savings) saving.push_back(ns);
      f.instance_saving = InstanceSaving{instances_, fired, durationSpread(saving)};
    }
    result.push_back(std::move(f));
  }
  std::stable_sort(result.begin(), result.end(),
                   [](const Finding& a, const Finding& b) { return a.time_ns > b.time_ns; });
  return result;
}

std::vector<DeviceReport> sumRangeInstances(const std::vector<RangeInstance>& instances) {
  RangeAggregator sum(instances.size());
  for (std::size_t i = 0; i < instances.size(); ++i) {
    for (const DeviceReport& device : instances[i].devices) sum.add(i, device, {});
  }
  return sum.devices();
}

std::vector<Finding> mergeRangeFindings(const std::vector<RangeInstance>& instances) {
  RangeAggregator sum(instances.size());
  for (std::size_t i = 0; i < instances.size(); ++i) {
    sum.add(i, DeviceReport{}, instances[i].findings);
  }
  return sum.findings();
}

}  // namespace cuoverlap
