// The counter tracks of the Perfetto export, on each device's process: per GPU metric, one counter
// ("C") event per sample the selection keeps (a "[bytes]" metric drawn as GB/s over the sample's
// span, any other as its value); the device memory allocated, one per allocation or free.
#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "cuoverlap/gpu_metrics.h"
#include "cuoverlap/memory_usage.h"
#include "perfetto_diagnosis.h"
#include "trace_event_common.h"

namespace cuoverlap::perfetto {

std::uint64_t writeGpuMetricTracks(const Trace& trace, const TraceReport& report,
                                   const ExportSelection& selection,
                                   const std::function<std::string(Ns)>& micros,
                                   const std::function<void(const std::string&)>& emit) {
  std::set<std::uint16_t> devices;
  for (const DeviceReport& device : report.devices) devices.insert(device.metrics.device_id);
  const Ns interval = trace.gpu_metrics.interval;
  std::uint64_t count = 0;
  for (const GpuMetricSeries& s : trace.gpu_metrics.series) {
    if (devices.count(s.device_id) == 0) continue;
    const bool bytes = isByteMetric(s.name);
    const std::string name = bytes ? s.name.substr(0, s.name.size() - 7) + "[GB/s]" : s.name;
    const std::string quoted = trace_event::jsonString(name);
    for (std::size_t i = 0; i < s.times.size(); ++i) {
      const Ns span = sampleSpan(s, i, interval);
      if (!selection.keepDeviceRecord(s.device_id, 0, s.times[i], s.times[i] + span)) continue;
      const double value = bytes ? (span > 0 ? s.values[i] / static_cast<double>(span) : 0.0) : s.values[i];
      emit(fmt::format("{{\"ph\":\"C\",\"cat\":\"gpu_metrics\",\"name\":{},\"pid\":{},\"ts\":{},"
                       "\"args\":{{\"value\":{:.6g}}}}}",
                       quoted, kDevicePidBase + s.device_id, micros(s.times[i]), value));
      ++count;
    }
  }
  return count;
}

std::uint64_t writeMemoryUsageTracks(const Trace& trace, const TraceReport& report,
                                     const ExportSelection& selection,
                                     const std::function<std::string(Ns)>& micros,
                                     const std::function<void(const std::string&)>& emit) {
  std::uint64_t count = 0;
  for (const DeviceReport& device : report.devices) {
    const std::uint16_t id = device.metrics.device_id;
    for (const MemoryInUse& step : deviceMemoryInUse(trace, id)) {
      if (!selection.keepDeviceRecord(id, 0, step.time, step.time)) continue;
      emit(fmt::format("{{\"ph\":\"C\",\"cat\":\"memory\",\"name\":\"device memory allocated [MiB]\",\"pid\":{},"
                       "\"ts\":{},\"args\":{{\"value\":{:.6g}}}}}",
                       kDevicePidBase + id, micros(step.time), static_cast<double>(step.bytes) / (1 << 20)));
      ++count;
    }
  }
  return count;
}

}  // namespace cuoverlap::perfetto
