// The unified-memory tracks of the Perfetto export: per device, the GPU page-fault groups (the
// driver servicing faults) and the migrations, as complete ("X") events with their counts, bytes,
// direction and cause in args.
#include <fmt/format.h>

#include <set>

#include "cuoverlap/names.h"
#include "cuoverlap/units.h"
#include "perfetto_diagnosis.h"
#include "trace_event_common.h"

namespace cuoverlap::perfetto {
namespace {

const char* directionName(CopyKind kind) {
  return kind == CopyKind::kUvmHtoD ? "HtoD" : kind == CopyKind::kUvmDtoH ? "DtoH" : "DtoD";
}

const char* causeName(schema::UmMigrationCause cause) {
  switch (cause) {
    case schema::UmMigrationCause::kUser: return "user prefetch";
    case schema::UmMigrationCause::kCoherence: return "page fault";
    case schema::UmMigrationCause::kPrefetch: return "speculative prefetch";
    case schema::UmMigrationCause::kEviction: return "eviction";
    case schema::UmMigrationCause::kAccessCounters: return "access counters";
    case schema::UmMigrationCause::kUnknown: break;
  }
  return "unknown";
}

std::string threadName(std::uint16_t device, std::uint64_t tid, const char* name) {
  return fmt::format("{{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":{},\"tid\":{},"
                     "\"args\":{{\"name\":\"{}\"}}}}",
                     kDevicePidBase + device, tid, name);
}

}  // namespace

std::uint64_t writeUnifiedMemoryTracks(const Trace& trace, const TraceReport& report,
                                       const ExportSelection& selection,
                                       const std::function<std::string(Ns)>& micros,
                                       const std::function<void(const std::string&)>& emit) {
  std::set<std::uint16_t> devices;
  std::set<std::uint64_t> named;  // tids whose thread_name is out
  for (const DeviceReport& device : report.devices) devices.insert(device.metrics.device_id);
  auto track = [&](std::uint16_t device, std::uint64_t tid, const char* name) {
    if (named.insert(tid).second) {
      emit(threadName(device, tid, name));
    }
  };
  std::uint64_t count = 0;
  for (const UmPageFaultGroup& f : trace.unified_memory.gpu_faults) {
    if (devices.count(f.device_id) == 0 ||
        !selection.keepDeviceRecord(f.device_id, f.pid, f.start, f.end)) {
      continue;
    }
    track(f.device_id, umFaultsTid(f.device_id), "unified memory: GPU page faults");
    emit(fmt::format("{{\"ph\":\"X\",\"cat\":\"um_fault\",\"name\":\"GPU page faults\",\"pid\":{},"
                     "\"tid\":{},\"ts\":{},\"dur\":{},\"args\":{{\"faults\":{},\"address\":\"{:#x}\"}}}}",
                     kDevicePidBase + f.device_id, umFaultsTid(f.device_id), micros(f.start),
                     trace_event::fixedMicros(f.end - f.start), f.faults, f.address));
    ++count;
  }
  for (const UmMigration& m : trace.unified_memory.migrations) {
    if (devices.count(m.device_id) == 0 ||
        !selection.keepDeviceRecord(m.device_id, m.pid, m.start, m.end)) {
      continue;
    }
    track(m.device_id, umMigrationsTid(m.device_id), "unified memory: migrations");
    emit(fmt::format("{{\"ph\":\"X\",\"cat\":\"um_migration\",\"name\":\"migration {} {}\",\"pid\":{},"
                     "\"tid\":{},\"ts\":{},\"dur\":{},\"args\":{{\"bytes\":{},\"cause\":\"{}\","
                     "\"address\":\"{:#x}\"}}}}",
                     directionName(m.direction), units::formatBytes(m.bytes),
                     kDevicePidBase + m.device_id, umMigrationsTid(m.device_id), micros(m.start),
                     trace_event::fixedMicros(m.end - m.start), m.bytes, causeName(m.cause), m.address));
    ++count;
  }
  return count;
}

}  // namespace cuoverlap::perfetto
