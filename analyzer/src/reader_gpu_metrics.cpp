// Reads GPU_METRICS into Trace::gpu_metrics: one series per (GPU, metric name), as our collector
// writes them (CUOVERLAP_GPU_METRICS) and nsys's `--gpu-metrics-devices` exports them. The metric
// names come from TARGET_INFO_GPU_METRICS (by typeId and metricId); a row whose metric it does not
// name is left out. In a merged trace two processes may name the same metric: one series.
#include <algorithm>
#include <map>
#include <string>
#include <utility>

#include "reader_internal.h"

namespace cuoverlap::reader {
namespace {

// The median spacing of a series' samples: the interval where the session does not say it.
Ns medianSpacing(const std::vector<Ns>& times) {
  if (times.size() < 2) return 0;
  std::vector<Ns> gaps;
  gaps.reserve(times.size() - 1);
  for (std::size_t i = 1; i < times.size(); ++i) gaps.push_back(times[i] - times[i - 1]);
  std::nth_element(gaps.begin(), gaps.begin() + gaps.size() / 2, gaps.end());
  return gaps[gaps.size() / 2];
}

Ns sessionInterval(const Trace& trace) {
  for (const auto& [key, value] : trace.session) {
    if (key != schema::session_key::kGpuMetricsIntervalNs) continue;
    try {
      const long long ns = std::stoll(value);
      return ns > 0 ? static_cast<Ns>(ns) : 0;
    } catch (const std::exception&) {
      return 0;
    }
  }
  return 0;
}

// Our collector's typeId is the GPU's device id. An nsys export's may encode more than the GPU:
// such ids are numbered in the order met (never a UserError: the metrics are extra, the rest of
// the trace is read as ever).
std::uint16_t deviceOfType(std::int64_t type_id, std::map<std::int64_t, std::uint16_t>& others) {
  if (type_id >= 0 && type_id <= 0xFFFF) return static_cast<std::uint16_t>(type_id);
  auto it = others.emplace(type_id, static_cast<std::uint16_t>(others.size())).first;
  return it->second;
}

}  // namespace

void readGpuMetrics(Context& ctx) {
  const std::string_view names_table = schema::kGpuMetricNamesTable;
  const std::string_view table = schema::kGpuMetricsTable;
  if (!ctx.db.hasTable(names_table) || !ctx.db.hasTable(table)) return;
  std::map<std::pair<std::int64_t, std::int64_t>, std::string> names;  // (typeId, metricId) -> name
  {
    sqlite::Statement row(ctx.db, selectColumns(ctx.db, names_table, {"typeId", "metricId"},
                                                {"typeId", "metricId"}, {"metricName"}));
    while (row.step()) names.emplace(std::make_pair(row.int64(0), row.int64(1)), std::string(row.text(2)));
  }
  if (names.empty()) return;
  std::map<std::pair<std::uint16_t, std::string>, GpuMetricSeries> series;
  std::map<std::int64_t, std::uint16_t> devices;  // typeIds that are no device number
  sqlite::Statement row(ctx.db, selectColumns(ctx.db, table, {"timestamp", "typeId", "metricId", "value"},
                                              {"timestamp", "typeId", "metricId", "value"}));
  // The last series written, for runs of rows of one metric (our collector writes a sample's
  // metrics together; nsys writes a metric's samples together): one map lookup per change.
  std::pair<std::int64_t, std::int64_t> last_key{-1, -1};
  GpuMetricSeries* last = nullptr;
  while (row.step()) {
    const std::pair<std::int64_t, std::int64_t> key{row.int64(1), row.int64(2)};
    if (key != last_key || last == nullptr) {
      last_key = key;
      last = nullptr;
      auto name = names.find(key);
      if (name == names.end()) continue;
      const std::uint16_t device = deviceOfType(key.first, devices);
      GpuMetricSeries& s = series[{device, name->second}];
      s.device_id = device;
      s.name = name->second;
      last = &s;
    }
    last->times.push_back(readTimestamp(row, 0, table, "timestamp"));
    last->values.push_back(row.real(3));
  }
  GpuMetrics& out = ctx.trace.gpu_metrics;
  for (auto& entry : series) {
    GpuMetricSeries& s = entry.second;  // a name of its own: a lambda below captures it
    if (!std::is_sorted(s.times.begin(), s.times.end())) {
      std::vector<std::size_t> order(s.times.size());
      for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
      std::stable_sort(order.begin(), order.end(), [&s](std::size_t a, std::size_t b) { return s.times[a] < s.times[b]; });
      std::vector<Ns> times(order.size());
      std::vector<double> values(order.size());
      for (std::size_t i = 0; i < order.size(); ++i) times[i] = s.times[order[i]], values[i] = s.values[order[i]];
      s.times.swap(times);
      s.values.swap(values);
    }
    out.series.push_back(std::move(s));
  }
  out.interval = sessionInterval(ctx.trace);
  if (out.interval == 0 && !out.series.empty()) out.interval = medianSpacing(out.series.front().times);
}

}  // namespace cuoverlap::reader
