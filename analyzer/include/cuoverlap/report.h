// Analysis results: what the analyses compute and what every renderer (reports/) consumes.
// Definitions of each number live in docs/metrics.md and docs/findings.md, and at the top of the
// file that computes it.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "cuoverlap/model.h"

namespace cuoverlap {

// What part of a trace an analysis looks at. Ops are kept when they lie on the device, belong to
// the process and intersect [window_start, window_end); they are clipped to the window.
struct Scope {
  std::optional<std::uint16_t> device;
  std::optional<std::uint32_t> pid;
  Ns window_start = std::numeric_limits<Ns>::min();
  Ns window_end = std::numeric_limits<Ns>::max();
  std::optional<std::string> range;  // NVTX range name (issue: diagnosis --range)
};

struct EngineUsage {
  Engine engine = Engine::kCompute;
  Ns busy_ns = 0;          // length of the union of the engine's ops
  double share = 0.0;      // busy_ns / span_ns
};

struct DeviceMetrics {
  std::uint16_t device_id = 0;
  std::string name;
  std::uint64_t kernels = 0;
  std::uint64_t memcpys = 0;
  std::uint64_t memsets = 0;
  Ns first_start = 0;
  Ns last_end = 0;
  Ns span_ns = 0;
  Ns busy_ns = 0;
  Ns idle_ns = 0;
  Ns sum_ns = 0;
  double overlap_ratio = 0.0;
  double copy_hidden_fraction = 0.0;
  std::vector<EngineUsage> engines;       // one per Engine value, in enum order
  std::vector<Ns> concurrency_ns;         // [k] = time with exactly k ops active
  Ns ideal_ns = 0;
  double pipeline_efficiency = 0.0;
};

enum class GapCause : std::uint8_t {
  kSyncWait, kAllocation, kPageableStaging, kHostLaunch, kDependency, kUnknown,
};

struct IdleGap {
  Ns start = 0;
  Ns end = 0;
  GapCause cause = GapCause::kUnknown;
  std::optional<std::size_t> prev_op;   // index into Trace::ops
  std::optional<std::size_t> next_op;   // index into Trace::ops
  std::optional<std::size_t> call;      // index into Trace::runtime_calls: the call involved
  Ns duration() const { return end - start; }
};

struct GapCauseTotal {
  GapCause cause = GapCause::kUnknown;
  std::uint64_t count = 0;
  Ns time_ns = 0;
  double share_of_idle = 0.0;
};

struct GapAnalysis {
  Ns threshold_ns = 0;
  std::uint64_t count = 0;              // gaps >= threshold
  Ns time_ns = 0;                       // their total length
  std::vector<GapCauseTotal> totals;    // per cause
  std::vector<IdleGap> largest;         // the largest gaps, in time order
};

enum class Severity : std::uint8_t { kInfo, kWarning, kError };

struct Evidence {
  std::string api;                 // runtime API name, or op name
  std::uint32_t correlation_id = 0;
  std::uint32_t stream_id = 0;
  Ns time = 0;
  std::string detail;
};

struct Finding {
  std::string id;                  // stable id, e.g. "legacy-default-stream"
  Severity severity = Severity::kWarning;
  std::uint16_t device_id = 0;
  std::uint64_t count = 0;
  Ns time_ns = 0;                  // estimated time lost (definition per finding, docs/findings.md)
  std::string summary;
  std::string advice;
  std::vector<Evidence> evidence;  // up to 5 examples
};

struct DeviceReport {
  DeviceMetrics metrics;
  GapAnalysis gaps;
};

// One instance of an NVTX range selected with --range: its own metrics and findings.
struct RangeInstance {
  std::string name;
  Ns start = 0;
  Ns end = 0;
  std::vector<DeviceReport> devices;
  std::vector<Finding> findings;
};

struct TraceReport {
  std::string path;
  TraceSource source = TraceSource::kNsys;
  Scope scope;                            // what was analyzed; the HTML timeline draws the same
  std::vector<DeviceReport> devices;      // with --range: summed over the instances
  std::vector<Finding> findings;
  std::vector<RangeInstance> range_instances;  // empty unless Scope::range is set
  const Trace* trace = nullptr;    // for renderers that draw the timeline
};

struct Report {
  std::vector<TraceReport> traces;
};

}  // namespace cuoverlap
