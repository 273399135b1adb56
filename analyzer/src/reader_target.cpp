// Reads what the trace says about its targets: devices (TARGET_INFO_GPU, and the 2020-era
// TARGET_INFO_CUDA_GPU), streams, contexts with their null stream, and our session table.
#include <fmt/core.h>

#include <algorithm>
#include <limits>
#include <optional>
#include <map>
#include <unordered_map>
#include <tuple>

#include "collector_env.h"
#include "cuoverlap/error.h"
#include "reader_internal.h"

namespace cuoverlap::reader {

namespace {

std::int32_t int32Or(const sqlite::Statement& row, int column, std::int32_t fallback) {
  return row.isNull(column) ? fallback : static_cast<std::int32_t>(row.int64(column));
}

// warps per SM x threads per warp, in 64 bits and clamped: a corrupt table must not overflow.
std::int32_t threadsPerSm(const sqlite::Statement& row, int warps_column, int threads_column) {
  std::int64_t product =
      std::int64_t{int32Or(row, warps_column, 0)} * int32Or(row, threads_column, 0);
  return static_cast<std::int32_t>(
      std::clamp<std::int64_t>(product, 0, std::numeric_limits<std::int32_t>::max()));
}

// Trace::devices by id, so that each row finds its device in O(1) (a file may list 10^5 GPUs).
class DeviceIndex {
 public:
  explicit DeviceIndex(Trace& trace) : trace_(trace) {
    for (std::size_t i = 0; i < trace.devices.size(); ++i) slots_.emplace(trace.devices[i].device_id, i);
  }
  Device& withId(std::uint16_t id) {
    auto [it, inserted] = slots_.try_emplace(id, trace_.devices.size());
    if (inserted) {
      trace_.devices.push_back(Device{});
      trace_.devices.back().device_id = id;
    }
    return trace_.devices[it->second];
  }

