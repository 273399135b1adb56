// Analysis results: what the analyses compute and what every renderer (reports/) consumes.
// Definitions of each number live in docs/metrics.md and docs/findings.md, and at the top of the
// file that computes it.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>
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

// Communication kernels (communication.h) of one device against its other kernels.
struct CommunicationMetrics {
  std::uint64_t kernels = 0;
  Ns busy_ns = 0;              // |U(comm)|
  Ns hidden_ns = 0;            // |U(comm) ∩ U(other kernels)|
  Ns exposed_ns = 0;           // busy_ns - hidden_ns
  double hidden_fraction = 0;  // hidden_ns / busy_ns; 0 without communication
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
  CommunicationMetrics communication;
};

// What the thread that issued a gap's next op was doing during (part of) the gap (docs/gaps.md).
enum class GapCause : std::uint8_t {
  kSyncWait, kAllocation, kPageableStaging, kHostLaunch, kDependency, kModuleLoad, kHostBusy,
  kUnknown,
};

// The time of a gap spent in one cause.
struct GapCausePart {
  GapCause cause = GapCause::kUnknown;
  Ns ns = 0;
};

struct IdleGap {
  Ns start = 0;
  Ns end = 0;
  GapCause cause = GapCause::kUnknown;  // the largest of `causes`
  std::optional<std::size_t> prev_op;   // index into Trace::ops
  std::optional<std::size_t> next_op;   // index into Trace::ops
  std::optional<std::size_t> call;      // index into Trace::runtime_calls: the call involved
  std::vector<GapCausePart> causes{};   // per cause, the largest first; they add up to duration()
  Ns duration() const { return end - start; }
};

struct GapCauseTotal {
  GapCause cause = GapCause::kUnknown;
  std::uint64_t count = 0;              // gaps with a part of this cause
  Ns time_ns = 0;                       // the sum of those parts
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
  bool has_stream = true;          // false for calls that name no stream: renderers omit stream_id
};

// One of the fixes a finding's advice names, with what it alone would save (the lab's transform
// of that id, docs/findings.md "Each finding is a fix").
struct FixSaving {
  std::string fix;                 // the transform's id, e.g. "own-streams"
  Ns saving_ns = 0;
  // The stream the fix acts on, where the finding lists that fix once per stream (single-stream:
  // each stream whose split saves), as the trace numbers it. Reports name it ("splitting stream 726
  // over created streams"; JSON `stream_id`).
  std::optional<std::uint32_t> stream{};
  // The host thread (its tid) whose loop on that stream the fix splits, where several threads
  // shared the stream and each thread's loop there is a fix of its own. Reports name it ("thread
  // 4242's loop on stream 7"; JSON `thread_id`).
  std::optional<std::uint32_t> thread{};
};

// A distribution of durations: nearest-rank percentiles (docs/metrics.md, "Spreads").
struct DurationSpread {
  Ns median = 0;
  Ns p10 = 0;
  Ns p90 = 0;
  Ns max = 0;
};

// With --range: what the finding's fix saves in each analyzed instance (0 where it did not fire),
// over the instances (docs/reports.md, "Range summary"): a claim that holds in most instances has
// a narrow spread; one that depends on how host threads interleaved in each has a wide one.
struct InstanceSaving {
  std::uint64_t instances = 0;  // the instances analyzed
  std::uint64_t fired = 0;      // of those, the instances where the finding fired
  DurationSpread saving{};      // fixSavingNs per instance, nearest-rank
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
  // For the cost ledger (analyzer/src/diagnosis/cost_ledger.h), not rendered: the device time the
  // rule found its cost in (sorted, disjoint; empty when the rule gave a bare amount), the rule's
  // estimate before the ledger charged it, and the rule's base severity.
  std::vector<std::pair<Ns, Ns>> cost_region{};
  Ns estimated_ns = 0;
  Severity base_severity = Severity::kWarning;
  // The part of time_ns by which a fix would lower the device's ideal itself (ops made faster, not
  // overlapped: pageable copies made pinned); outside the ledger's span - ideal cap. 0 for most.
  Ns ideal_reduction_ns = 0;
  // Where the part of estimated_ns that time_ns does not hold went, set by the ledger so that
  // reports can tell the rule's own figure (host-busy: the idle time) from the cost charged:
  // the share earlier findings' regions already held (and their ids), and what the device's
  // explainable time could no longer take.
  Ns charged_elsewhere_ns = 0;
  std::vector<std::string> charged_to{};
  Ns beyond_explainable_ns = 0;
  // The part that neither its own stretches nor device time no finding held could take:
  // charging it would charge some nanosecond twice (docs/findings.md, "The cost ledger").
  Ns beyond_region_ns = 0;
  // What the finding's fix alone saves, where the rule prices its fix apart from the lost time it
  // attributes (host-busy: the device idled while the host ran its own code, but overlapping that
  // work with the GPU's saves only as much as there was GPU work to hide it under); -1: the fix
  // saves the estimate (fixSavingNs).
  Ns fix_alone_ns = -1;
  // Where the advice names more than one fix, what each saves, the recommended one (the larger
  // saving, named first in the advice) first: fixSavingNs is its saving. Empty for most findings.
  std::vector<FixSaving> fixes{};
  // The stream the fix acts on, where it is one stream (single-stream: the stream to split), as
  // the trace numbers it; the counterfactual lab compares the claim only with a fix of that stream.
  std::optional<std::uint32_t> fix_stream{};
  // With --range over two or more analyzed instances: its fix's saving instance by instance.
  std::optional<InstanceSaving> instance_saving{};
};

