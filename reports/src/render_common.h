// Pieces shared by the Markdown and HTML renderers: how an op, a call or a stream is named in a
// report, and the order findings are listed in. Raw text: each renderer escapes it for its format.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cuoverlap/report.h"

namespace cuoverlap::render {

// Text from a trace made inert for a terminal (text report, diff, gate, and under the Markdown and
// JUnit escaping): C0 controls, DEL and C1 controls become visible escapes ("\x1b", "\u0085"),
// bidi controls, line/paragraph separators and the noncharacters U+FFFE/U+FFFF become "\u202e"
// etc., and each byte of invalid UTF-8 (overlong forms, surrogates, > U+10FFFF, truncated
// sequences) becomes U+FFFD. Tabs stay; newlines stay only with Newlines::kKeep (whole reports),
// else they become "\x0a" (a name must not start a forged line of its own).
enum class Newlines : std::uint8_t { kEscape, kKeep };
std::string inert(std::string_view text, Newlines newlines = Newlines::kEscape);

// A C++ kernel name without template arguments and parameters, which can run to thousands of
// characters: "void ns::k<float, 4>(float*, int)" -> "void ns::k<…>(…)". Tables show this; the
// timeline's tooltips keep the full name.
std::string shortName(std::string_view name);

// A CUDA API name as users write it: "cudaLaunchKernel_v7000" (CUPTI, nsys) -> "cudaLaunchKernel";
// a name without a `_vDIGITS` suffix is unchanged.
std::string_view apiName(std::string_view name);

// A top-kernels table (text, Markdown, HTML): its first `rows` kernels with the names they are
// shown by, short but distinct (distinctShortKernelNames: kernels that differ only in their
// template arguments keep enough of them to tell them apart).
struct KernelRow {
  const KernelSummary* kernel = nullptr;
  std::string name;
};
std::vector<KernelRow> kernelTable(const std::vector<KernelSummary>& kernels, std::size_t rows);

// Uses shortName for kernels: "kernel scan_kernel (stream 14)", "memcpy HtoD 4.0 MiB (stream 7)"; "" without a trace or index.
std::string describeOp(const Trace* trace, std::optional<std::size_t> op_index);
// "cudaStreamSynchronize (correlation 42)" (apiName); "" without a trace or index.
std::string describeCall(const Trace* trace, std::optional<std::size_t> call_index);
// "stream 7 (legacy default)" when the stream is its context's null stream, else "stream 14".
std::string streamLabel(const Trace& trace, std::uint32_t pid, std::uint32_t context_id,
                        std::uint32_t stream_id);

// The time a device's report covers: its first op's start to its last op's end; with --range the
// first to the last instance on that device (summed metrics carry no times). {0, 0} when the
// report has no such device.
struct TimeWindow {
  Ns start = 0;
  Ns end = 0;
};
TimeWindow deviceWindow(const TraceReport& trace, std::uint16_t device_id);

// A time as every report prints it: an offset from the trace's one stated origin, its first GPU op
// on any device (TraceReport::first_op_start, timeBaseLine): "+5.2 µs", "-3.0 ms" for host events
// before it. Gaps, evidence, range instances, the steady state and every device, whole run or
// steady state, count from it, so the same event reads the same everywhere and `--window +T:+U`
// lands where the reports say. The raw timestamp in ns when the trace has no GPU op.
std::string relativeTime(const TraceReport& trace, Ns time);

// An evidence's correlation id for a table cell: empty for evidence without a call (host code),
// whose id is 0 (CUPTI's start at 1).
inline std::string correlationCell(const Evidence& evidence) {
  return evidence.correlation_id != 0 ? std::to_string(evidence.correlation_id) : std::string();
}

// A gap's cause with its parts when it has several: "host-busy (host-busy 3.7 s, sync-wait 4.4 µs)";
// just the cause name when it has one part.
std::string describeGapCauses(const IdleGap& gap);

// "about 60.8 ms lost", or with a part that lowers the ideal "about 103.5 ms lost (42.7 ms of it
// from faster ops, which lowers the ideal)"; when the ledger charged less than the rule found,
// where the rest went: "about 0 ns lost (the cost charged to it: of the 30.2 ms it found, 30.2 ms
// is already charged to early-result-wait)".
std::string lostTime(const Finding& finding);
// With --range: "per range instance, its fix would save 1.200 ms at the median (900.0 µs to
// 1.500 ms from the 10th to the 90th percentile, at most 4.800 ms; fired in 95 of 100)"; "" without
// a per-instance spread (Finding::instance_saving).
std::string instanceSavingNote(const Finding& finding);
// "; their fixes would also lower the ideal by 42.7 ms" when some finding would; else "".
std::string idealReductionNote(const FindingsExplained& explained);
// Where two or more host threads each issued GPU work and waited for it side by side: "3 host
// threads issue GPU work and wait for it side by side: the savings above follow the turns they took
// in the driver in this run, which change from run to run; take them as rough (...)"; else "".
std::string waitingThreadsNote(const FindingsExplained& explained);

// The two bounds a device block names (docs/metrics.md, "Bounds"): the engine bound is
// DeviceMetrics::ideal_ns (each engine busy back to back, kernels as they ran: pipeline
// efficiency's); the packed bound is the cost ledger's (kernels packed onto the SMs they used, so
// it is at most the engine bound): findings explain span - packed bound.
Ns packedBound(const DeviceReport& device);

// Errors before warnings before info; within a severity the most time lost first.
std::vector<const Finding*> findingsWorstFirst(const std::vector<Finding>& findings);

}  // namespace cuoverlap::render
