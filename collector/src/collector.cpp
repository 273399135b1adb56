#include "collector.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <thread>

#include "buffer_pool.h"
#include "capture_control.h"
#include "collector_env.h"
#include "cupti/activity_tracing.h"
#include "cupti/gpu_metrics.h"
#include "exit_summary.h"
#include "run_registry.h"
#include "summarizer_process.h"
#include "trace_output.h"
#include "trace_schema.h"
#include "trace_writer.h"
#include "writer_thread.h"

namespace cuoverlap::collector {
namespace {

constexpr std::size_t kPreallocatedBuffers = 8;  // of the largest size
constexpr std::size_t kSmallestBufferBytes = 64u << 10;  // a thread's first buffer (buffer_pool.h)
constexpr std::size_t kMaxPoolBytes = 1u << 30;  // past this CUPTI drops (and counts) records

// Never destroyed: CUPTI threads may still call back while static destructors run at exit.
struct Session {
  CollectorOptions options;
  BufferPool* pool = nullptr;
  WriterThread* writer = nullptr;
  RunRegistration registration;
  std::uint64_t setup_ns = 0;
  CaptureWindow* window = nullptr;  // with --capture/--delay/--duration
  ExitSummary exit_summary;         // CUOVERLAP_SUMMARY: the summary made at exit
};
Session* g_session = nullptr;
std::atomic<pid_t> g_owner{0};
enum FinishState : int { kNotFinished, kFinishing, kFinished };
std::atomic<int> g_finish_state{kNotFinished};
// Read by the writer thread's NVTX filter (set once the window exists).
std::atomic<const CaptureWindow*> g_capture_window{nullptr};

std::uint64_t monotonicNs() {
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                        std::chrono::steady_clock::now().time_since_epoch())
                                        .count());
}

// Also leaves a mark in `record`'s run directory: record, finding no trace, then points at this
// warning instead of saying the program made no CUDA call.
void warnUntraced(const std::string& reason) {
  std::fprintf(stderr, "cuoverlap: warning: not tracing this process (%s); it runs untraced\n",
               printableForLog(reason).c_str());
  const char* run_dir = std::getenv(schema::kEnvRunDir);
  if (run_dir == nullptr || *run_dir == '\0') return;
  const std::string mark = std::string(run_dir) + "/" + schema::kCollectorWarnedFile;
  const int fd = ::open(mark.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd >= 0) ::close(fd);
}

// The window's outcome into the session table. A window that never opened keeps the file, which
// then says so (instead of leaving no file, or an empty one).
void writeCaptureSummary(const CaptureWindow& window, WriterThread& writer) {
  namespace key = schema::session_key;
  const WindowSummary summary = window.summary(activity::timestampNs());
  writer.setSessionValue(std::string(key::kCaptureOpened), summary.opened ? "1" : "0");
  writer.setSessionValue(std::string(key::kCaptureWindows), std::to_string(summary.windows));
  if (window.spec().kind == schema::CaptureKind::kNvtx) {
    writer.setSessionValue(std::string(key::kCaptureInstances), std::to_string(summary.instances));
  }
  if (summary.opened) {
    writer.setSessionValue(std::string(key::kCaptureOpenNs), std::to_string(summary.first_open_ns));
    writer.setSessionValue(std::string(key::kCaptureCloseNs), std::to_string(summary.last_close_ns));
  } else {
    writer.keepEmptyFile();
  }
}

bool startSession() {
  std::uint64_t begin = monotonicNs();
  auto session = std::make_unique<Session>();
  session->options = optionsFromEnvironment();
  const CollectorOptions& options = session->options;
  std::string reason = activity::subscribe();
  if (!reason.empty()) return warnUntraced(reason), false;
  activity::configureBuffers(options);
  std::unique_ptr<TraceWriter> file = openTraceOutput(session->options, session->registration, reason);
  if (file == nullptr) return activity::unsubscribe(), warnUntraced(reason), false;
  session->exit_summary = planExitSummary(session->options, thisLibraryPath());
  file->setDeviceQuery(activity::queryDevice);
  file->setNvtxStartEndQuery(activity::isStartEndRange);
  if (options.capture.active()) {
    auto in_window = [](std::uint64_t start, std::uint64_t end) {
      const CaptureWindow* window = g_capture_window.load();
      return window != nullptr && window->overlapsWindow(start, end);
    };
    file->setNvtxFilter(in_window);
    file->setApiFilter(in_window);
    // Lean calls are on from the start (activity::enable); with every API kind the calls wait for
    // the window, so a stream created before it has no creating call to point to.
    file->setStreamOrigins(options.api == ApiTracing::kLean);
  }
  session->pool = new BufferPool(kSmallestBufferBytes, options.host_buffer_bytes, kPreallocatedBuffers,
                                 std::max(kMaxPoolBytes, kPreallocatedBuffers * options.host_buffer_bytes));
  session->writer = new WriterThread(std::move(file), *session->pool, options.commit_interval);
  for (const auto& [key, value] : sessionStartValues(options, activity::timestampNs(),
                                                     activity::cuptiVersion(), activity::driverVersion())) {
    session->writer->setSessionValue(key, value);
  }
  session->writer->setPeriodicFlush([] { activity::flush(false); });
  if (options.capture.active()) {
    session->writer->setSessionValue(std::string(schema::session_key::kCapture),
                                     schema::describeCapture(options.capture));
  }
  session->writer->start();
  std::size_t lean_calls = 0;
  reason = activity::enable(*session->pool, *session->writer, options, lean_calls);
  // After every callback is enabled: the sampling thread initializes CUPTI's profiler as it starts,
  // and that raced the driver callbacks being enabled (op buffers: 2 of 14 runs of gpu_metrics_app
  // at 100 µs crashed inside libcuda under cuptiProfilerInitialize on an H200; 0 of 20 after).
  gpu_metrics::start(*session->writer, options.gpu_metrics_interval_ns);
  if (!reason.empty()) warnUntraced(reason);  // the file stays valid, with the session table
  if (reason.empty() && options.capture.active()) {
    session->window = &startCaptureWindow(options.capture, options.run_dir, activity::timestampNs());
    g_capture_window.store(session->window);
  }
  session->writer->setSessionValue(std::string(schema::session_key::kLeanApiCalls),
                                   std::to_string(lean_calls));
  if (!options.quiet) {
    std::fprintf(stderr, "cuoverlap: tracing to %s\n", printableForLog(options.output_path).c_str());
  }
  session->setup_ns = monotonicNs() - begin;
  g_session = session.release();
  g_owner.store(getpid());
  return true;  // even if some kinds failed: the session must still be finished at exit
}

