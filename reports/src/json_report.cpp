#include "cuoverlap/json_report.h"

#include <sstream>

#include "cuoverlap/names.h"
#include "scope_summary.h"

namespace cuoverlap {

namespace {

using Json = nlohmann::ordered_json;

Json optionalIndex(const std::optional<std::size_t>& index) {
  return index ? Json(*index) : Json(nullptr);
}

Json gapToJson(const IdleGap& gap) {
  Json causes = Json::array();
  for (const GapCausePart& part : gap.causes) {
    causes.push_back({{"cause", gapCauseName(part.cause)}, {"ns", part.ns}});
  }
  return Json{{"start", gap.start},           {"end", gap.end},
              {"duration_ns", gap.duration()}, {"cause", gapCauseName(gap.cause)},
              {"causes", causes},
              {"prev_op", optionalIndex(gap.prev_op)}, {"next_op", optionalIndex(gap.next_op)},
              {"call", optionalIndex(gap.call)}};
}

Json gapsToJson(const GapAnalysis& gaps) {
  Json totals = Json::array();
  for (const GapCauseTotal& total : gaps.totals) {
    totals.push_back({{"cause", gapCauseName(total.cause)}, {"count", total.count},
                      {"time_ns", total.time_ns}, {"share_of_idle", total.share_of_idle}});
  }
  Json largest = Json::array();
  for (const IdleGap& gap : gaps.largest) largest.push_back(gapToJson(gap));
  return Json{{"threshold_ns", gaps.threshold_ns}, {"count", gaps.count},
              {"time_ns", gaps.time_ns}, {"totals", totals}, {"largest", largest}};
}

Json enginesToJson(const std::vector<EngineUsage>& engines) {
  Json out = Json::object();
  for (const EngineUsage& usage : engines) {
    out[std::string(engineName(usage.engine))] = {{"busy_ns", usage.busy_ns}, {"share", usage.share}};
  }
  return out;
}

Json kernelSummaryToJson(const std::vector<KernelSummary>& kernels) {
  Json out = Json::array();
  for (const KernelSummary& k : kernels) {
    out.push_back({{"name", k.name}, {"count", k.count}, {"total_ns", k.total_ns},
                   {"mean_ns", k.mean_ns}, {"min_ns", k.min_ns}, {"max_ns", k.max_ns},
                   {"share", k.share}});
  }
  return out;
}

Json communicationToJson(const CommunicationMetrics& c) {
  return Json{{"kernels", c.kernels},       {"busy_ns", c.busy_ns},
              {"hidden_ns", c.hidden_ns},   {"exposed_ns", c.exposed_ns},
              {"hidden_fraction", c.hidden_fraction}};
}

Json evidenceToJson(const Evidence& e) {
  Json out{{"api", e.api}, {"correlation_id", e.correlation_id}};
  if (e.has_stream) out["stream_id"] = e.stream_id;  // calls that name no stream have none
  out["time"] = e.time;
  out["detail"] = e.detail;
  return out;
}

Json devicesToJson(const std::vector<DeviceReport>& devices) {
  Json out = Json::array();
  for (const DeviceReport& device : devices) out.push_back(deviceReportToJson(device));
  return out;
}

Json findingsToJson(const std::vector<Finding>& findings) {
  Json out = Json::array();
  for (const Finding& finding : findings) out.push_back(findingToJson(finding));
  return out;
}

}  // namespace

Json deviceReportToJson(const DeviceReport& device) {
  const DeviceMetrics& m = device.metrics;
  Json json{{"device_id", m.device_id},
              {"name", m.name},
              {"kernels", m.kernels},
              {"memcpys", m.memcpys},
              {"memsets", m.memsets},
              {"span_ns", m.span_ns},
              {"busy_ns", m.busy_ns},
              {"idle_ns", m.idle_ns},
              {"sum_ns", m.sum_ns},
              {"overlap_ratio", m.overlap_ratio},
              {"copy_hidden_fraction", m.copy_hidden_fraction},
              {"engines", enginesToJson(m.engines)},
              {"concurrency_ns", m.concurrency_ns},
              {"ideal_ns", m.ideal_ns},
              {"pipeline_efficiency", m.pipeline_efficiency},
              {"explainable_ns", device.explained.explainable_ns},
              {"findings_explain_ns", device.explained.explained_ns},
              {"findings_explain_fraction", device.explained.fraction}};
  // Beyond explainable_ns: what the findings' fixes would take off the ideal (faster copies).
  if (device.explained.ideal_reduction_ns > 0) {
    json["findings_lower_ideal_ns"] = device.explained.ideal_reduction_ns;
  }
  // Only where two or more host threads each issued GPU work and waited for it side by side.
  if (device.explained.waiting_threads > 0) json["waiting_threads"] = device.explained.waiting_threads;
  json["communication"] = communicationToJson(m.communication);
  json["gaps"] = gapsToJson(device.gaps);
  json["kernel_summary"] = kernelSummaryToJson(device.kernels);
  return json;
}

Json findingToJson(const Finding& finding) {
  Json evidence = Json::array();
  for (const Evidence& e : finding.evidence) evidence.push_back(evidenceToJson(e));
  Json json{{"id", finding.id},         {"severity", severityName(finding.severity)},
            {"device_id", finding.device_id}, {"count", finding.count},
            {"time_ns", finding.time_ns}};
  // Only where a fix would also lower the ideal (pageable-memcpy): part of time_ns.
  if (finding.ideal_reduction_ns > 0) json["ideal_reduction_ns"] = finding.ideal_reduction_ns;
  // Only where the ledger charged less than the fix alone would save.
  if (fixSavingNs(finding) != finding.time_ns) json["fix_saving_ns"] = fixSavingNs(finding);
  // Only where the rule prices each fix its advice names: the recommended one first.
  if (!finding.fixes.empty()) {
    Json fixes = Json::array();
    for (const FixSaving& fix : finding.fixes) {
      Json entry{{"fix", fix.fix}, {"saving_ns", fix.saving_ns}};
      // The work it acts on, where the finding lists a fix per stream or per thread's loop.
      if (fix.stream) entry["stream_id"] = *fix.stream;
      if (fix.thread) entry["thread_id"] = *fix.thread;
      fixes.push_back(std::move(entry));
    }
    json["fixes"] = std::move(fixes);
  }
  // Only with --range over two or more instances: its fix's saving instance by instance.
  if (finding.instance_saving) {
    const InstanceSaving& s = *finding.instance_saving;
    json["instance_saving"] = {{"instances", s.instances}, {"fired", s.fired},
                               {"median_ns", s.saving.median}, {"p10_ns", s.saving.p10},
                               {"p90_ns", s.saving.p90}, {"max_ns", s.saving.max}};
  }
  json["summary"] = finding.summary;
  json["advice"] = finding.advice;
  json["evidence"] = std::move(evidence);
  return json;
}

Json durationSpreadToJson(const DurationSpread& d) {
  return Json{{"median", d.median}, {"p10", d.p10}, {"p90", d.p90}, {"max", d.max}};
}

Json rangeSummaryToJson(const RangeSummary& s) {
  const auto ratio = [](const RatioSpread& r) { return Json{{"median", r.median}, {"p90", r.p90}}; };
  Json names = Json::array();
  for (const auto& [name, count] : s.names) names.push_back({{"name", name}, {"count", count}});
  Json devices = Json::array();
  for (const RangeDeviceSpread& d : s.devices) {
    devices.push_back({{"device_id", d.device_id}, {"instances", d.instances},
                       {"overlap_ratio", ratio(d.overlap_ratio)},
                       {"copy_hidden_fraction", ratio(d.copy_hidden_fraction)},
                       {"pipeline_efficiency", ratio(d.pipeline_efficiency)},
                       {"idle_fraction", ratio(d.idle_fraction)}});
  }
  Json slowest = Json::array();
  for (const RangeInstanceRef& r : s.slowest) {
    slowest.push_back({{"name", r.name}, {"start", r.start}, {"end", r.end}});
  }
  Json json{{"pattern", s.pattern},           {"count", s.count},
            {"names", names},                 {"total_ns", s.total_ns},
            {"duration_ns", durationSpreadToJson(s.duration_ns)},
            {"per_instance", devices},        {"slowest", slowest}};
  if (s.analyzed < s.count) {  // only when the work bound sampled the instances
    json["analyzed"] = s.analyzed;
    json["visits"] = s.visits;
  }
  return json;
}

// Only for traces with unified-memory activity in scope: goldens of the others unchanged.
Json unifiedMemoryToJson(const UnifiedMemoryReport& um) {
  Json devices = Json::array();
  for (const UnifiedMemoryDevice& d : um.devices) {
    devices.push_back({{"device_id", d.device_id}, {"gpu_fault_groups", d.fault_groups},
                       {"gpu_page_faults", d.page_faults}, {"fault_service_ns", d.fault_ns},
                       {"migrations", d.migrations}, {"htod_bytes", d.htod_bytes},
                       {"dtoh_bytes", d.dtoh_bytes}, {"dtod_bytes", d.dtod_bytes},
                       {"migration_ns", d.migration_ns}});
  }
  return Json{{"devices", devices}, {"cpu_page_faults", um.cpu_page_faults},
              {"thrashing", um.thrashing}};
}

// A metric's values by name: "[bytes]" metrics as bytes per second, the others as their mean.
Json gpuMetricValuesToJson(const std::vector<std::string>& names, const std::vector<std::optional<double>>& values) {
  Json out = Json::object();
  for (std::size_t m = 0; m < names.size() && m < values.size(); ++m) {
    if (values[m]) out[names[m]] = *values[m];
  }
  return out;
}

Json gpuMetricsToJson(const GpuMetricsReport& gm) {
  Json devices = Json::array();
  for (const GpuMetricDevice& d : gm.devices) {
    devices.push_back({{"device_id", d.device_id}, {"samples", d.samples}, {"sampled_ns", d.sampled_ns},
                       {"values", gpuMetricValuesToJson(gm.metrics, d.values)}});
  }
  Json kernels = Json::array();
  for (const GpuMetricKernel& k : gm.kernels) {
    kernels.push_back({{"device_id", k.device_id}, {"name", k.name}, {"launches", k.launches},
                       {"time_ns", k.time_ns}, {"alone_launches", k.alone_launches},
                       {"sampled_ns", k.sampled_ns}, {"values", gpuMetricValuesToJson(gm.metrics, k.values)}});
  }
  return Json{{"interval_ns", gm.interval_ns}, {"metrics", gm.metrics},
              {"units", "[bytes] metrics in bytes per second; others their time-weighted mean"},
              {"devices", devices}, {"kernels", kernels}, {"lost_samples", gm.lost},
              {"error", gm.error}};
}

Json traceReportToJson(const TraceReport& trace) {
  Json ranges = Json::array();
  for (const RangeInstance& range : trace.range_instances) {
    ranges.push_back({{"name", range.name}, {"start", range.start}, {"end", range.end},
                      {"devices", devicesToJson(range.devices)},
                      {"findings", findingsToJson(range.findings)}});
  }
  Json json{{"path", trace.path},
            {"source", sourceName(trace.source)},
            {"first_op_start", trace.first_op_start},
            {"devices", devicesToJson(trace.devices)},
            {"findings", findingsToJson(trace.findings)},
            {"range_instances", ranges}};
  if (trace.range_summary) json["range_summary"] = rangeSummaryToJson(*trace.range_summary);
  if (trace.phases) {
    json["phases"] = {{"run_start", trace.phases->run_start},
                      {"startup_ns", trace.phases->startup_ns},
                      {"run_end", trace.phases->run_end},
                      {"notes", trace.phases->notes}};
  }
  if (trace.steady_state) {
    const SteadyState& s = *trace.steady_state;
    json["steady_state"] = s.found
        ? Json{{"found", true}, {"source", s.source}, {"start", s.start}, {"end", s.end},
               {"iterations", s.iterations}, {"warmup_dropped", s.warmup_dropped},
               {"iteration_ns", durationSpreadToJson(s.iteration_ns)},
               {"devices", devicesToJson(s.devices)}, {"findings", findingsToJson(s.findings)}}
        : Json{{"found", false}, {"reason", s.reason}};
    if (s.found) {
      json["steady_state"]["busy_share"] = s.busy_share;
      if (s.host_range_ns) json["steady_state"]["host_range_ns"] = durationSpreadToJson(*s.host_range_ns);
    }
  }
  if (trace.unified_memory) json["unified_memory"] = unifiedMemoryToJson(*trace.unified_memory);
  if (trace.gpu_metrics) json["gpu_metrics"] = gpuMetricsToJson(*trace.gpu_metrics);
  if (!trace.warnings.empty()) json["warnings"] = trace.warnings;  // only then: goldens unchanged
  if (trace.capture) {
    const CaptureWindowInfo& c = *trace.capture;
    json["capture"] = Json{{"spec", c.spec}, {"opened", c.opened}, {"open_ns", c.open_ns},
                           {"close_ns", c.close_ns}, {"line", render::captureWindowLine(trace)}};
    if (c.instances) json["capture"]["instances"] = *c.instances;
  }
  return json;
}

Json jobToJson(const JobAnalysis& job) {
  Json ranks = Json::array();
  for (std::size_t i = 0; i < job.ranks.size(); ++i) {
    const RankRow& r = job.ranks[i];
    ranks.push_back({{"rank", r.rank}, {"rank_from_launcher", r.rank_from_launcher},
                     {"path", r.path}, {"pid", r.pid}, {"host", r.host}, {"device_id", r.device_id},
                     {"span_ns", r.span_ns}, {"compute_ns", r.compute_ns},
                     {"comm_busy_ns", r.comm_busy_ns}, {"comm_exposed_ns", r.comm_exposed_ns},
                     {"idle_ns", r.idle_ns}, {"collectives", r.collectives},
                     {"arrived_last", r.arrived_last},
                     {"clock_offset_ns", i < job.clock_offsets.size() ? job.clock_offsets[i] : 0},
                     {"comm_peer_wait_ns", r.comm_peer_wait_ns}});
  }
  Json skews = Json::array();
  for (const MatchedCollective& m : job.largest_skews) {
    skews.push_back({{"stream", m.stream}, {"sequence", m.sequence}, {"type", m.type},
                     {"ranks", m.ranks}, {"first_start", m.first_start}, {"skew_ns", m.skew_ns},
                     {"first_rank", m.first_rank}, {"last_rank", m.last_rank}});
  }
  return Json{{"ranks", ranks},
              {"clock", job.clock},
              {"matched_collectives", job.matched},
              {"type_mismatches", job.type_mismatches},
              {"max_skew_ns", job.max_skew_ns},
              {"mean_skew_ns", job.mean_skew_ns},
              {"largest_skews", skews},
              {"findings", findingsToJson(job.findings)}};
}

Json reportToJson(const Report& report) {
  Json traces = Json::array();
  for (const TraceReport& trace : report.traces) traces.push_back(traceReportToJson(trace));
  Json out{{"schema", kReportSchemaId}, {"traces", traces}};
  if (report.job) out["job"] = jobToJson(*report.job);
  return out;
}

namespace {

// `json` dumped as it would be nested `depth` spaces deep: JSON strings hold no raw newline, so
// every line after the first is indented by `depth`.
void writeNested(const Json& json, std::size_t depth, std::ostream& out) {
  // Names come from the trace and need not be UTF-8: invalid bytes become U+FFFD, not an exception.
  const std::string text = json.dump(2, ' ', false, Json::error_handler_t::replace);
  const std::string indent(depth, ' ');
  std::size_t from = 0;
  for (std::size_t nl = text.find('\n'); nl != std::string::npos; nl = text.find('\n', from)) {
    out.write(text.data() + from, static_cast<std::streamsize>(nl + 1 - from)) << indent;
    from = nl + 1;
  }
  out.write(text.data() + from, static_cast<std::streamsize>(text.size() - from));
}

}  // namespace

void renderJson(const Report& report, std::ostream& out) {
  // reportToJson(report).dump(2) byte for byte, one trace's JSON at a time: a job of 4,096 ranks
  // would hold every rank's report as JSON values at once (gigabytes) to dump them.
  out << "{\n  \"schema\": ";
  writeNested(Json(kReportSchemaId), 2, out);
  out << ",\n  \"traces\": ";
  if (report.traces.empty()) out << "[]";
  for (std::size_t i = 0; i < report.traces.size(); ++i) {
    out << (i == 0 ? "[\n    " : ",\n    ");
    writeNested(traceReportToJson(report.traces[i]), 4, out);
    if (i + 1 == report.traces.size()) out << "\n  ]";
  }
  if (report.job) {
    out << ",\n  \"job\": ";
    writeNested(jobToJson(*report.job), 2, out);
  }
  out << "\n}\n";
}

std::string renderJsonString(const Report& report) {
  std::ostringstream out;
  renderJson(report, out);
  return out.str();
}

}  // namespace cuoverlap
