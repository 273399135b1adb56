#include "cuoverlap/gpu_metrics.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>

#include "cuoverlap/kernel_name.h"

namespace cuoverlap {
namespace {

// One metric's integral over some stretch of time: the bytes its samples moved there, or its value
// weighted by the time, and the time the samples cover.
struct Integral {
  double weighted = 0;
  Ns covered = 0;

  std::optional<double> value(bool bytes) const {
    if (covered <= 0) return std::nullopt;
    return bytes ? weighted * 1e9 / static_cast<double>(covered) : weighted / static_cast<double>(covered);
  }
};

// Adds the part of `series` inside [begin, end) to `into`, each sample over its sampleSpan.
void integrate(const GpuMetricSeries& series, Ns interval, Ns begin, Ns end, bool bytes, Integral& into) {
  if (end <= begin || series.times.empty()) return;
  const auto& t = series.times;
  // The first sample that may reach `begin`: the one before the first that starts after it.
  std::size_t i = static_cast<std::size_t>(std::upper_bound(t.begin(), t.end(), begin) - t.begin());
  if (i > 0) --i;
  for (; i < t.size() && t[i] < end; ++i) {
    const Ns span = sampleSpan(series, i, interval);
    const Ns overlap = std::min(end, t[i] + span) - std::max(begin, t[i]);
    if (span <= 0 || overlap <= 0) continue;
    const double part = static_cast<double>(overlap) / static_cast<double>(span);
    into.weighted += bytes ? series.values[i] * part : series.values[i] * static_cast<double>(overlap);
    into.covered += overlap;
  }
}

// The ops of one device in start order, with the latest end among each op and those before it.
struct DeviceOps {
  std::vector<std::size_t> ops;  // indices into Trace::ops
  std::vector<Ns> reach;         // reach[j]: max end of ops[0..j]
};

// Adds a kernel's share of `series` to `into`: each sample it overlaps counts for the part of the
// sample's busy time (the sum of the device's ops' overlaps with it) that is the kernel's. The
// counters read zero where nothing runs, so a kernel alone in a sample gets the whole sample's
// bytes (and its mean the sample's, scaled to the kernel's share of the sample), whatever the
// interval: a 30 µs kernel is measured as well at 100 µs samples as at 10.
void attribute(const Trace& trace, const DeviceOps& device, std::size_t k, const GpuMetricSeries& series,
               Ns interval, bool bytes, Integral& into) {
  const GpuOp& op = trace.ops[device.ops[k]];
  const auto& t = series.times;
  std::size_t i = static_cast<std::size_t>(std::upper_bound(t.begin(), t.end(), op.start) - t.begin());
  if (i > 0) --i;
  for (; i < t.size() && t[i] < op.end; ++i) {
    const Ns span_end = t[i] + sampleSpan(series, i, interval);
    const auto overlap = [&](const GpuOp& o) { return std::max<Ns>(0, std::min(o.end, span_end) - std::max(o.start, t[i])); };
    const Ns own = overlap(op);
    if (own <= 0 || span_end <= t[i]) continue;
    Ns busy = own;
    for (std::size_t j = k; j > 0 && device.reach[j - 1] > t[i]; --j) busy += overlap(trace.ops[device.ops[j - 1]]);
    for (std::size_t j = k + 1; j < device.ops.size() && trace.ops[device.ops[j]].start < span_end; ++j) {
      busy += overlap(trace.ops[device.ops[j]]);
    }
    const double share = static_cast<double>(own) / static_cast<double>(busy);
    const double amount = bytes ? series.values[i] : series.values[i] * static_cast<double>(span_end - t[i]);
    into.weighted += amount * share;
    into.covered += own;
  }
}

std::optional<std::uint64_t> sessionNumber(const Trace& trace, std::string_view key) {
  for (const auto& [k, v] : trace.session) {
    if (k != key) continue;
    try {
      return std::stoull(v);
    } catch (const std::exception&) {
      return std::nullopt;
    }
  }
  return std::nullopt;
}

struct KernelTotals {
  GpuMetricKernel summary;
  std::vector<Integral> integrals;
};

}  // namespace

Ns sampleSpan(const GpuMetricSeries& series, std::size_t i, Ns interval) {
  if (i + 1 >= series.times.size()) return interval;
  const Ns next = series.times[i + 1] - series.times[i];
  return interval > 0 ? std::min(next, interval + interval / 2) : next;
}

bool isByteMetric(std::string_view name) {
  constexpr std::string_view kUnit = "[bytes]";
  return name.size() >= kUnit.size() && name.substr(name.size() - kUnit.size()) == kUnit;
}

std::optional<GpuMetricsReport> summarizeGpuMetrics(const Trace& trace, const Scope& scope) {
  const GpuMetrics& gm = trace.gpu_metrics;
  if (gm.empty()) return std::nullopt;
  GpuMetricsReport report;
  report.interval_ns = gm.interval;
  std::set<std::string> names;
  for (const GpuMetricSeries& s : gm.series) names.insert(s.name);
  report.metrics.assign(names.begin(), names.end());
  auto metricIndex = [&](const std::string& name) {
    return static_cast<std::size_t>(std::lower_bound(report.metrics.begin(), report.metrics.end(), name) -
                                    report.metrics.begin());
  };
  const std::size_t n = report.metrics.size();
  // Per device: the series of each metric (index into gm.series, or none).
  std::map<std::uint16_t, std::vector<const GpuMetricSeries*>> by_device;
  for (const GpuMetricSeries& s : gm.series) {
    if (scope.device && *scope.device != s.device_id) continue;
    auto& slots = by_device[s.device_id];
    slots.resize(n, nullptr);
    slots[metricIndex(s.name)] = &s;
  }
  for (const auto& [device, slots] : by_device) {
    GpuMetricDevice d;
    d.device_id = device;
    d.values.resize(n);
    for (std::size_t m = 0; m < n; ++m) {
      const GpuMetricSeries* s = slots[m];
      if (s == nullptr || s->times.empty()) continue;
      const Ns begin = std::max(scope.window_start, s->times.front());
      const Ns end = std::min(scope.window_end, s->times.back() + gm.interval);
      Integral total;
      integrate(*s, gm.interval, begin, end, isByteMetric(s->name), total);
      d.values[m] = total.value(isByteMetric(s->name));
      d.sampled_ns = std::max(d.sampled_ns, total.covered);
      const auto first = std::lower_bound(s->times.begin(), s->times.end(), begin);
      const auto last = std::lower_bound(s->times.begin(), s->times.end(), end);
      d.samples = std::max<std::uint64_t>(d.samples, static_cast<std::uint64_t>(last - first));
    }
    report.devices.push_back(std::move(d));
  }
  // Kernels: each op of a sampled device once, in start order per device; a kernel is alone when
  // no other op of its device started before its end and ended after its start.
  std::map<std::pair<std::uint16_t, StringId>, KernelTotals> kernels;
  std::map<std::uint16_t, DeviceOps> device_ops;
  for (std::size_t i = 0; i < trace.ops.size(); ++i) {
    const GpuOp& op = trace.ops[i];
    if (by_device.count(op.device_id) == 0) continue;
    DeviceOps& d = device_ops[op.device_id];
    d.reach.push_back(d.ops.empty() ? op.end : std::max(d.reach.back(), op.end));
    d.ops.push_back(i);
  }
  for (const auto& [device, d] : device_ops) {
    const auto& slots = by_device.at(device);
    for (std::size_t k = 0; k < d.ops.size(); ++k) {
      const GpuOp& op = trace.ops[d.ops[k]];
      const bool alone = (k == 0 || d.reach[k - 1] <= op.start) &&
                         (k + 1 == d.ops.size() || trace.ops[d.ops[k + 1]].start >= op.end);
      if (op.kind != OpKind::kKernel || (scope.pid && *scope.pid != op.pid) ||
          op.start < scope.window_start || op.start >= scope.window_end) {
        continue;
      }
      KernelTotals& totals = kernels[{device, op.name}];
      totals.integrals.resize(n);
      ++totals.summary.launches;
      totals.summary.time_ns += op.duration();
      if (!alone) continue;
      ++totals.summary.alone_launches;
      for (std::size_t m = 0; m < n; ++m) {
        if (slots[m] != nullptr) {
          attribute(trace, d, k, *slots[m], gm.interval, isByteMetric(report.metrics[m]), totals.integrals[m]);
        }
      }
    }
  }
  for (auto& [key, totals] : kernels) {
    GpuMetricKernel k = std::move(totals.summary);
    k.device_id = key.first;
    k.name = shortKernelName(trace.str(key.second));
    k.values.resize(n);
    for (std::size_t m = 0; m < n; ++m) {
      k.values[m] = totals.integrals[m].value(isByteMetric(report.metrics[m]));
      k.sampled_ns = std::max(k.sampled_ns, totals.integrals[m].covered);
    }
    report.kernels.push_back(std::move(k));
  }
  std::sort(report.kernels.begin(), report.kernels.end(), [](const GpuMetricKernel& a, const GpuMetricKernel& b) {
    return a.time_ns != b.time_ns ? a.time_ns > b.time_ns
                                  : std::tie(a.device_id, a.name) < std::tie(b.device_id, b.name);
  });
  if (report.kernels.size() > kMaxGpuMetricKernels) report.kernels.resize(kMaxGpuMetricKernels);
  report.lost = sessionNumber(trace, schema::session_key::kGpuMetricsLost).value_or(0);
  for (const auto& [k, v] : trace.session) {
    if (k == schema::session_key::kGpuMetricsError) report.error = v;
  }
  return report;
}

}  // namespace cuoverlap
