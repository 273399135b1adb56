// A small hand-built trace and its report, for the renderer tests: two streams on device 0 (a
// kernel with a copy hidden under it, then a memset), a hostile kernel name and NVTX text, one
// idle gap and two findings. The numbers are chosen by hand, not computed by the analyzer.
#pragma once

#include <memory>
#include <string>

#include "cuoverlap/report.h"

namespace cuoverlap::test {

inline constexpr const char* kHostileKernel = "<script>alert('k')</script>";
inline constexpr const char* kHostileNvtx = "<script>alert(\"n\")</script>&<img src=x>";

inline StringId intern(Trace& trace, const std::string& text) {
  trace.strings.push_back(text);
  return static_cast<StringId>(trace.strings.size() - 1);
}

inline GpuOp makeOp(OpKind kind, Ns start, Ns end, std::uint32_t stream, std::uint32_t correlation) {
  GpuOp op;
  op.kind = kind;
  op.start = start;
  op.end = end;
  op.stream_id = stream;
  op.correlation_id = correlation;
  op.pid = 4242;
  op.context_id = 1;
  return op;
}

inline RuntimeCall makeCall(StringId name, Ns start, Ns end, std::uint32_t correlation) {
  RuntimeCall call;
  call.name = name;
  call.start = start;
  call.end = end;
  call.correlation_id = correlation;
  call.pid = 4242;
  call.tid = 4243;
  return call;
}

// Device 0: kernel [10us, 110us) on stream 13, HtoD copy [20us, 60us) on stream 14 (hidden),
// memset [150us, 160us) on the legacy default stream 7. Gap [110us, 150us).
inline std::unique_ptr<Trace> makeSampleTrace() {
  auto trace = std::make_unique<Trace>();
  trace->path = "sample<&>.sqlite";
  trace->source = TraceSource::kCuoverlap;
  const StringId kernel_name = intern(*trace, kHostileKernel);
  const StringId launch = intern(*trace, "cudaLaunchKernel");
  const StringId copy = intern(*trace, "cudaMemcpyAsync");
  const StringId memset = intern(*trace, "cudaMemsetAsync");
  const StringId nvtx_text = intern(*trace, kHostileNvtx);
  GpuOp kernel = makeOp(OpKind::kKernel, 10'000, 110'000, 13, 101);
  kernel.name = kernel_name;
  kernel.grid_blocks = 132;
  kernel.block_threads = 256;
  GpuOp memcpy = makeOp(OpKind::kMemcpy, 20'000, 60'000, 14, 102);
  memcpy.copy_kind = CopyKind::kHtoD;
  memcpy.src_kind = MemKind::kPinned;
  memcpy.dst_kind = MemKind::kDevice;
  memcpy.bytes = 4 << 20;
  GpuOp memset_op = makeOp(OpKind::kMemset, 150'000, 160'000, 7, 103);
  memset_op.bytes = 1024;
  trace->ops = {kernel, memcpy, memset_op};
  trace->runtime_calls = {makeCall(launch, 5'000, 8'000, 101), makeCall(copy, 9'000, 12'000, 102),
                          makeCall(memset, 140'000, 145'000, 103)};
  NvtxRange range;
  range.start = 2'000;
  range.end = 158'000;
  range.text = nvtx_text;
  range.pid = 4242;
  range.tid = 4243;
  range.event_type = static_cast<std::int32_t>(schema::NvtxEventType::kPushPopRange);
  trace->nvtx = {range};
  Context context;
  context.context_id = 1;
  context.pid = 4242;
  context.null_stream_id = 7;
  trace->contexts = {context};
  Device device;
  device.name = "Test GPU <b>";
  device.sm_count = 132;
  trace->devices = {device};
  return trace;
}

inline DeviceReport makeSampleDeviceReport() {
  DeviceReport device;
  DeviceMetrics& m = device.metrics;
  m.device_id = 0;
  m.name = "Test GPU <b>";
  m.kernels = 1;
  m.memcpys = 1;
  m.memsets = 1;
  m.first_start = 10'000;
  m.last_end = 160'000;
  m.span_ns = 150'000;
  m.busy_ns = 110'000;
  m.idle_ns = 40'000;
  m.sum_ns = 150'000;
  m.overlap_ratio = 1.0 - 110.0 / 150.0;
  m.copy_hidden_fraction = 1.0;
  m.engines = {{Engine::kCompute, 100'000, 100.0 / 150.0}, {Engine::kH2D, 40'000, 40.0 / 150.0},
               {Engine::kD2H, 0, 0.0}, {Engine::kD2D, 0, 0.0}, {Engine::kOtherCopy, 0, 0.0},
               {Engine::kMemset, 10'000, 10.0 / 150.0}};
  m.concurrency_ns = {40'000, 70'000, 40'000};
  m.ideal_ns = 100'000;
  m.pipeline_efficiency = 100.0 / 150.0;
  device.gaps.threshold_ns = 10'000;
  device.gaps.count = 1;
  device.gaps.time_ns = 40'000;
  device.gaps.totals = {{GapCause::kHostLaunch, 1, 40'000, 1.0}};
  device.gaps.largest = {{110'000, 150'000, GapCause::kHostLaunch, 0, 2, 2}};
  return device;
}

inline Finding makeFinding(std::string id, Severity severity, Ns time_ns, std::uint64_t count) {
  Finding finding;
  finding.id = std::move(id);
  finding.severity = severity;
  finding.count = count;
  finding.time_ns = time_ns;
  finding.summary = "summary of " + finding.id + " <i>";
  finding.advice = "advice for " + finding.id;
  finding.evidence = {{"cudaMemsetAsync", 103, 7, 140'000, "detail <u>|pipe|"}};
  return finding;
}

inline TraceReport makeSampleTraceReport(const Trace& trace) {
  TraceReport report;
  report.path = trace.path;
  report.source = trace.source;
  report.trace = &trace;
  report.first_op_start = 10'000;  // the kernel: the base of every "+" time
  report.devices = {makeSampleDeviceReport()};
  report.findings = {makeFinding("legacy-default-stream", Severity::kWarning, 5'000, 1),
                     makeFinding("sync-memset", Severity::kError, 1'000, 2)};
  return report;
}

}  // namespace cuoverlap::test
