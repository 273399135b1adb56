// Hand-built traces for diagnosis tests: one device (132 SMs, H200-like limits), one context whose
// legacy default stream is 7 (flag NULL, as CUPTI reports it), and blocking streams 13, 14, 15.
// Times are in microseconds for readability and stored in nanoseconds. Ops start after 0: a
// start of 0 marks an incomplete record, which metrics, gaps and findings all skip.
#pragma once

#include <algorithm>
#include <string>

#include "cuoverlap/model.h"

namespace cuoverlap::test {

inline constexpr std::uint32_t kNullStream = 7;
inline constexpr Ns kUs = 1'000;

class TraceBuilder {
 public:
  TraceBuilder() {
    Device device;
    device.device_id = 0;
    device.name = "synthetic";
    device.sm_count = 132;
    device.max_threads_per_sm = 2048;
    device.max_blocks_per_sm = 32;
    device.max_registers_per_sm = 65536;
    device.max_shared_mem_per_sm = 233472;
    trace_.devices.push_back(device);
    Context context;
    context.context_id = 1;
    context.pid = kPid;
    context.null_stream_id = kNullStream;
    trace_.contexts.push_back(context);
    addStream(kNullStream, StreamFlag::kNull);
    for (std::uint32_t id : {13u, 14u, 15u}) addStream(id, StreamFlag::kDefault);
  }

  void addStream(std::uint32_t id, StreamFlag flag) {
    Stream stream;
    stream.stream_id = id;
    stream.context_id = 1;
    stream.pid = kPid;
    stream.flag = flag;
    trace_.streams.push_back(stream);
  }

  StringId intern(const std::string& text) {
    auto it = std::find(trace_.strings.begin(), trace_.strings.end(), text);
    if (it != trace_.strings.end()) return static_cast<StringId>(it - trace_.strings.begin());
    trace_.strings.push_back(text);
    return static_cast<StringId>(trace_.strings.size() - 1);
  }

  // A runtime call from `start_us` to `end_us`; returns its correlation id.
  std::uint32_t call(const std::string& name, double start_us, double end_us) {
    RuntimeCall call;
    call.start = ns(start_us);
    call.end = ns(end_us);
    call.correlation_id = next_correlation_++;
    call.pid = kPid;
    call.tid = 1;
    call.name = intern(name);
    trace_.runtime_calls.push_back(call);
    return call.correlation_id;
  }

  GpuOp& kernel(std::uint32_t stream, double start_us, double end_us, std::uint32_t corr = 0) {
    GpuOp& op = op_(OpKind::kKernel, stream, start_us, end_us, corr);
    op.name = intern("k");
    op.grid_blocks = 64;
    op.block_threads = 256;
    op.registers_per_thread = 32;
    return op;
  }

  GpuOp& copy(std::uint32_t stream, double start_us, double end_us, CopyKind kind,
              MemKind host = MemKind::kPinned, std::uint32_t corr = 0) {
    GpuOp& op = op_(OpKind::kMemcpy, stream, start_us, end_us, corr);
    op.copy_kind = kind;
    op.bytes = 1 << 20;
    op.src_kind = kind == CopyKind::kHtoD ? host : MemKind::kDevice;
    op.dst_kind = kind == CopyKind::kDtoH ? host : MemKind::kDevice;
    return op;
  }

  GpuOp& memset(std::uint32_t stream, double start_us, double end_us, std::uint32_t corr = 0) {
    GpuOp& op = op_(OpKind::kMemset, stream, start_us, end_us, corr);
    op.bytes = 4096;
    return op;
  }

  // A kernel launched by cudaLaunchKernel from `call_start_us` to `call_end_us`.
  GpuOp& launch(std::uint32_t stream, double call_start_us, double call_end_us, double start_us,
                double end_us) {
    return kernel(stream, start_us, end_us,
                  call("cudaLaunchKernel_v7000", call_start_us, call_end_us));
  }

  GpuOp& copyCall(const std::string& api, std::uint32_t stream, double call_start_us,
                  double call_end_us, double start_us, double end_us, CopyKind kind,
                  MemKind host = MemKind::kPinned) {
    return copy(stream, start_us, end_us, kind, host, call(api, call_start_us, call_end_us));
  }

  // Thread `tid` keeps `stream`'s HtoD engine busy: two cudaMemcpyAsync calls of 2 µs, at
  // `calls_us`, of copies over `first_us` and `second_us` ({start, end}), then a synchronize of the
  // stream from just after the second call until just after its copy ends.
  void busyUploadsOnThread(std::uint32_t tid, std::uint32_t stream, const double (&calls_us)[2],
                           const double (&first_us)[2], const double (&second_us)[2]) {
    const double* copies[2] = {first_us, second_us};
    for (int i = 0; i < 2; ++i) {
      copyCall("cudaMemcpyAsync_v3020", stream, calls_us[i], calls_us[i] + 2, copies[i][0],
               copies[i][1], CopyKind::kHtoD);
      trace_.runtime_calls.back().tid = tid;
    }
    streamSynchronize(stream, calls_us[1] + 3, second_us[1] + 1);
    trace_.runtime_calls.back().tid = tid;
  }