// What the finding's fix, applied alone, would save: the rule's estimate before the ledger charged
// it, with the part that lowers the ideal (docs/findings.md, "The cost ledger"). time_ns is the
// share of the device's lost time charged to the finding; where two findings' fixes save the same
// time (many small cudaMemcpy calls: merge them, or make them asynchronous), each fix alone saves
// it, and the ledger charges it once.
inline Ns fixSavingNs(const Finding& finding) {
  if (finding.fix_alone_ns >= 0) return finding.fix_alone_ns;
  return finding.estimated_ns + finding.ideal_reduction_ns;
}

// How much of a device's lost time the findings explain (docs/findings.md, "The cost ledger"):
// explainable_ns = span - the ledger's ideal (the metrics' ideal, with kernels allowed to share
// the SMs by their grid size), explained_ns = the sum of the device's finding costs.
struct FindingsExplained {
  Ns explainable_ns = 0;
  Ns explained_ns = 0;
  double fraction = 0.0;           // explained / explainable, 0 when nothing is explainable
  Ns ideal_reduction_ns = 0;       // the findings' ideal_reduction_ns summed: beyond explainable
  // Host threads that each issued GPU work and waited for it, side by side (2 or more; else 0):
  // the findings' savings follow the driver turns they took as recorded, which vary from run to
  // run (diagnosis/waiting_threads.h).
  std::uint32_t waiting_threads = 0;
};

// One kernel name's GPU time on a device (cuoverlap/kernel_summary.h).
struct KernelSummary {
  std::string name;
  std::uint64_t count = 0;
  Ns total_ns = 0;
  Ns mean_ns = 0;
  Ns min_ns = 0;
  Ns max_ns = 0;
  double share = 0.0;  // of the device's summed kernel time
};

struct DeviceReport {
  DeviceMetrics metrics;
  GapAnalysis gaps;
  std::vector<KernelSummary> kernels;  // every kernel name by total time, largest first
  FindingsExplained explained;
};

// One instance of an NVTX range selected with --range: its own metrics and findings.
struct RangeInstance {
  std::string name;
  Ns start = 0;
  Ns end = 0;
  std::vector<DeviceReport> devices;
  std::vector<Finding> findings;
};

// A per-instance ratio over the instances that had work on a device.
struct RatioSpread {
  double median = 0.0;
  double p90 = 0.0;
};

struct RangeDeviceSpread {
  std::uint16_t device_id = 0;
  std::uint64_t instances = 0;            // instances with work on this device
  RatioSpread overlap_ratio;
  RatioSpread copy_hidden_fraction;
  RatioSpread pipeline_efficiency;
  RatioSpread idle_fraction;              // idle_ns / span_ns
};

struct RangeInstanceRef {
  std::string name;
  Ns start = 0;
  Ns end = 0;                             // projected onto the GPU
};

// --range PATTERN over all its instances (docs/reports.md, "Range summary"). The instances' metrics
// summed per device are TraceReport::devices; their findings merged are TraceReport::findings.
struct RangeSummary {
  std::string pattern;
  std::uint64_t count = 0;
  // Instances whose metrics and findings are summed: all of them, or every k-th when the
  // instances overlap so much that analyzing each would pass the work bound (range_scope.cpp).
  std::uint64_t analyzed = 0;
  std::uint64_t visits = 0;  // ops and calls starting inside the instances, summed over all
  std::vector<std::pair<std::string, std::uint64_t>> names;  // name -> instances, most first (<= 10)
  Ns total_ns = 0;                        // sum of instance durations
  DurationSpread duration_ns;
  std::vector<RangeDeviceSpread> devices;
  std::vector<RangeInstanceRef> slowest;  // the slowest instances, slowest first (<= 5)
};

