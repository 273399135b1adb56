#include "collector.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>

#include "buffer_pool.h"
#include "collector_env.h"
#include "cupti/activity_tracing.h"
#include "trace_schema.h"
#include "trace_writer.h"
#include "writer_thread.h"

#ifndef CUOVERLAP_VERSION_STRING
#define CUOVERLAP_VERSION_STRING "unknown"
#endif

namespace cuoverlap::collector {
namespace {

constexpr std::size_t kHostBufferBytes = 4u << 20;
constexpr std::size_t kPreallocatedBuffers = 8;
constexpr std::size_t kMaxBuffers = 256;  // 1 GiB: past this CUPTI drops (and counts) records

// Never destroyed: CUPTI threads may still call back while static destructors run at exit.
struct Session {
  CollectorOptions options;
  BufferPool* pool = nullptr;
  WriterThread* writer = nullptr;
  pid_t owner = 0;
  std::uint64_t setup_ns = 0;
};
Session* g_session = nullptr;
std::atomic<bool> g_finished{false};

std::string hostName() {
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0) return "localhost";
  return host;
}

std::string commandLineOfThisProcess() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (char& c : all) c = c == '\0' ? ' ' : c;
  while (!all.empty() && all.back() == ' ') all.pop_back();
  return all;
}

std::uint64_t monotonicNs() {
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                        std::chrono::steady_clock::now().time_since_epoch())
                                        .count());
}

void warnUntraced(const std::string& reason) {
  std::fprintf(stderr, "cuoverlap: warning: not tracing this process (%s); it runs untraced\n",
               reason.c_str());
}

void writeStartValues(WriterThread& writer, const CollectorOptions& options) {
  namespace key = schema::session_key;
  writer.setSessionValue(std::string(key::kSchema), std::string(schema::kTraceSchemaId));
  writer.setSessionValue(std::string(key::kCommand), options.command);
  writer.setSessionValue(std::string(key::kPid), std::to_string(getpid()));
  writer.setSessionValue(std::string(key::kHost), hostName());
  writer.setSessionValue(std::string(key::kStartNs), std::to_string(activity::timestampNs()));
  writer.setSessionValue(std::string(key::kCollectorVersion), CUOVERLAP_VERSION_STRING);
  writer.setSessionValue(std::string(key::kCuptiVersion), activity::cuptiVersion());
  writer.setSessionValue(std::string(key::kDriverVersion), activity::driverVersion());
}

bool startSession() {
  std::uint64_t begin = monotonicNs();
  CollectorOptions options = optionsFromEnvironment();
  std::string reason = activity::subscribe();
  if (!reason.empty()) return warnUntraced(reason), false;
  activity::configureBuffers();
  std::unique_ptr<TraceWriter> file;
  try {
    file = std::make_unique<TraceWriter>(options.output_path, static_cast<std::uint32_t>(getpid()));
  } catch (const std::exception& e) {
    activity::unsubscribe();
    return warnUntraced(e.what()), false;
  }
  file->setDeviceQuery(activity::queryDevice);
  file->setNvtxStartEndQuery(activity::isStartEndRange);
  auto* session = new Session{options, nullptr, nullptr, getpid(), 0};
  session->pool = new BufferPool(kHostBufferBytes, kPreallocatedBuffers, kMaxBuffers);
  session->writer = new WriterThread(std::move(file), *session->pool);
  writeStartValues(*session->writer, options);
  session->writer->setPeriodicFlush([] { activity::flush(false); });
  session->writer->start();
  reason = activity::enable(*session->pool, *session->writer);
  if (!reason.empty()) warnUntraced(reason);  // the file stays valid, with the session table
  if (!options.quiet) std::fprintf(stderr, "cuoverlap: tracing to %s\n", options.output_path.c_str());
  session->setup_ns = monotonicNs() - begin;
  g_session = session;
  return true;  // even if some kinds failed: the session must still be finished at exit
}

}  // namespace

CollectorOptions optionsFromEnvironment() {
  CollectorOptions options;
  const char* pattern = std::getenv(schema::kEnvOutput);
  std::string_view chosen = pattern != nullptr && *pattern != '\0'
                                ? std::string_view(pattern)
                                : schema::kDefaultOutputPattern;
  options.output_path = schema::expandOutputPattern(chosen, getpid(), hostName());
  const char* quiet = std::getenv(schema::kEnvQuiet);
  options.quiet = quiet != nullptr && std::string_view(quiet) == "1";
  const char* command = std::getenv(schema::kEnvCommand);
  options.command = command != nullptr ? command : commandLineOfThisProcess();
  return options;
}

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

void finishCollector(std::chrono::milliseconds timeout) {
  Session* session = g_session;
  if (session == nullptr || session->owner != getpid() || g_finished.exchange(true)) return;
  std::uint64_t begin = monotonicNs();
  activity::flush(false);
  activity::flush(true);
  namespace key = schema::session_key;
  WriterThread& writer = *session->writer;
  writer.setSessionValue(std::string(key::kEndNs), std::to_string(activity::timestampNs()));
  writer.setSessionValue(std::string(key::kDroppedRecords), std::to_string(activity::droppedRecords()));
  writer.setSessionValue(std::string(key::kFlushes), std::to_string(activity::completedBuffers()));
  std::uint64_t overhead = session->setup_ns + activity::callbackNs() + (monotonicNs() - begin);
  writer.setSessionValue(std::string(key::kOverheadNs), std::to_string(overhead));
  writer.setSessionValue(std::string(key::kComplete), "1");
  if (!writer.stop(timeout)) {
    std::fprintf(stderr, "cuoverlap: warning: trace writer did not finish in time; %s holds what "
                 "was committed\n", session->options.output_path.c_str());
  }
}

void detachCollectorInChild() {
  g_finished.store(true);
  activity::detachInForkedChild();
}

}  // namespace cuoverlap::collector