 private:
  Trace& trace_;
  std::unordered_map<std::uint16_t, std::size_t> slots_;
};

// Some tables hold a plain process id, others nsys's globalPid encoding; accept both.
std::uint32_t plainPid(std::int64_t value) {
  auto v = static_cast<std::uint64_t>(value);
  return v > 0xFFFFFFu ? schema::pidOf(v) : static_cast<std::uint32_t>(v);
}

void readGpuTable(Context& ctx) {
  std::string_view table = schema::kGpuTable;
  if (!ctx.db.hasTable(table)) return;
  // Newer exports name the device `id`; the 2020-era ones `deviceId`.
  sqlite::Statement row(ctx.db, selectColumns(ctx.db, table,
      {"id", "deviceId", "smCount", "computeMajor", "computeMinor", "totalMemory", "asyncEngines",
       "concurrentKernels", "maxWarpsPerSm", "threadsPerWarp", "maxBlocksPerSm",
       "maxRegistersPerSm", "maxShmemPerSm", "pcieLinkGen", "pcieLinkWidth", "l2CacheSize"},
      {}, {"name"}));
  DeviceIndex devices(ctx.trace);
  while (row.step()) {
    const bool has_id = !row.isNull(0);
    Device& device = devices.withId(readDeviceId(row, has_id ? 0 : 1, table,
                                                          has_id ? "id" : "deviceId"));
    device.name = std::string(row.text(16));
    device.sm_count = int32Or(row, 2, 0);
    device.compute_major = int32Or(row, 3, 0);
    device.compute_minor = int32Or(row, 4, 0);
    device.total_memory = static_cast<std::uint64_t>(row.int64(5));
    device.async_engines = int32Or(row, 6, 0);
    device.concurrent_kernels = int32Or(row, 7, -1);
    device.max_threads_per_sm = threadsPerSm(row, 8, 9);
    device.max_blocks_per_sm = int32Or(row, 10, 0);
    device.max_registers_per_sm = int32Or(row, 11, 0);
    device.max_shared_mem_per_sm = row.int64(12);
    device.pcie_generation = std::clamp(int32Or(row, 13, 0), 0, 6);
    device.pcie_width = std::clamp(int32Or(row, 14, 0), 0, 32);
    device.l2_bytes = static_cast<std::uint64_t>(std::max<std::int64_t>(0, row.int64(15)));
  }
}

// The 2020-era table: fills what TARGET_INFO_GPU did not say.
void readCudaGpuTable(Context& ctx) {
  std::string_view table = "TARGET_INFO_CUDA_GPU";
  if (!ctx.db.hasTable(table)) return;
  sqlite::Statement row(ctx.db, selectColumns(ctx.db, table,
      {"deviceId", "numMultiprocessors", "computeCapabilityMajor", "computeCapabilityMinor",
       "globalMemorySize", "numMemcpyEngines", "maxWarpsPerMultiprocessor", "numThreadsPerWarp",
       "maxBlocksPerMultiprocessor", "maxRegistersPerMultiprocessor",
       "maxSharedMemoryPerMultiprocessor"},
      {"deviceId"}, {"name"}));
  DeviceIndex devices(ctx.trace);
  while (row.step()) {
    Device& d = devices.withId(readDeviceId(row, 0, table));
    if (d.name.empty()) d.name = std::string(row.text(11));
    if (d.sm_count == 0) d.sm_count = int32Or(row, 1, 0);
    if (d.compute_major == 0) d.compute_major = int32Or(row, 2, 0);
    if (d.compute_minor == 0) d.compute_minor = int32Or(row, 3, 0);
    if (d.total_memory == 0) d.total_memory = static_cast<std::uint64_t>(row.int64(4));
    if (d.async_engines == 0) d.async_engines = int32Or(row, 5, 0);
    if (d.max_threads_per_sm == 0) d.max_threads_per_sm = threadsPerSm(row, 6, 7);
    if (d.max_blocks_per_sm == 0) d.max_blocks_per_sm = int32Or(row, 8, 0);
    if (d.max_registers_per_sm == 0) d.max_registers_per_sm = int32Or(row, 9, 0);
    if (d.max_shared_mem_per_sm == 0) d.max_shared_mem_per_sm = row.int64(10);
  }
}

// Trace::contexts by (context, process): one entry per pair, found in O(log n).
using ContextIndex = std::map<std::pair<std::uint32_t, std::uint32_t>, std::size_t>;

void addContext(Trace& trace, ContextIndex& index, const cuoverlap::Context& context) {
  auto [it, inserted] = index.try_emplace({context.context_id, context.pid}, trace.contexts.size());
  if (inserted) {
    trace.contexts.push_back(context);
    return;
  }
  cuoverlap::Context& known = trace.contexts[it->second];
  if (!known.null_stream_id) known.null_stream_id = context.null_stream_id;
}

// Both tables carry (null stream, process, device, context); only the null stream's name differs.
void readNullStreams(Context& ctx, std::string_view table, const char* stream_column) {
  if (!ctx.db.hasTable(table)) return;
  ContextIndex index;
  for (std::size_t i = 0; i < ctx.trace.contexts.size(); ++i) {
    const cuoverlap::Context& c = ctx.trace.contexts[i];
    index.try_emplace({c.context_id, c.pid}, i);
  }
  sqlite::Statement row(ctx.db, selectColumns(ctx.db, table,
      {stream_column, "processId", "deviceId", "contextId"}, {stream_column, "contextId"}));
  while (row.step()) {
    cuoverlap::Context context;
    context.null_stream_id = static_cast<std::uint32_t>(row.int64(0));
    context.pid = plainPid(row.int64(1));
    context.device_id = readDeviceId(row, 2, table);
    context.context_id = static_cast<std::uint32_t>(row.int64(3));
    addContext(ctx.trace, index, context);
  }
}

}  // namespace

void readDevices(Context& ctx) {
  readGpuTable(ctx);
  readCudaGpuTable(ctx);
  std::sort(ctx.trace.devices.begin(), ctx.trace.devices.end(),
            [](const Device& a, const Device& b) { return a.device_id < b.device_id; });
}

void readStreamsAndContexts(Context& ctx) {
  readNullStreams(ctx, schema::kContextInfoTable, "nullStreamId");
  readNullStreams(ctx, schema::kNullStreamTable, "streamId");
  std::string_view table = schema::kStreamTable;
  if (!ctx.db.hasTable(table)) return;
  sqlite::Statement row(ctx.db, selectColumns(ctx.db, table,
      {"streamId", "processId", "contextId", "priority", "flag"}, {"streamId"}));
  while (row.step()) {
    Stream stream;
    stream.stream_id = static_cast<std::uint32_t>(row.int64(0));
    stream.pid = plainPid(row.int64(1));
    stream.context_id = static_cast<std::uint32_t>(row.int64(2));
    stream.priority = static_cast<std::int32_t>(row.int64(3));  // nsys stores e.g. -5 as 2^32-5
    std::int64_t flag = row.int64(4);
    stream.flag = flag >= 0 && flag <= 3 ? static_cast<StreamFlag>(flag) : StreamFlag::kUnknown;
    ctx.trace.streams.push_back(stream);
  }
  std::sort(ctx.trace.streams.begin(), ctx.trace.streams.end(), [](const Stream& a, const Stream& b) {
    return std::tie(a.pid, a.context_id, a.stream_id) < std::tie(b.pid, b.context_id, b.stream_id);
  });
}

// A stream's origin from its STREAM record's correlation id (CUOVERLAP_STREAM_ORIGIN, our
// collector; docs/collector.md, "Per-thread default streams"): created when that is a
// stream-creating call's (the collector's `creator`, or such a call of the trace with that
// correlation id); the context's own when the stream is its NULL stream or shares the NULL
// stream record's correlation id (the driver's internal streams come with the context); else a
// per-thread default stream, which CUDA creates inside the first call that uses it. A stream
// without a row keeps kUnknown, as every stream of a trace without the table (nsys exports,
// older traces). Launch calls named `_ptsz`/`_ptds` do not mark a stream: every runtime call of a
// file built with --default-stream per-thread is so named, those on created streams too.
void readStreamOrigins(Context& ctx) {
  std::string_view table = schema::kStreamOriginTable;
  if (!ctx.db.hasTable(table) || ctx.trace.streams.empty()) return;
  struct Row {
    std::uint32_t pid = 0, context_id = 0, stream_id = 0;
    std::optional<std::uint32_t> correlation_id;
    bool created = false;
  };
  std::vector<Row> rows;
  sqlite::Statement row(ctx.db, selectColumns(ctx.db, table,
      {"processId", "contextId", "streamId", "correlationId"}, {"contextId", "streamId"}, {"creator"}));
  while (row.step()) {
    Row r;
    r.pid = plainPid(row.int64(0));
    r.context_id = static_cast<std::uint32_t>(row.int64(1));
    r.stream_id = static_cast<std::uint32_t>(row.int64(2));
    if (!row.isNull(3)) r.correlation_id = static_cast<std::uint32_t>(row.int64(3));
    r.created = !row.isNull(4) && schema::isStreamCreatingCall(row.text(4));
    rows.push_back(r);
  }
  if (rows.empty()) return;
  // Stream-creating calls of the trace by (pid, correlation id): for rows whose creator the
  // collector could not name.
  std::vector<std::pair<std::uint32_t, std::uint32_t>> creating_calls;
  std::vector<int> creating_name(ctx.trace.strings.size(), -1);
  for (const RuntimeCall& call : ctx.trace.runtime_calls) {
    if (call.name >= creating_name.size()) continue;
    int& creates = creating_name[call.name];
    if (creates < 0) creates = schema::isStreamCreatingCall(ctx.trace.str(call.name)) ? 1 : 0;
    if (creates == 1) creating_calls.emplace_back(call.pid, call.correlation_id);
  }
  std::sort(creating_calls.begin(), creating_calls.end());
  // Each context's NULL stream and its record's correlation id.
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::uint32_t> null_streams;  // (pid, ctx) -> id
  for (const cuoverlap::Context& c : ctx.trace.contexts) {
    if (c.null_stream_id) null_streams[{c.pid, c.context_id}] = *c.null_stream_id;
  }
  for (const Stream& s : ctx.trace.streams) {
    if (s.flag == StreamFlag::kNull) null_streams[{s.pid, s.context_id}] = s.stream_id;
  }
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::uint32_t> null_correlation;
  for (const Row& r : rows) {
    auto null_stream = null_streams.find({r.pid, r.context_id});
    if (null_stream != null_streams.end() && null_stream->second == r.stream_id && r.correlation_id) {
      null_correlation[{r.pid, r.context_id}] = *r.correlation_id;
    }
  }
  // A creating call makes one stream, the first of its correlation id (the lowest id: CUPTI
  // numbers a context's streams as they come). Another record of that id is a per-thread stream
  // made inside a later call that CUPTI attributed to it (docs/collector.md: "or the call before
  // it"), unless the call also made the context: then its own streams share the id as well.
  auto created = [&](const Row& r) {
    return r.created || (r.correlation_id &&
                         std::binary_search(creating_calls.begin(), creating_calls.end(),
                                            std::make_pair(r.pid, *r.correlation_id)));
  };
  std::map<std::tuple<std::uint32_t, std::uint32_t, std::uint32_t>, std::uint32_t> first_of_call;
  for (const Row& r : rows) {
    if (!r.correlation_id || !created(r)) continue;
    auto [it, inserted] = first_of_call.try_emplace({r.pid, r.context_id, *r.correlation_id}, r.stream_id);
    if (!inserted) it->second = std::min(it->second, r.stream_id);
  }
  for (const Row& r : rows) {
    auto stream = std::lower_bound(ctx.trace.streams.begin(), ctx.trace.streams.end(), r,
        [](const Stream& a, const Row& b) {
          return std::tie(a.pid, a.context_id, a.stream_id) < std::tie(b.pid, b.context_id, b.stream_id);
        });
    if (stream == ctx.trace.streams.end() || stream->pid != r.pid || stream->context_id != r.context_id ||
        stream->stream_id != r.stream_id) {
      continue;
    }
    auto null_stream = null_streams.find({r.pid, r.context_id});
    auto context_call = null_correlation.find({r.pid, r.context_id});
    const bool with_context = r.correlation_id && context_call != null_correlation.end() &&
                              context_call->second == *r.correlation_id;
    if (stream->flag == StreamFlag::kNull ||
        (null_stream != null_streams.end() && null_stream->second == r.stream_id)) {
      stream->origin = StreamOrigin::kContext;
    } else if (created(r)) {
      auto call = r.correlation_id ? first_of_call.find({r.pid, r.context_id, *r.correlation_id})
                                   : first_of_call.end();
      const bool first = with_context || call == first_of_call.end() || call->second == r.stream_id;
      stream->origin = first || stream->flag != StreamFlag::kDefault ? StreamOrigin::kCreated
                                                                    : StreamOrigin::kPerThread;
    } else if (!r.correlation_id || with_context) {
      stream->origin = StreamOrigin::kContext;
    } else {
      stream->origin = StreamOrigin::kPerThread;
    }
  }
}

namespace {

std::optional<std::int32_t> rankValue(std::string_view text) {
  std::optional<int> value = schema::parseRankValue(std::string(text).c_str());
  if (!value) return std::nullopt;
  return static_cast<std::int32_t>(*value);
}

// One process's facts from its session rows (key, value).
template <typename Rows>
ProcessInfo processFromSession(std::uint32_t pid, const Rows& rows) {
  namespace k = schema::session_key;
  ProcessInfo process;
  process.pid = pid;
  for (const auto& [key, value] : rows) {
    if (key == k::kCommand) process.command = value;
    else if (key == k::kHost) process.host = value;
    else if (key == k::kRank) process.rank = rankValue(value);
    else if (key == k::kLocalRank) process.local_rank = rankValue(value);
    else if (key == k::kWorldSize) process.world_size = rankValue(value);
  }
  return process;
}

// A merged file (record, several processes) has CUOVERLAP_PROCESS_SESSION; a single-process file
// (the collector alone, or any file written before issue 10) describes its one process in
// CUOVERLAP_SESSION itself.
void readProcesses(Context& ctx) {
  std::vector<ProcessInfo>& processes = ctx.trace.processes;
  if (ctx.db.hasTable(schema::kProcessSessionTable)) {
    sqlite::TableColumns columns(ctx.db, schema::kProcessSessionTable);  // refuses generated columns
    sqlite::Statement row(ctx.db, "SELECT pid, key, value FROM CUOVERLAP_PROCESS_SESSION ORDER BY pid, key");
    std::vector<std::pair<std::string, std::string>> rows;
    std::int64_t current = -1;
    auto flush = [&] {
      if (current >= 0) processes.push_back(processFromSession(static_cast<std::uint32_t>(current), rows));
      rows.clear();
    };
    while (row.step()) {
      if (row.int64(0) != current) flush(), current = row.int64(0);
      rows.emplace_back(row.text(1), row.text(2));
    }
    flush();
  } else {
    for (const auto& [key, value] : ctx.trace.session) {
      if (key != schema::session_key::kPid) continue;
      std::optional<std::int32_t> pid = rankValue(value);
      if (pid) processes.push_back(processFromSession(static_cast<std::uint32_t>(*pid), ctx.trace.session));
    }
  }
  std::sort(processes.begin(), processes.end(),
            [](const ProcessInfo& a, const ProcessInfo& b) { return a.pid < b.pid; });
}

}  // namespace

void readSession(Context& ctx) {
  std::string_view table = schema::kSessionTable;
  if (!ctx.db.hasTable(table)) return;
  sqlite::TableColumns columns(ctx.db, table);
  if (!columns.has("key") || !columns.has("value")) {
    throw UserError(fmt::format("{}: table {} lacks key/value columns", ctx.db.path(), table));
  }
  sqlite::Statement row(ctx.db, "SELECT key, value FROM CUOVERLAP_SESSION ORDER BY key");
  while (row.step()) ctx.trace.session.emplace_back(row.text(0), row.text(1));
  readProcesses(ctx);
}

}  // namespace cuoverlap::reader
