#include "program_run.h"

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include <cuda_runtime_api.h>
#include <nvtx3/nvToolsExt.h>

#include "lab_kernels.cuh"

namespace cuoverlap::lab {
namespace {

// A failed call inside a run: what() is `WHERE: CALL: cuda error string`.
class RunError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

void check(cudaError_t status, const char* call, const std::string& where) {
  if (status != cudaSuccess)
    throw RunError(where + ": " + call + ": " + cudaGetErrorString(status));
}

#define LAB_CHECK(call, where) check((call), #call, (where))

void spinFor(double us) {
  auto until = std::chrono::steady_clock::now() + std::chrono::nanoseconds(static_cast<long long>(us * 1e3));
  while (std::chrono::steady_clock::now() < until) {
  }
}

std::atomic<unsigned> g_host_read_sink{0};

class ProgramRun {
 public:
  ProgramRun(const Program& program) : program_(program), ptrs_(program.buffers.size(), nullptr) {}
  ~ProgramRun() { tearDown(); }

  RunOutcome run(const std::string& range_name) {
    RunOutcome outcome;
    try {
      setUp();
    } catch (const RunError& error) {
      return {false, std::string("setup: ") + error.what(), 0};
    }
    std::atomic<bool> go{false};
    std::atomic<std::size_t> ready{0};
    std::vector<std::thread> helpers;
    for (std::size_t t = 1; t < program_.threads.size(); ++t)
      helpers.emplace_back([this, t, &go, &ready] {
        // The thread's runtime state and its per-thread default stream, before the range.
        cudaSetDevice(device_);
        cudaStreamQuery(cudaStreamPerThread);
        ready.fetch_add(1, std::memory_order_release);
        while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
        runThread(t);
      });
    // Every helper's setup done before the range opens: otherwise the helpers start 4-170 µs into
    // it, and now and then one starts late by accident (lab g000060's kept run: a worker whose
    // cudaSetDevice came 1.28 ms into the range, the only one of 184 in the corpus's kept runs past
    // 169 µs, whose calls then queued behind another thread's cudaMemcpy; docs/findings.md).
    while (ready.load(std::memory_order_acquire) < helpers.size()) std::this_thread::yield();
    nvtxRangePushA(range_name.c_str());
    auto start = std::chrono::steady_clock::now();
    go.store(true, std::memory_order_release);
    runThread(0);
    for (std::thread& helper : helpers) helper.join();
    noteError([] { LAB_CHECK(cudaDeviceSynchronize(), "end of range"); });
    auto end = std::chrono::steady_clock::now();
    nvtxRangePop();
    outcome.host_us = std::chrono::duration<double, std::micro>(end - start).count();
    outcome.ok = error_.empty();
    outcome.error = error_;
    return outcome;
  }

 private:
  void setUp() {
    LAB_CHECK(cudaGetDevice(&device_), "setup");
    for (std::size_t b = 0; b < program_.buffers.size(); ++b)
      if (program_.buffers[b].declared) allocate(static_cast<int>(b), "buffers[" + std::to_string(b) + "]", true);
    for (const Stream& stream : program_.streams) {
      cudaStream_t handle = cudaStreamLegacy;
      if (stream.kind == StreamKind::kPerThread) handle = cudaStreamPerThread;
      if (stream.high_priority) {
        int least = 0;
        int greatest = 0;
        LAB_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest), "streams " + stream.name);
        const unsigned flags = stream.kind == StreamKind::kNonBlocking ? cudaStreamNonBlocking : cudaStreamDefault;
        LAB_CHECK(cudaStreamCreateWithPriority(&handle, flags, greatest), "streams " + stream.name);
      } else if (stream.kind == StreamKind::kBlocking) {
        LAB_CHECK(cudaStreamCreate(&handle), "streams " + stream.name);
      } else if (stream.kind == StreamKind::kNonBlocking) {
        LAB_CHECK(cudaStreamCreateWithFlags(&handle, cudaStreamNonBlocking), "streams " + stream.name);
      }
      streams_.push_back(handle);
      created_.push_back(stream.kind == StreamKind::kBlocking || stream.kind == StreamKind::kNonBlocking);
    }
    for (const std::string& name : program_.events) {
      events_.push_back(nullptr);
      LAB_CHECK(cudaEventCreate(&events_.back()), "events " + name);
    }
    for (std::size_t g = 0; g < program_.graphs.size(); ++g) capture(program_.graphs[g], "graphs[" + std::to_string(g) + "]");
    LAB_CHECK(cudaStreamQuery(cudaStreamPerThread), "setup");
    LAB_CHECK(cudaDeviceSynchronize(), "setup");
  }

