// TraceWriter: GPU metrics sampled by CUPTI's PM sampling (cupti/gpu_metrics.h) into the tables
// Nsight Systems' export writes for them (schema/trace_schema.h, kCreateGpuMetricTables). The
// tables are created with the first metric names, so a trace recorded without metrics has none.
#include <cmath>

#include "trace_schema.h"
#include "trace_writer.h"

namespace cuoverlap::collector {

void TraceWriter::onGpuMetrics(const GpuMetricBatch& batch) {
  if (batch.names.empty() && batch.values.empty()) return;
  begin();
  if (gpu_metric_ == nullptr) {
    execSql(db_, schema::kCreateGpuMetricTables);
    gpu_metric_name_ = std::make_unique<Statement>(db_,
        "INSERT INTO TARGET_INFO_GPU_METRICS VALUES (?1,?1,?2,?3,?4)");
    gpu_metric_ = std::make_unique<Statement>(db_, "INSERT INTO GPU_METRICS VALUES (?1,?2,?3,?4)");
  }
  for (const GpuMetricName& n : batch.names) gpu_metric_name_->run({n.device, n.source, n.metric, n.name});
  for (const GpuMetricValue& v : batch.values) {
    // Byte counts are whole; a percentage keeps its fraction (the column's INTEGER affinity
    // stores a whole value as an integer and any other as a real, as SQLite does for nsys's).
    const double rounded = std::round(v.value);
    if (std::fabs(v.value - rounded) < 1e-9 || std::fabs(v.value) >= 1e6) {
      gpu_metric_->run({v.start, v.device, v.metric, static_cast<std::int64_t>(rounded)});
    } else {
      gpu_metric_->run({v.start, v.device, v.metric, std::round(v.value * 100.0) / 100.0});
    }
  }
  counts_[static_cast<std::size_t>(RecordKind::kGpuMetric)] += batch.values.size();
}

}  // namespace cuoverlap::collector
