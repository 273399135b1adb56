// The parts of the Perfetto export that come from the analysis: which events the filters keep
// (--device, --window, --range) and the "idle gaps" and "findings" tracks of each device.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "cuoverlap/analysis.h"
#include "cuoverlap/intervals.h"

namespace cuoverlap::perfetto {

// Device processes get pids above any real one (Linux pids stay below 2^22).
inline constexpr std::uint64_t kDevicePidBase = 1'000'000'000;
// The two analysis tracks of a device process; stream threads are numbered from 1. Distinct per
// device: Perfetto's JSON importer may take a tid seen under two pids for one thread.
inline std::uint64_t gapsTid(std::uint16_t device) { return (1ull << 30) + 2ull * device; }
inline std::uint64_t findingsTid(std::uint16_t device) { return gapsTid(device) + 1; }
// The unified-memory tracks of a device process: GPU page-fault groups, then migrations.
inline std::uint64_t umFaultsTid(std::uint16_t device) {
  return (1ull << 30) + (1ull << 20) + 2ull * device;
}
inline std::uint64_t umMigrationsTid(std::uint16_t device) { return umFaultsTid(device) + 1; }

// Which events the export keeps (PerfettoExportOptions in perfetto_export.h says what each
// filter means). Built once; every test is O(log windows).
class ExportSelection {
 public:
  ExportSelection(const Trace& trace, const Scope& scope, const TraceReport& report);
  bool keepOp(const GpuOp& op) const;
  bool keepHost(std::uint32_t pid, Ns start, Ns end) const;  // calls and NVTX ranges
  bool keepDeviceRecord(std::uint16_t device, std::uint32_t pid, Ns start, Ns end) const {
    return (!device_ || device == *device_) && (!pid_ || pid == *pid_) && inTime(start, end);
  }
  const std::vector<Interval>& windows() const { return windows_; }  // sorted, disjoint

 private:
  bool inTime(Ns start, Ns end) const;

  std::optional<std::uint16_t> device_;
  std::optional<std::uint32_t> pid_;
  std::vector<Interval> windows_;
  std::set<std::uint32_t> host_pids_;  // with a device filter: the processes with ops on it
};

struct DiagnosisCounts {
  std::uint64_t gaps = 0;
  std::uint64_t findings = 0;
};

// Emits the idle gaps (every gap of at least the gap threshold, in the selection's windows) and
// the findings' evidence of each device of `report` on its gapsTid / findingsTid tracks.
// `micros` turns a trace timestamp into the export's "ts" text.
DiagnosisCounts writeDiagnosisTracks(const Trace& trace, const TraceReport& report,
                                     const AnalysisOptions& options, const ExportSelection& selection,
                                     const std::function<std::string(Ns)>& micros,
                                     const std::function<void(const std::string&)>& emit);

// Emits each GPU page-fault group and migration of the devices of `report` that the selection
// keeps, on the device's umFaultsTid / umMigrationsTid tracks (named here, on first use), and
// returns how many. Defined in perfetto_unified_memory.cpp.
std::uint64_t writeUnifiedMemoryTracks(const Trace& trace, const TraceReport& report,
                                       const ExportSelection& selection,
                                       const std::function<std::string(Ns)>& micros,
                                       const std::function<void(const std::string&)>& emit);

// Emits each GPU-metric sample of the devices of `report` that the selection keeps, as counter
// events on the device's process, and returns how many. Defined in perfetto_gpu_metrics.cpp.
std::uint64_t writeGpuMetricTracks(const Trace& trace, const TraceReport& report,
                                   const ExportSelection& selection,
                                   const std::function<std::string(Ns)>& micros,
                                   const std::function<void(const std::string&)>& emit);

// Emits the device memory allocated on each device of `report` (Trace::memory_events) as a counter
// event on the device's process at each allocation or free the selection keeps ("device memory
// allocated [MiB]"), and returns how many. Defined in perfetto_gpu_metrics.cpp.
std::uint64_t writeMemoryUsageTracks(const Trace& trace, const TraceReport& report,
                                     const ExportSelection& selection,
                                     const std::function<std::string(Ns)>& micros,
                                     const std::function<void(const std::string&)>& emit);

}  // namespace cuoverlap::perfetto