// The run's phases (docs/metrics.md, "Phases and steady state"): host start-up before the first GPU
// op, warm-up iterations, and the steady state, the repeating iterations after them, analyzed as
// the whole trace is (devices, findings restricted to [start, end)).
struct SteadyState {
  bool found = false;
  std::string reason;                     // why none was found (found == false)
  std::string source;                     // "nvtx:<name pattern>", "graph-launch" or "kernel-pattern"
  Ns start = 0;                           // where the first iteration's GPU work starts
  Ns end = 0;
  std::uint64_t iterations = 0;           // in [start, end), warm-up excluded
  std::uint64_t warmup_dropped = 0;       // leading iterations dropped as period outliers
  // Where each kept iteration starts; iteration i ends where i + 1 starts, the last one at `end`.
  std::vector<Ns> iteration_starts;
  DurationSpread iteration_ns;            // the period: GPU start to the next iteration's GPU start
  std::optional<DurationSpread> host_range_ns;  // the host range's length (NVTX, graph launch call)
  double busy_share = 0.0;                // the window's GPU busy time / the run's (all devices)
  std::vector<DeviceReport> devices;
  std::vector<Finding> findings;
};

struct Phases {
  Ns run_start = 0;                       // the first host or GPU event of the trace
  Ns startup_ns = 0;                      // run_start to the first GPU op
  Ns run_end = 0;                         // the last GPU op's end
  // Idle stretches longer than a quarter of the run, said plainly ("the first 3.7 s are host
  // start-up: no GPU work was submitted").
  std::vector<std::string> notes;
};

// Unified (managed) memory of one device inside the scope (docs/metrics.md, "Unified memory").
struct UnifiedMemoryDevice {
  std::uint16_t device_id = 0;
  std::uint64_t fault_groups = 0;     // GPU page-fault records
  std::uint64_t page_faults = 0;      // the faults they group
  Ns fault_ns = 0;                    // |union of the fault groups|: the driver servicing faults
  std::uint64_t migrations = 0;
  std::uint64_t htod_bytes = 0;
  std::uint64_t dtoh_bytes = 0;
  std::uint64_t dtod_bytes = 0;
  Ns migration_ns = 0;                // |union of the migrations|
};

struct UnifiedMemoryReport {
  std::vector<UnifiedMemoryDevice> devices;  // by device id; devices with GPU faults or migrations
  std::uint64_t cpu_page_faults = 0;  // CPU faults name no device
  std::uint64_t thrashing = 0;        // thrashing and remote-map records (our collector)
};

// GPU metrics sampled in the scope (CUOVERLAP_GPU_METRICS, nsys --gpu-metrics-devices), per device
// and per kernel (docs/metrics.md, "GPU metrics"). Values line up with GpuMetricsReport::metrics:
// a "[bytes]" metric as bytes per second over the time its samples cover, any other as its
// time-weighted mean; empty where the metric has no sample there.
struct GpuMetricKernel {  // one kernel (name) on one device
  std::uint16_t device_id = 0;
  std::string name;
  std::uint64_t launches = 0;        // in scope
  Ns time_ns = 0;                    // their summed duration
  std::uint64_t alone_launches = 0;  // with no other copy, memset or kernel on the device meanwhile
  Ns sampled_ns = 0;                 // the alone launches' time that samples cover
  std::vector<std::optional<double>> values;  // over the alone launches only: a device-wide
                                              // counter cannot tell two kernels' traffic apart
};

struct GpuMetricDevice {
  std::uint16_t device_id = 0;
  std::uint64_t samples = 0;  // in the window (each metric's)
  Ns sampled_ns = 0;
  std::vector<std::optional<double>> values;
};

struct GpuMetricsReport {
  Ns interval_ns = 0;
  std::vector<std::string> metrics;        // names with their unit, sorted
  std::vector<GpuMetricDevice> devices;    // by device id
  std::vector<GpuMetricKernel> kernels;    // most time first; at most kMaxGpuMetricKernels
  std::uint64_t lost = 0;                  // samples the collector lost (session gpu_metrics.lost)
  std::string error;                       // why a GPU was not sampled (session gpu_metrics.error)
};
inline constexpr std::size_t kMaxGpuMetricKernels = 20;