  void streamWaitEvent(std::uint32_t stream, double start_us, double end_us,
                       std::uint64_t event_id = 0) {
    const std::uint32_t corr = call("cudaStreamWaitEvent_v3020", start_us, end_us);
    SyncEvent sync;
    sync.start = ns(start_us);
    sync.end = ns(end_us);
    sync.correlation_id = corr;
    sync.stream_id = stream;
    sync.context_id = 1;
    sync.pid = kPid;
    sync.type = SyncType::kStreamWaitEvent;
    sync.event_id = event_id;
    trace_.syncs.push_back(sync);
  }

  // A cudaGraphLaunch call from `start_us` to `end_us` replaying `nodes` kernel nodes on `stream`,
  // each `node_us` long, the first starting at `first_us` and each next `pitch_us` after the one
  // before started; returns the call's correlation id.
  std::uint32_t graphLaunch(std::uint32_t stream, double start_us, double end_us, int nodes,
                            double first_us, double node_us, double pitch_us) {
    const std::uint32_t corr = call("cudaGraphLaunch_v10000", start_us, end_us);
    for (int k = 0; k < nodes; ++k) {
      const double node_start = first_us + pitch_us * k;
      kernel(stream, node_start, node_start + node_us, corr).flags |= op_flag::kFromGraph;
    }
    return corr;
  }

  // A cudaStreamSynchronize of `stream` from `start_us` to `end_us`, with its synchronization record.
  void streamSynchronize(std::uint32_t stream, double start_us, double end_us) {
    SyncEvent sync;
    sync.start = ns(start_us);
    sync.end = ns(end_us);
    sync.correlation_id = call("cudaStreamSynchronize_v3020", start_us, end_us);
    sync.stream_id = stream;
    sync.context_id = 1;
    sync.pid = kPid;
    sync.type = SyncType::kStreamSynchronize;
    trace_.syncs.push_back(sync);
  }

  // A cudaEventRecord of `event_id` on `stream` (call and CUDA_EVENT record); returns its
  // correlation id. Records are kept in correlation order, as the reader sorts them.
  std::uint32_t eventRecord(std::uint32_t stream, std::uint64_t event_id, double start_us,
                            double end_us) {
    CudaEventRecord record;
    record.correlation_id = call("cudaEventRecord_v3020", start_us, end_us);
    record.stream_id = stream;
    record.context_id = 1;
    record.pid = kPid;
    record.event_id = event_id;
    trace_.event_records.push_back(record);
    return record.correlation_id;
  }

  // A cudaDeviceSynchronize from `start_us` to `end_us`, with its synchronization record.
  void deviceSynchronize(double start_us, double end_us) {
    SyncEvent sync;
    sync.start = ns(start_us);
    sync.end = ns(end_us);
    sync.correlation_id = call("cudaDeviceSynchronize_v3020", start_us, end_us);
    sync.stream_id = 0xFFFFFFFF;
    sync.context_id = 1;
    sync.pid = kPid;
    sync.type = SyncType::kContextSynchronize;
    trace_.syncs.push_back(sync);
  }

  // What `op` touched, as the collector's CUOVERLAP_OP_BUFFERS records it.
  void touches(const GpuOp& op, std::uint64_t address, std::uint64_t bytes,
               schema::BufferAccess access = schema::BufferAccess::kKernelArgument) {
    OpBuffer buffer;
    buffer.pid = op.pid;
    buffer.correlation_id = op.correlation_id;
    buffer.address = address;
    buffer.bytes = bytes;
    buffer.access = access;
    trace_.op_buffers.push_back(buffer);
  }

  Trace& trace() { return trace_; }

  Trace build() {
    auto by_start = [](const auto& a, const auto& b) { return a.start < b.start; };
    std::stable_sort(trace_.ops.begin(), trace_.ops.end(), by_start);
    std::stable_sort(trace_.runtime_calls.begin(), trace_.runtime_calls.end(), by_start);
    std::stable_sort(trace_.syncs.begin(), trace_.syncs.end(), by_start);
    std::stable_sort(trace_.op_buffers.begin(), trace_.op_buffers.end(), [](const OpBuffer& a, const OpBuffer& b) {
      return opBufferKey(a.pid, a.correlation_id) < opBufferKey(b.pid, b.correlation_id);
    });
    return trace_;
  }

  static Ns ns(double us) { return static_cast<Ns>(us * kUs); }

 private:
  static constexpr std::uint32_t kPid = 4242;

  GpuOp& op_(OpKind kind, std::uint32_t stream, double start_us, double end_us,
             std::uint32_t corr) {
    GpuOp op;
    op.kind = kind;
    op.start = ns(start_us);
    op.end = ns(end_us);
    op.stream_id = stream;
    op.context_id = 1;
    op.pid = kPid;
    op.correlation_id = corr;
    trace_.ops.push_back(op);
    return trace_.ops.back();
  }

  Trace trace_;
  std::uint32_t next_correlation_ = 100;
};

}  // namespace cuoverlap::test
