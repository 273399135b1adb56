// Run-to-run comparison of two analysed traces (before, after): metrics per device side by side
// with deltas, findings added / removed / changed, and total kernel time per kernel name.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cuoverlap/report.h"

namespace cuoverlap {

enum class MetricUnit : std::uint8_t { kRatio, kFraction, kNanoseconds, kCount, kSpeedup };

struct MetricDelta {
  std::string name;  // the JSON report's key, e.g. "overlap_ratio"; "idle_fraction", "potential_speedup"
  MetricUnit unit = MetricUnit::kRatio;
  std::optional<double> before;  // empty when the device is missing on that side
  std::optional<double> after;
};

struct DeviceDiff {
  std::uint16_t device_id = 0;
  std::vector<MetricDelta> metrics;
};

enum class FindingChange : std::uint8_t { kAdded, kRemoved, kChanged };

struct FindingDiff {
  std::string id;
  std::uint16_t device_id = 0;
  FindingChange change = FindingChange::kChanged;
  Severity severity = Severity::kWarning;  // the after side's, or before's when removed
  std::uint64_t count_before = 0;
  std::uint64_t count_after = 0;
  Ns time_before_ns = 0;
  Ns time_after_ns = 0;
};

struct KernelTimeDiff {
  std::string name;
  std::uint64_t count_before = 0;
  std::uint64_t count_after = 0;
  Ns time_before_ns = 0;  // sum of the kernel's durations on the reported devices
  Ns time_after_ns = 0;
};

// What one side of a diff compares, as `diff --scope` printed it: the whole run, or a window of it
// (the steady state) whose kernels the kernel-time table counts (those intersecting it, clipped).
struct DiffScope {
  std::string description = "whole run";
  std::optional<std::pair<Ns, Ns>> window;  // trace clock
};

struct ReportDiff {
  std::string before_path;
  std::string after_path;
  std::string before_scope = "whole run";
  std::string after_scope = "whole run";
  std::vector<DeviceDiff> devices;        // by device id
  std::vector<FindingDiff> findings;      // added, removed, changed (unchanged ones omitted)
  std::vector<KernelTimeDiff> kernels;    // largest absolute time change first
};

// Each report already narrowed to its scope (devices, findings); the scopes say which window the
// kernel times count.
ReportDiff diffReports(const TraceReport& before, const TraceReport& after,
                       const DiffScope& before_scope = {}, const DiffScope& after_scope = {});

// The largest fall of overlap_ratio (before - after) over devices present on both sides; 0 when
// no device's overlap fell.
double largestOverlapDrop(const ReportDiff& diff);

std::string renderDiffText(const ReportDiff& diff);
std::string renderDiffMarkdown(const ReportDiff& diff);
std::string renderDiffJson(const ReportDiff& diff);  // schema "cuoverlap.diff/1"

}  // namespace cuoverlap
