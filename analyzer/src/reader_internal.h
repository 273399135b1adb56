// Shared by the reader's parts (reader*.cpp): the open database, the trace being filled, and the
// mapping from the file's string ids to the trace's interned strings.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "cuoverlap/model.h"
#include "cuoverlap/progress.h"
#include "cuoverlap/trace_index.h"
#include "sqlite_db.h"

namespace cuoverlap::reader {

// Interns each distinct string once into Trace::strings.
class StringInterner {
 public:
  explicit StringInterner(Trace& trace) : trace_(trace) {}
  StringId intern(std::string_view text);

 private:
  Trace& trace_;
  std::unordered_map<std::string, StringId> ids_;
};

// The file's StringIds table (nsys ids) resolved lazily to interned ids.
class StringTable {
 public:
  StringTable(const sqlite::Database& db, StringInterner& interner);
  StringId resolve(std::int64_t nsys_id);  // kNoString for unknown ids

 private:
  StringInterner& interner_;
  std::unordered_map<std::int64_t, std::string> values_;
  std::unordered_map<std::int64_t, StringId> resolved_;
};

// Readers report their progress (cuoverlap/progress.h) every kProgressRows + 1 rows.
constexpr std::size_t kProgressRows = 4095;

// Timestamps beyond ±2^62 ns (146 years) are corrupt; bounding them keeps the difference of any
// two (durations, gaps, spans) representable in Ns.
constexpr Ns kTimestampLimit = Ns{1} << 62;
inline Ns readTimestamp(const sqlite::Statement& row, int column, std::string_view table,
                        std::string_view name) {
  return row.checkedInt64Within(column, table, name, kTimestampLimit);
}

// Device ids are 16 bits in the model (CUDA numbers devices from 0; 65536 GPUs in one trace is
// corruption). One rule for every table: NULL is device 0, anything outside 0..65535 is a
// UserError. (Clamping or wrapping would merge two devices' activity or names silently.)
inline std::uint16_t readDeviceId(const sqlite::Statement& row, int column, std::string_view table,
                                  std::string_view name = "deviceId") {
  std::int64_t value = row.checkedInt64(column, table, name);
  if (value < 0 || value > 0xFFFF) row.failOutOfRange(table, name, value, "0 to 65535");
  return static_cast<std::uint16_t>(value);
}

// From this many rows on, a table is read on a thread of its own (its own connection): below it,
// reading takes a few ms, and a connection (which parses the schema) and a thread cost more.
inline constexpr std::size_t kParallelRows = 16384;

struct Context {
  const sqlite::Database& db;
  Trace& trace;
  StringInterner& interner;
  StringTable& strings;
};

// "SELECT a, b, NULL, ... FROM table": columns the table lacks read as NULL. Columns in
// `required` must exist (else UserError); `columns` must have an integer type and
// `text_columns` (selected after them) a text type.
std::string selectColumns(const sqlite::Database& db, std::string_view table,
                          std::initializer_list<const char*> columns,
                          std::initializer_list<const char*> required,
                          std::initializer_list<const char*> text_columns = {});

// Kernels, memcpys and memsets into Trace::ops, merged by start when each table is in time order;
// the memcpy table's unified-memory migrations (copyKind 11, 12, 13) into
// Trace::unified_memory.migrations, sorted by start.
// What readOps saw of the ops while merging them, so that readTrace makes no pass of its own for
// it: whether they came in time order (sortOps' order), the (context, pid, device) of their
// runs, sorted and unique, and the ops of each device (opsOnDevice's index, installed once the
// ops are known sorted: nothing moves them then).
struct OpsSeen {
  bool sorted = true;
  std::vector<std::tuple<std::uint32_t, std::uint32_t, std::uint16_t>> contexts;
  OpsByDevice by_device;
};
OpsSeen readOps(Context& ctx);
void readRuntimeCalls(Context& ctx);
void readSyncs(Context& ctx);
// CUPTI_ACTIVITY_KIND_CUDA_EVENT rows into Trace::event_records, sorted by correlation id.
void readEventRecords(Context& ctx);
void readNvtx(Context& ctx);
// Page faults and thrashing into Trace::unified_memory, each sorted by time (migrations: readOps).
void readUnifiedMemory(Context& ctx);
// GPU_METRICS into Trace::gpu_metrics (after readSession: the session names the interval).
void readGpuMetrics(Context& ctx);
// CUOVERLAP_OP_BUFFERS into Trace::op_buffers, sorted by (pid, correlation id).
void readOpBuffers(Context& ctx);
// CUDA_GPU_MEMORY_USAGE_EVENTS into Trace::memory_events, sorted by time (nothing, with a
// warning, where a row is not valid).
void readMemoryEvents(Context& ctx);
// Sorts Trace::unified_memory.migrations by start (stable).
void sortMigrations(Context& ctx);
void readDevices(Context& ctx);
void readStreamsAndContexts(Context& ctx);
// CUOVERLAP_STREAM_ORIGIN into Stream::origin; after the streams, contexts and runtime calls.
void readStreamOrigins(Context& ctx);
void readSession(Context& ctx);
// Names of the processes with activity (nsys PROCESSES) into Trace::processes; after the activity.
void readProcessNames(Context& ctx);

// Sets op_flag::kAsync/kAsyncKnown on copies and memsets whose table had no `async` column, from
// the name of the runtime call with the same correlation id.
void resolveAsyncFromRuntime(Trace& trace);

}  // namespace cuoverlap::reader