// True when the file was written to the end and closed (and kept): the only trace summarized.
bool finishSession(Session& session, std::chrono::milliseconds timeout, const std::string& ended_by,
                   const std::string& fault_at) {
  std::uint64_t begin = monotonicNs();
  WriterThread& writer = *session.writer;
  gpu_metrics::finish(writer, std::min(timeout, std::chrono::milliseconds(10000)));
  activity::flush(false);
  activity::flush(true);
  activity::flushOpBuffers();
  namespace key = schema::session_key;
  writer.setSessionValue(std::string(key::kEndNs), std::to_string(activity::timestampNs()));
  writer.setSessionValue(std::string(key::kEndedBy), ended_by);
  if (!fault_at.empty()) writer.setSessionValue(std::string(key::kFaultAt), fault_at);
  writer.setSessionValue(std::string(key::kDroppedRecords), std::to_string(activity::droppedRecords()));
  writer.setSessionValue(std::string(key::kFlushes), std::to_string(activity::completedBuffers()));
  std::uint64_t overhead = session.setup_ns + activity::callbackNs() + (monotonicNs() - begin);
  writer.setSessionValue(std::string(key::kOverheadNs), std::to_string(overhead));
  if (session.window != nullptr) writeCaptureSummary(*session.window, writer);
  writer.setSessionValue(std::string(key::kComplete), "1");
  if (!writer.stop(timeout)) {
    std::fprintf(stderr, "cuoverlap: warning: trace writer did not finish in time; %s holds what "
                 "was committed\n", printableForLog(session.options.output_path).c_str());
    return false;  // the lock stays until the process ends: record waits for the writer to finish
  }
  session.registration.release();
  return writer.closedCompleteFile();
}

}  // namespace

bool startCollectorOnce() {
  static std::once_flag once;
  static bool tracing = false;
  std::call_once(once, [] {
    try {
      tracing = startSession();
    } catch (...) {
      warnUntraced("internal error while starting");
    }
  });
  return tracing;
}

bool tracingInThisProcess() {
  return g_owner.load() == getpid() && g_finish_state.load() != kFinished;
}

bool collectorFinished() { return g_finish_state.load() == kFinished; }

void finishCollector(std::chrono::milliseconds timeout, const std::string& ended_by, bool exiting,
                     const std::string& fault_at) {
  Session* session = g_session;
  if (session == nullptr || g_owner.load() != getpid()) return;
  int expected = kNotFinished;
  if (!g_finish_state.compare_exchange_strong(expected, kFinishing)) {
    // Another thread is finishing (a signal's flush while main returns): returning now would let
    // the process exit under it.
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (g_finish_state.load() != kFinished && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return;
  }
  bool complete = false;
  try {
    complete = finishSession(*session, timeout, ended_by, fault_at);
  } catch (...) {
    std::fprintf(stderr, "cuoverlap: warning: internal error while finishing the trace\n");
  }
  g_finish_state.store(kFinished);
  // After kFinished: a signal during the wait is handled as after any finish (the program's own
  // handler, else the default action at once), not queued behind the summarizer.
  if (complete && exiting) writeExitSummary(session->exit_summary);
}

void detachCollectorInChild() {
  g_finish_state.store(kFinished);
  if (g_session != nullptr) g_session->registration.closeInForkedChild();
  activity::detachInForkedChild();
  gpu_metrics::detachInForkedChild();
}

}  // namespace cuoverlap::collector
