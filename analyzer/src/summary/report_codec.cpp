// A TraceReport as JSON and back, field for field, for rank summaries (summary.h): what the
// renderers read comes back exactly (integers as integers, doubles in the shortest form that
// reads back to the same bits), so that a report rendered from a summary equals the report of the
// trace. Not kept: TraceReport::trace (a summary has no trace; renderers then draw no timeline)
// and Finding::cost_region (the cost ledger's input, already charged, and as long as the ops).
#include "report_codec.h"

#include <optional>

#include <nlohmann/json.hpp>

namespace nlohmann {

template <typename T>
struct adl_serializer<std::optional<T>> {
  static void to_json(json& j, const std::optional<T>& value) {
    if (value) j = *value; else j = nullptr;
  }
  static void from_json(const json& j, std::optional<T>& value) {
    if (j.is_null()) value.reset(); else value = j.get<T>();
  }
};

}  // namespace nlohmann

namespace cuoverlap {

NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Scope, device, pid, window_start, window_end, range)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(EngineUsage, engine, busy_ns, share)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(CommunicationMetrics, kernels, busy_ns, hidden_ns, exposed_ns,
                                   hidden_fraction)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(DeviceMetrics, device_id, name, kernels, memcpys, memsets,
                                   first_start, last_end, span_ns, busy_ns, idle_ns, sum_ns,
                                   overlap_ratio, copy_hidden_fraction, engines, concurrency_ns,
                                   ideal_ns, pipeline_efficiency, communication)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(GapCausePart, cause, ns)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(IdleGap, start, end, cause, prev_op, next_op, call, causes)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(GapCauseTotal, cause, count, time_ns, share_of_idle)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(GapAnalysis, threshold_ns, count, time_ns, totals, largest)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Evidence, api, correlation_id, stream_id, time, detail,
                                   has_stream)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(DurationSpread, median, p10, p90, max)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(InstanceSaving, instances, fired, saving)
// With defaults: summaries written before a fix named its stream or thread read back with none.
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(FixSaving, fix, saving_ns, stream, thread)
// With defaults: summaries written before charged_elsewhere_ns, charged_to,
// beyond_explainable_ns, beyond_region_ns, fix_alone_ns, fixes and instance_saving existed read
// back with none.
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(Finding, id, severity, device_id, count, time_ns,
                                                summary, advice, evidence, estimated_ns,
                                                base_severity, ideal_reduction_ns,
                                                charged_elsewhere_ns, charged_to,
                                                beyond_explainable_ns, beyond_region_ns,
                                                fix_alone_ns, fixes, instance_saving)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(FindingsExplained, explainable_ns, explained_ns, fraction,
                                   ideal_reduction_ns)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(KernelSummary, name, count, total_ns, mean_ns, min_ns, max_ns,
                                   share)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(DeviceReport, metrics, gaps, kernels, explained)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(RangeInstance, name, start, end, devices, findings)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(RatioSpread, median, p90)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(RangeDeviceSpread, device_id, instances, overlap_ratio,
                                   copy_hidden_fraction, pipeline_efficiency, idle_fraction)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(RangeInstanceRef, name, start, end)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(RangeSummary, pattern, count, names, total_ns, duration_ns,
                                   devices, slowest)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(SteadyState, found, reason, source, start, end, iterations,
                                   warmup_dropped, iteration_starts, iteration_ns, host_range_ns,
                                   busy_share, devices, findings)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Phases, run_start, startup_ns, run_end, notes)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(UnifiedMemoryDevice, device_id, fault_groups, page_faults,
                                   fault_ns, migrations, htod_bytes, dtoh_bytes, dtod_bytes,
                                   migration_ns)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(UnifiedMemoryReport, devices, cpu_page_faults, thrashing)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(GpuMetricKernel, device_id, name, launches, time_ns,
                                   alone_launches, sampled_ns, values)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(GpuMetricDevice, device_id, samples, sampled_ns, values)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(GpuMetricsReport, interval_ns, metrics, devices, kernels, lost, error)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(CaptureWindowInfo, spec, opened, open_ns, close_ns, instances)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(TraceReport, path, source, scope, devices, findings,
                                   range_instances, range_summary, steady_state, phases,
                                   unified_memory, warnings, capture, analysis_seconds,
                                   first_op_start)

namespace summary {

std::string encodeReport(const TraceReport& report) {
  // Invalid UTF-8 in names (they come from the trace) is kept byte for byte as JSON cannot: such
  // names are replaced by U+FFFD, as renderJson does when it prints them.
  nlohmann::json json(report);
  // Outside TraceReport's member list: summaries written before GPU metrics decode as ever.
  if (report.gpu_metrics) json["gpu_metrics"] = *report.gpu_metrics;
  return json.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

TraceReport decodeReport(const std::string& text) {
  const nlohmann::json json = nlohmann::json::parse(text);
  TraceReport report = json.get<TraceReport>();
  if (json.contains("gpu_metrics")) report.gpu_metrics = json.at("gpu_metrics").get<GpuMetricsReport>();
  return report;
}

std::string encodeMetrics(const DeviceMetrics& metrics) {
  return nlohmann::json(metrics).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

DeviceMetrics decodeMetrics(const std::string& text) {
  return nlohmann::json::parse(text).get<DeviceMetrics>();
}

}  // namespace summary
}  // namespace cuoverlap
