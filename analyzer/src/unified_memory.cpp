#include "cuoverlap/unified_memory.h"

#include <algorithm>
#include <map>

#include "cuoverlap/intervals.h"

namespace cuoverlap {
namespace {

bool inScope(const Scope& scope, std::uint32_t pid, Ns time) {
  return (!scope.pid || *scope.pid == pid) && time >= scope.window_start && time < scope.window_end;
}

bool onDevice(const Scope& scope, std::uint16_t device_id) {
  return !scope.device || *scope.device == device_id;
}

// The records come sorted by start, so each device's union is a streaming one.
struct DeviceTotals {
  UnifiedMemoryDevice summary;
  UnionLength faults;
  UnionLength migrations;
};

}  // namespace

std::optional<UnifiedMemoryReport> summarizeUnifiedMemory(const Trace& trace, const Scope& scope) {
  const UnifiedMemory& um = trace.unified_memory;
  if (um.empty()) return std::nullopt;
  std::map<std::uint16_t, DeviceTotals> devices;
  for (const UmPageFaultGroup& fault : um.gpu_faults) {
    if (!onDevice(scope, fault.device_id) || !inScope(scope, fault.pid, fault.start)) continue;
    DeviceTotals& d = devices[fault.device_id];
    ++d.summary.fault_groups;
    d.summary.page_faults += fault.faults;
    d.faults.add(fault.start, std::min(fault.end, scope.window_end));
  }
  for (const UmMigration& m : um.migrations) {
    if (!onDevice(scope, m.device_id) || !inScope(scope, m.pid, m.start)) continue;
    DeviceTotals& d = devices[m.device_id];
    ++d.summary.migrations;
    if (m.direction == CopyKind::kUvmHtoD) d.summary.htod_bytes += m.bytes;
    else if (m.direction == CopyKind::kUvmDtoH) d.summary.dtoh_bytes += m.bytes;
    else d.summary.dtod_bytes += m.bytes;
    d.migrations.add(m.start, std::min(m.end, scope.window_end));
  }
  UnifiedMemoryReport report;
  for (auto& [id, totals] : devices) {
    totals.summary.device_id = id;
    totals.summary.fault_ns = totals.faults.length();
    totals.summary.migration_ns = totals.migrations.length();
    report.devices.push_back(totals.summary);
  }
  for (const UmCpuFault& fault : um.cpu_faults) {
    if (inScope(scope, fault.pid, fault.time)) ++report.cpu_page_faults;
  }
  for (const UmThrashing& event : um.thrashing) {
    if (inScope(scope, event.pid, event.time)) ++report.thrashing;
  }
  if (report.devices.empty() && report.cpu_page_faults == 0 && report.thrashing == 0) {
    return std::nullopt;
  }
  return report;
}

}  // namespace cuoverlap