  void capture(const Graph& graph, const std::string& where) {
    cudaStream_t stream = streams_[graph.stream];
    LAB_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal), where);
    try {
      runSteps(graph.body);
    } catch (const RunError&) {
      cudaGraph_t broken = nullptr;
      cudaStreamEndCapture(stream, &broken);
      if (broken) cudaGraphDestroy(broken);
      throw;
    }
    graphs_.push_back(nullptr);
    LAB_CHECK(cudaStreamEndCapture(stream, &graphs_.back()), where);
    execs_.push_back(nullptr);
    LAB_CHECK(cudaGraphInstantiate(&execs_.back(), graphs_.back(), 0), where);
    LAB_CHECK(cudaGraphUpload(execs_.back(), stream), where);
  }

  void allocate(int b, const std::string& where, bool touch) {
    const Buffer& buffer = program_.buffers[b];
    void*& ptr = ptrs_[b];
    switch (buffer.kind) {
      case BufferKind::kDevice: LAB_CHECK(cudaMalloc(&ptr, buffer.bytes), where); break;
      case BufferKind::kPinned: LAB_CHECK(cudaMallocHost(&ptr, buffer.bytes), where); break;
      case BufferKind::kManaged: LAB_CHECK(cudaMallocManaged(&ptr, buffer.bytes), where); break;
      case BufferKind::kPageable:
        ptr = std::malloc(buffer.bytes);
        if (!ptr) throw RunError(where + ": malloc: out of memory");
        break;
    }
    // Declared pageable and managed buffers start resident on the host (touched once): a kernel
    // faults managed pages in, a copy from pageable memory finds its pages present.
    if (touch && (buffer.kind == BufferKind::kPageable || buffer.kind == BufferKind::kManaged))
      std::memset(ptr, 1, buffer.bytes);
  }

  void release(int b, const std::string& where) {
    void*& ptr = ptrs_[b];
    if (!ptr) return;
    void* old = ptr;
    ptr = nullptr;
    switch (program_.buffers[b].kind) {
      case BufferKind::kDevice:
      case BufferKind::kManaged: LAB_CHECK(cudaFree(old), where); break;
      case BufferKind::kPinned: LAB_CHECK(cudaFreeHost(old), where); break;
      case BufferKind::kPageable: std::free(old); break;
    }
  }

  void runThread(std::size_t t) {
    noteError([&] { runSteps(program_.threads[t].steps); });
  }

  template <typename Body>
  void noteError(Body body) {
    try {
      body();
    } catch (const RunError& error) {
      std::lock_guard<std::mutex> lock(error_mutex_);
      if (error_.empty()) error_ = error.what();
    }
  }

  void runSteps(const std::vector<Step>& steps) {
    for (const Step& step : steps) runStep(step);
  }

  char* at(int buffer, std::uint64_t offset) { return static_cast<char*>(ptrs_[buffer]) + offset; }

  void runStep(const Step& step) {
    std::string where = step.path + ": " + stepOpName(step.op);
    cudaStream_t stream = step.stream >= 0 ? streams_[step.stream] : nullptr;
    switch (step.op) {
      case StepOp::kLoop:
        for (std::int64_t i = 0; i < step.count; ++i) runSteps(step.body);
        break;
      case StepOp::kAlloc: allocate(step.buffer, where, false); break;
      case StepOp::kFree: release(step.buffer, where); break;
      case StepOp::kCopy:
        if (step.async)
          LAB_CHECK(cudaMemcpyAsync(at(step.dst, step.dst_offset), at(step.src, step.src_offset), step.bytes,
                                    cudaMemcpyDefault, stream), where);
        else
          LAB_CHECK(cudaMemcpy(at(step.dst, step.dst_offset), at(step.src, step.src_offset), step.bytes,
                               cudaMemcpyDefault), where);
        break;
      case StepOp::kMemset:
        if (step.async) LAB_CHECK(cudaMemsetAsync(at(step.buffer, 0), 0, step.bytes, stream), where);
        else LAB_CHECK(cudaMemset(at(step.buffer, 0), 0, step.bytes), where);
        break;
      case StepOp::kKernel:
        LAB_CHECK(launchTouchSpin(stream, step.grid, step.block, step.us,
                                  step.buffer >= 0 ? ptrs_[step.buffer] : nullptr, step.touch_bytes), where);
        break;
      case StepOp::kRecord: LAB_CHECK(cudaEventRecord(events_[step.event], stream), where); break;
      case StepOp::kWait: LAB_CHECK(cudaStreamWaitEvent(stream, events_[step.event], 0), where); break;
      case StepOp::kSync:
        if (step.what == SyncWhat::kDevice) LAB_CHECK(cudaDeviceSynchronize(), where);
        if (step.what == SyncWhat::kStream) LAB_CHECK(cudaStreamSynchronize(stream), where);
        if (step.what == SyncWhat::kEvent) LAB_CHECK(cudaEventSynchronize(events_[step.event]), where);
        break;
      case StepOp::kHost: spinFor(step.us); break;
      case StepOp::kHostRead: hostRead(step.buffer); break;
      case StepOp::kGraphLaunch: LAB_CHECK(cudaGraphLaunch(execs_[step.graph], stream), where); break;
      case StepOp::kPrefetch: prefetch(step, stream, where); break;
    }
  }

  void hostRead(int buffer) {
    const volatile unsigned* words = static_cast<const volatile unsigned*>(ptrs_[buffer]);
    std::uint64_t count = program_.buffers[buffer].bytes / sizeof(unsigned);
    unsigned value = words[0];
    if (count > 1) value += words[count - 1];
    g_host_read_sink.fetch_add(value, std::memory_order_relaxed);
  }

  void prefetch(const Step& step, cudaStream_t stream, const std::string& where) {
    const Buffer& buffer = program_.buffers[step.buffer];
#if CUDART_VERSION >= 13000
    cudaMemLocation location{};
    location.type = step.to_device ? cudaMemLocationTypeDevice : cudaMemLocationTypeHost;
    location.id = step.to_device ? device_ : 0;
    LAB_CHECK(cudaMemPrefetchAsync(ptrs_[step.buffer], buffer.bytes, location, 0, stream), where);
#else
    LAB_CHECK(cudaMemPrefetchAsync(ptrs_[step.buffer], buffer.bytes, step.to_device ? device_ : cudaCpuDeviceId,
                                   stream), where);
#endif
  }

  // Best effort: everything this run created, whatever state a failure left it in.
  void tearDown() {
    cudaDeviceSynchronize();
    for (cudaGraphExec_t exec : execs_) if (exec) cudaGraphExecDestroy(exec);
    for (cudaGraph_t graph : graphs_) if (graph) cudaGraphDestroy(graph);
    for (cudaEvent_t event : events_) if (event) cudaEventDestroy(event);
    for (std::size_t s = 0; s < streams_.size(); ++s) if (created_[s]) cudaStreamDestroy(streams_[s]);
    for (std::size_t b = 0; b < ptrs_.size(); ++b) {
      try {
        release(static_cast<int>(b), "teardown");
      } catch (const RunError&) {
      }
    }
    execs_.clear();
    graphs_.clear();
    events_.clear();
    streams_.clear();
  }

  const Program& program_;
  int device_ = 0;
  std::vector<void*> ptrs_;  // by buffer index; an alloc'ed buffer's slot only its thread touches
  std::vector<cudaStream_t> streams_;
  std::vector<bool> created_;
  std::vector<cudaEvent_t> events_;
  std::vector<cudaGraph_t> graphs_;
  std::vector<cudaGraphExec_t> execs_;
  std::mutex error_mutex_;
  std::string error_;
};

}  // namespace

