// Plays a traced process (and process trees) without a GPU, so that `cuoverlap record`'s
// multi-process path runs on a CPU box: each process takes its output exactly as the collector
// does (optionsFromEnvironment, openTraceOutput: registration in record's run directory, per-
// process names, the TraceWriter), writes a device, a context, a stream and K kernels each with
// the launch call that made it (correlation ids 1..K, as CUPTI numbers them per process), and the
// session rows, then closes the file and releases its registration. With CUOVERLAP_SUMMARY=1 it
// then summarizes its trace as the collector does at exit (exit_summary.h), so that the CPU tests
// run that path too.
// Usage: fake_traced_app MODE [ARG]
//   one K       this process traces K kernels; exits 3
//   tree        traces 2 kernels; forks (no exec) 2 children with RANK=i LOCAL_RANK=i WORLD_SIZE=2
//               tracing 3 + i kernels (a second kernel name in each), and a third child that
//               traces nothing; waits for them; exits 0
//   orphan MS   forks a child that opens its trace, works MS ms and traces 4 kernels; traces 1
//               and exits 0 after 0.1 s (the child outlives it)
//   lie         traces 2 kernels under a session pid that is not its own
//   killed K    traces K kernels, commits, then SIGKILLs itself before closing the trace
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "collector_options.h"
#include "exit_summary.h"
#include "run_registry.h"
#include "summarizer_process.h"
#include "trace_output.h"

using namespace cuoverlap::collector;

namespace {

std::uint64_t realtimeNs() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000u + static_cast<std::uint64_t>(ts.tv_nsec);
}

void writeActivity(TraceWriter& writer, int kernels, const char* second_name) {
  DeviceRow device;
  device.name = "Fake GPU";
  device.sm_count = 132;
  device.async_engines = 3;
  device.compute_major = 9;
  writer.onDevice(device);
  writer.onContext(ContextRow{1, 0, 7});
  writer.onStream(StreamRow{1, 7, 0, 3});
  writer.onStream(StreamRow{1, 13, 0, 2});
  std::uint64_t t = realtimeNs();
  for (int i = 1; i <= kernels; ++i) {
    ApiRow api;
    api.start = t + i * 1000;
    api.end = api.start + 300;
    api.callback_id = 211;
    api.process_id = static_cast<std::uint32_t>(getpid());
    api.thread_id = static_cast<std::uint32_t>(getpid());
    api.correlation_id = static_cast<std::uint32_t>(i);
    api.name = "cudaLaunchKernel_v7000";
    writer.onApi(api);
    KernelRow kernel;
    kernel.start = api.start + 500;
    kernel.end = kernel.start + 400;
    kernel.context_id = 1;
    kernel.stream_id = 13;
    kernel.correlation_id = static_cast<std::uint32_t>(i);
    kernel.name = second_name != nullptr && i % 2 == 0 ? second_name : "_Z6kernelv";
    kernel.grid[0] = kernel.block[0] = 1;
    writer.onKernel(kernel);
  }
  writer.endOfBuffer();
}

void traceKernels(int kernels, const char* second_name = nullptr, bool lie = false, bool die = false,
                  int busy_ms = 0) {
  CollectorOptions options = optionsFromEnvironment();
  RunRegistration registration;
  std::string reason;
  std::unique_ptr<TraceWriter> writer = openTraceOutput(options, registration, reason);
  if (writer == nullptr) {
    std::fprintf(stderr, "fake_traced_app: not tracing: %s\n", reason.c_str());
    return;
  }
  const ExitSummary exit_summary = planExitSummary(options, thisLibraryPath());
  for (const auto& [key, value] : sessionStartValues(options, realtimeNs(), "130001", "13000")) {
    writer->setSessionValue(key, value);
  }
  if (lie) writer->setSessionValue("pid", std::to_string(getpid() + 100000));
  usleep(static_cast<useconds_t>(busy_ms) * 1000);  // tracing, as a long-running rank would
  writeActivity(*writer, kernels, second_name);
  writer->commit();
  if (die) raise(SIGKILL);
  writer->setSessionValue("end_ns", std::to_string(realtimeNs()));
  writer->setSessionValue("complete", "1");
  writer->close();
  registration.release();
  writeExitSummary(exit_summary);
}

int runTree() {
  traceKernels(2);
  pid_t children[3];
  for (int i = 0; i < 3; ++i) {
    children[i] = fork();
    if (children[i] != 0) continue;
    if (i < 2) {
      setenv("RANK", std::to_string(i).c_str(), 1);
      setenv("LOCAL_RANK", std::to_string(i).c_str(), 1);
      setenv("WORLD_SIZE", "2", 1);
      traceKernels(3 + i, "_Z5childv");
    }
    _exit(0);
  }
  int failures = 0;
  for (pid_t child : children) {
    int status = 0;
    waitpid(child, &status, 0);
    failures += !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  return failures == 0 ? 0 : 1;
}

int runOrphan(int sleep_ms) {
  if (fork() == 0) {
    traceKernels(4, nullptr, false, false, sleep_ms);
    _exit(0);
  }
  usleep(100000);  // the child has registered: record knows of it
  traceKernels(1);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "";
  int arg = argc > 2 ? std::atoi(argv[2]) : 0;
  if (!std::strcmp(mode, "one")) return traceKernels(arg), 3;
  if (!std::strcmp(mode, "tree")) return runTree();
  if (!std::strcmp(mode, "orphan")) return runOrphan(arg);
  if (!std::strcmp(mode, "lie")) return traceKernels(2, nullptr, true), 0;
  if (!std::strcmp(mode, "killed")) return traceKernels(arg, nullptr, false, true), 0;
  std::fprintf(stderr, "fake_traced_app: unknown mode '%s'\n", mode);
  return 2;
}