// The capture window a trace was recorded in (`record --capture/--delay/--duration`), from the
// session table: nothing outside it was recorded.
struct CaptureWindowInfo {
  std::string spec;                         // "nvtx:step@50-60", "cudaProfilerApi delay 5 s", ...
  bool opened = false;
  Ns open_ns = 0, close_ns = 0;             // trace clock; first opening, last closing
  std::optional<std::uint64_t> instances;   // nvtx: instances of the range the program ran
};

struct TraceReport {
  std::string path;
  TraceSource source = TraceSource::kNsys;
  Scope scope;                            // what was analyzed; the HTML timeline draws the same
  std::vector<DeviceReport> devices;      // with --range: summed over the instances
  std::vector<Finding> findings;
  std::vector<RangeInstance> range_instances;  // with --range: the instances kept in detail
  std::optional<RangeSummary> range_summary;   // set with --range
  std::optional<SteadyState> steady_state;     // set without --range and --window
  std::optional<Phases> phases;                // likewise
  std::optional<UnifiedMemoryReport> unified_memory;  // set when the scope holds any
  std::optional<GpuMetricsReport> gpu_metrics;        // set when the trace holds GPU metrics
  std::vector<std::string> warnings;      // Trace::warnings: about the input, e.g. unfinished
  std::optional<CaptureWindowInfo> capture;  // set for a trace recorded in a capture window
  const Trace* trace = nullptr;    // for renderers that draw the timeline
  double analysis_seconds = 0.0;   // wall time spent reading and analyzing this trace
  Ns first_op_start = 0;           // the trace's first GPU op (any device): the base of "+" times
};

// One rank of a job in the per-rank table (job.h, docs/metrics.md "Several ranks as one job").
struct RankRow {
  std::int32_t rank = 0;
  bool rank_from_launcher = false;  // false: numbered by file and pid order
  std::string path;
  std::uint32_t pid = 0;
  std::string host;
  std::uint16_t device_id = 0;
  Ns span_ns = 0;                   // first op start to last op end on the rank's device
  Ns compute_ns = 0;                // engines.compute busy
  Ns comm_busy_ns = 0;
  Ns comm_exposed_ns = 0;
  Ns idle_ns = 0;
  std::uint64_t collectives = 0;
  std::uint64_t arrived_last = 0;   // matched collectives this rank started last (skew >= 10 µs)
  Ns first_start = 0;               // on the job's time axis (clock offset applied)
  Ns last_end = 0;
  // Exposed communication time this rank spent at the start of matched collectives waiting for
  // a later peer to start them (skew: rank-straggler's, not communication), whole run and
  // steady state; left out of its exposed-communication finding (docs/findings.md).
  Ns comm_peer_wait_ns = 0;
  Ns comm_peer_wait_steady_ns = 0;
  std::size_t file_index = 0;       // the file (Report::traces) it came from; not in JSON
  // Its collectives on the job's time axis, intervals closer than 1/1500 of the job's length
  // merged (what a timeline can draw; not in JSON).
  std::vector<std::pair<Ns, Ns>> communication_blocks;
};

// One collective matched across ranks: the sequence-th collective of the stream-th communication
// stream of every rank that has it.
struct MatchedCollective {
  std::size_t stream = 0;
  std::size_t sequence = 0;
  std::string type;
  std::uint64_t ranks = 0;          // ranks that ran it
  Ns first_start = 0;               // on the reference clock (see JobAnalysis::clock)
  Ns skew_ns = 0;                   // last rank's start - first rank's start
  std::int32_t first_rank = 0;
  std::int32_t last_rank = 0;
};

struct JobAnalysis {
  std::vector<RankRow> ranks;       // by rank
  std::string clock;                // how rank times were put on one axis, in words
  std::vector<Ns> clock_offsets;    // per rank row: subtracted from its times (0 on one clock)
  std::uint64_t matched = 0;        // collectives matched across at least two ranks
  std::uint64_t type_mismatches = 0;  // matched by order but of different types
  Ns max_skew_ns = 0;
  Ns mean_skew_ns = 0;
  std::vector<MatchedCollective> largest_skews;  // up to 10, largest skew first (match order on ties)
  std::vector<std::pair<Ns, Ns>> skews;  // every matched collective: (first_start, skew), time order
  std::vector<Finding> findings;    // rank-straggler
};

struct Report {
  std::vector<TraceReport> traces;
  std::optional<JobAnalysis> job;   // several ranks of one job (analyze of their files)
  // Rows of the top-kernels tables (text, Markdown, HTML; `analyze --kernels N`); unset: each
  // format's default. JSON always holds every kernel name.
  std::optional<std::size_t> kernel_rows;
};

}  // namespace cuoverlap