RunOutcome runProgram(const Program& program, const std::string& range_name) {
  ProgramRun run(program);
  return run.run(range_name);
}

std::string warmUp() {
  int device = 0;
  cudaDeviceProp properties{};
  LAB_CHECK(cudaGetDevice(&device), "warm-up");
  LAB_CHECK(cudaGetDeviceProperties(&properties, device), "warm-up");
  nlohmann::json description = {
      {"schema", "cuoverlap-lab/1"}, {"id", "warm-up"},
      {"buffers", {{{"name", "d"}, {"kind", "device"}, {"bytes", 1 << 20}},
                   {{"name", "p"}, {"kind", "pinned"}, {"bytes", 1 << 20}},
                   {{"name", "h"}, {"kind", "pageable"}, {"bytes", 1 << 20}},
                   {{"name", "m"}, {"kind", "managed"}, {"bytes", 1 << 20}}}},
      {"streams", {{{"name", "s"}, {"kind", "nonblocking"}}}},
      {"events", {{{"name", "e"}}}},
      {"graphs", {{{"name", "g"}, {"stream", "s"},
                   {"body", {{{"op", "kernel"}, {"stream", "s"}, {"grid", 1}, {"us", 1}}}}}}},
      {"threads", {{{"name", "main"}, {"steps", {
          {{"op", "kernel"}, {"stream", "s"}, {"grid", 2}, {"us", 1}, {"buffer", "m"}},
          {{"op", "prefetch"}, {"buffer", "m"}, {"to", "host"}, {"stream", "s"}},
          {{"op", "prefetch"}, {"buffer", "m"}, {"to", "device"}, {"stream", "s"}},
          {{"op", "copy"}, {"dst", "d"}, {"src", "p"}, {"bytes", 4096}, {"stream", "s"}},
          {{"op", "copy"}, {"dst", "h"}, {"src", "d"}, {"bytes", 4096}, {"async", false}},
          {{"op", "copy"}, {"dst", "d"}, {"src", "d"}, {"bytes", 4096}, {"dst_offset", 8192}, {"stream", "s"}},
          {{"op", "memset"}, {"buffer", "d"}, {"bytes", 4096}, {"stream", "s"}},
          {{"op", "record"}, {"event", "e"}, {"stream", "s"}},
          {{"op", "graph_launch"}, {"graph", "g"}, {"stream", "s"}},
          {{"op", "sync"}, {"what", "event"}, {"event", "e"}}}}}}}};
  nvtxRangePushA("lab warm-up");
  RunOutcome outcome = runProgram(parseProgram(description), "lab warm-up run");
  nvtxRangePop();
  if (!outcome.ok) throw std::runtime_error("warm-up: " + outcome.error);
  return properties.name;
}

}  // namespace cuoverlap::lab
