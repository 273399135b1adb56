// Reads host-side activity: runtime/driver API calls, synchronizations and NVTX ranges; and
// classifies copies as async or sync from the API that issued them.
#include <fmt/core.h>

#include <algorithm>
#include <unordered_map>

#include "reader_internal.h"

namespace cuoverlap::reader {

namespace {

template <typename T>
void reserveRows(const sqlite::Database& db, std::string_view table, std::vector<T>& vec) {
  vec.reserve(vec.size() + static_cast<std::size_t>(sqlite::rowsAtMost(db, table)));
}

bool startsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

// 1 = async, 0 = sync, -1 = not a copy/memset API.
int asyncKindOfApi(std::string_view name) {
  bool copy_api = startsWith(name, "cudaMemcpy") || startsWith(name, "cudaMemset") ||
                  startsWith(name, "cuMemcpy") || startsWith(name, "cuMemset");
  if (!copy_api) return -1;
  return name.find("Async") != std::string_view::npos ? 1 : 0;
}

}  // namespace

void readRuntimeCalls(Context& ctx) {
  std::string_view table = schema::kRuntimeTable;
  if (!ctx.db.hasTable(table)) return;
  sqlite::Statement row(ctx.db, selectColumns(ctx.db, table,
      {"start", "end", "eventClass", "globalTid", "correlationId", "nameId", "returnValue"},
      {"start", "end"}));
  reserveRows(ctx.db, table, ctx.trace.runtime_calls);
  progress::phase(fmt::format("reading {}: CUDA API calls", ctx.db.path()), ctx.trace.runtime_calls.capacity());
  while (row.step()) {
    if ((ctx.trace.runtime_calls.size() & kProgressRows) == 0) progress::done(ctx.trace.runtime_calls.size());
    RuntimeCall call;
    call.start = readTimestamp(row, 0, table, "start");
    call.end = readTimestamp(row, 1, table, "end");
    call.is_driver = row.int64(2) == static_cast<std::int64_t>(schema::EventClass::kCudaDriver);
    auto global_tid = static_cast<std::uint64_t>(row.int64(3));
    call.pid = schema::pidOf(global_tid);
    call.tid = schema::tidOf(global_tid);
    call.correlation_id = static_cast<std::uint32_t>(row.int64(4));
    call.name = row.isNull(5) ? kNoString : ctx.strings.resolve(row.int64(5));
    call.return_value = static_cast<std::int32_t>(row.int64(6));
    ctx.trace.runtime_calls.push_back(call);
  }
}

void readSyncs(Context& ctx) {
  std::string_view table = schema::kSyncTable;
  if (!ctx.db.hasTable(table)) return;
  sqlite::Statement row(ctx.db, selectColumns(ctx.db, table,
      {"start", "end", "deviceId", "contextId", "streamId", "correlationId", "globalPid",
       "syncType", "eventId"},
      {"start", "end"}));
  reserveRows(ctx.db, table, ctx.trace.syncs);
  progress::phase(fmt::format("reading {}: synchronizations", ctx.db.path()), ctx.trace.syncs.capacity());
  while (row.step()) {
    if ((ctx.trace.syncs.size() & kProgressRows) == 0) progress::done(ctx.trace.syncs.size());
    SyncEvent sync;
    sync.start = readTimestamp(row, 0, table, "start");
    sync.end = readTimestamp(row, 1, table, "end");
    sync.device_id = readDeviceId(row, 2, table);
    sync.context_id = static_cast<std::uint32_t>(row.int64(3));
    sync.stream_id = static_cast<std::uint32_t>(row.int64(4));
    sync.correlation_id = static_cast<std::uint32_t>(row.int64(5));
    sync.pid = schema::pidOf(static_cast<std::uint64_t>(row.int64(6)));
    std::int64_t type = row.int64(7);
    sync.type = type >= 0 && type <= 4 ? static_cast<SyncType>(type) : SyncType::kUnknown;
    sync.event_id = static_cast<std::uint64_t>(row.int64(8));
    ctx.trace.syncs.push_back(sync);
  }
}

void readEventRecords(Context& ctx) {
  std::string_view table = schema::kCudaEventTable;
  if (!ctx.db.hasTable(table)) return;
  sqlite::Statement row(ctx.db, selectColumns(ctx.db, table,
      {"deviceId", "contextId", "streamId", "correlationId", "globalPid", "eventId"},
      {"streamId", "correlationId", "eventId"}));
  auto& records = ctx.trace.event_records;
  reserveRows(ctx.db, table, records);
  progress::phase(fmt::format("reading {}: CUDA event records", ctx.db.path()), records.capacity());
  while (row.step()) {
    if ((records.size() & kProgressRows) == 0) progress::done(records.size());
    CudaEventRecord record;
    record.device_id = readDeviceId(row, 0, table);
    record.context_id = static_cast<std::uint32_t>(row.int64(1));
    record.stream_id = static_cast<std::uint32_t>(row.int64(2));
    record.correlation_id = static_cast<std::uint32_t>(row.int64(3));
    record.pid = schema::pidOf(static_cast<std::uint64_t>(row.int64(4)));
    record.event_id = static_cast<std::uint64_t>(row.int64(5));
    records.push_back(record);
  }
  std::stable_sort(records.begin(), records.end(), [](const auto& a, const auto& b) {
    return a.correlation_id < b.correlation_id;
  });
}

namespace {

// NVTX text lives in StringIds (textId) in newer exports and inline (`text`) in older ones.
std::string nvtxSelect(const sqlite::Database& db, const char* where) {
  std::string sql = selectColumns(db, schema::kNvtxTable,
      {"start", "end", "eventType", "globalTid", "textId", "domainId"}, {"start", "eventType"},
      {"text"});
  return sql + " WHERE " + where;
}

StringId nvtxText(Context& ctx, const sqlite::Statement& row) {
  if (!row.isNull(4)) return ctx.strings.resolve(row.int64(4));
  return ctx.interner.intern(row.text(6));
}

// Domain names come from their creation events (eventType 75), keyed by domainId.
std::unordered_map<std::int64_t, StringId> readNvtxDomains(Context& ctx) {
  std::unordered_map<std::int64_t, StringId> domains;
  sqlite::Statement row(ctx.db, nvtxSelect(ctx.db, fmt::format("eventType = {}",
      static_cast<int>(schema::NvtxEventType::kDomainCreate)).c_str()));
  while (row.step()) {
    if (!row.isNull(5)) domains[row.int64(5)] = nvtxText(ctx, row);
  }
  return domains;
}

}  // namespace

void readNvtx(Context& ctx) {
  std::string_view table = schema::kNvtxTable;
  if (!ctx.db.hasTable(table)) return;
  std::unordered_map<std::int64_t, StringId> domains = readNvtxDomains(ctx);
  sqlite::Statement row(ctx.db, nvtxSelect(ctx.db, fmt::format("eventType IN ({}, {}, {})",
      static_cast<int>(schema::NvtxEventType::kMark),
      static_cast<int>(schema::NvtxEventType::kPushPopRange),
      static_cast<int>(schema::NvtxEventType::kStartEndRange)).c_str()));
  progress::phase(fmt::format("reading {}: NVTX ranges", ctx.db.path()),
                  static_cast<std::uint64_t>(sqlite::countRows(ctx.db, table)));
  while (row.step()) {
    if ((ctx.trace.nvtx.size() & kProgressRows) == 0) progress::done(ctx.trace.nvtx.size());
    NvtxRange range;
    range.start = readTimestamp(row, 0, table, "start");
    range.end = row.isNull(1) ? range.start : readTimestamp(row, 1, table, "end");
    range.event_type = static_cast<std::int32_t>(row.int64(2));
    auto global_tid = static_cast<std::uint64_t>(row.int64(3));
    range.pid = schema::pidOf(global_tid);
    range.tid = schema::tidOf(global_tid);
    range.text = nvtxText(ctx, row);
    auto domain = row.isNull(5) ? domains.end() : domains.find(row.int64(5));
    if (domain != domains.end()) range.domain = domain->second;
    ctx.trace.nvtx.push_back(range);
  }
}

void resolveAsyncFromRuntime(Trace& trace) {
  std::vector<std::pair<std::uint32_t, StringId>> api_by_correlation;
  for (const RuntimeCall& call : trace.runtime_calls) {
    if (call.correlation_id != 0) api_by_correlation.emplace_back(call.correlation_id, call.name);
  }
  if (api_by_correlation.empty()) return;
  std::sort(api_by_correlation.begin(), api_by_correlation.end());
  std::vector<int> kind_of_name(trace.strings.size(), -2);  // -2 = not yet classified
  for (GpuOp& op : trace.ops) {
    if (op.kind == OpKind::kKernel || (op.flags & op_flag::kAsyncKnown) || op.correlation_id == 0) {
      continue;
    }
    auto it = std::lower_bound(api_by_correlation.begin(), api_by_correlation.end(),
                               std::make_pair(op.correlation_id, StringId{0}));
    if (it == api_by_correlation.end() || it->first != op.correlation_id) continue;
    int& kind = kind_of_name[it->second];
    if (kind == -2) kind = asyncKindOfApi(trace.str(it->second));
    if (kind < 0) continue;
    op.flags |= op_flag::kAsyncKnown;
    if (kind == 1) op.flags |= op_flag::kAsync;
  }
}

}  // namespace cuoverlap::reader
