// Reads unified-memory activity into Trace::unified_memory: GPU page-fault groups, CPU page faults
// and, in our traces, thrashing (migrations, the memcpy table's copyKind 11/12/13 rows, come from
// readOps' scan of that table). The tables and columns are those of `nsys export` (schema 3.x), which our
// collector writes too; a missing table or column reads as none.
#include <algorithm>
#include <limits>

#include <fmt/format.h>

#include "reader_internal.h"

namespace cuoverlap::reader {
namespace {

std::uint32_t pidOfColumn(const sqlite::Statement& row, int column) {
  return schema::pidOf(static_cast<std::uint64_t>(row.int64(column)));
}

// A record's end: NULL (an export without it) or before the start (corrupt) reads as its start.
Ns endOf(const sqlite::Statement& row, int column, std::string_view table, Ns start) {
  if (row.isNull(column)) return start;
  return std::max(start, readTimestamp(row, column, table, "end"));
}

void readGpuFaults(Context& ctx) {
  const std::string_view table = schema::kUmGpuFaultTable;
  if (!ctx.db.hasTable(table)) return;
  sqlite::Statement row(ctx.db, selectColumns(ctx.db, table,
      {"start", "end", "globalPid", "deviceId", "address", "numberOfPageFaults", "faultAccessType"},
      {"start"}));
  auto& faults = ctx.trace.unified_memory.gpu_faults;
  while (row.step()) {
    UmPageFaultGroup fault;
    fault.start = readTimestamp(row, 0, table, "start");
    fault.end = endOf(row, 1, table, fault.start);
    fault.pid = pidOfColumn(row, 2);
    fault.device_id = readDeviceId(row, 3, table);
    fault.address = static_cast<std::uint64_t>(row.int64(4));
    const std::int64_t count = row.int64Or(5, 1);
    fault.faults = static_cast<std::uint32_t>(
        std::clamp<std::int64_t>(count, 0, std::numeric_limits<std::uint32_t>::max()));
    const std::int64_t access = row.int64(6);
    fault.access = access >= 0 && access <= 4 ? static_cast<schema::UmAccessType>(access)
                                               : schema::UmAccessType::kUnknown;
    faults.push_back(fault);
  }
}

void readCpuFaults(Context& ctx) {
  const std::string_view table = schema::kUmCpuFaultTable;
  if (!ctx.db.hasTable(table)) return;
  sqlite::Statement row(ctx.db, selectColumns(ctx.db, table, {"start", "globalPid", "address"},
                                              {"start"}));
  while (row.step()) {
    UmCpuFault fault;
    fault.time = readTimestamp(row, 0, table, "start");
    fault.pid = pidOfColumn(row, 1);
    fault.address = static_cast<std::uint64_t>(row.int64(2));
    ctx.trace.unified_memory.cpu_faults.push_back(fault);
  }
}

void readThrashing(Context& ctx) {
  const std::string_view table = schema::kUmThrashingTable;
  if (!ctx.db.hasTable(table)) return;
  sqlite::Statement row(ctx.db, selectColumns(ctx.db, table,
      {"start", "globalPid", "address", "bytes", "devices", "kind"}, {"start"}));
  while (row.step()) {
    UmThrashing event;
    event.time = readTimestamp(row, 0, table, "start");
    event.pid = pidOfColumn(row, 1);
    event.address = static_cast<std::uint64_t>(row.int64(2));
    event.bytes = static_cast<std::uint64_t>(std::max<std::int64_t>(0, row.int64(3)));
    event.devices = static_cast<std::uint64_t>(row.int64(4));
    event.remote_map = row.int64(5) == 1;
    ctx.trace.unified_memory.thrashing.push_back(event);
  }
}

template <typename T, typename Key>
void sortBy(std::vector<T>& items, Key key) {
  auto before = [&](const T& a, const T& b) { return key(a) < key(b); };
  if (!std::is_sorted(items.begin(), items.end(), before)) {
    std::stable_sort(items.begin(), items.end(), before);
  }
}

// A table whose rows must all be read or none: with `bad` rows not valid, drops the others too and
// says so in the trace's warnings (false). True when all were valid.
template <typename Row>
bool keptWhole(Context& ctx, std::vector<Row>& rows, std::size_t bad, std::string_view table,
               std::string_view why, std::string_view consequence) {
  if (bad == 0) return true;
  ctx.trace.warnings.push_back(
      fmt::format("{} of {} rows of {} are not valid ({}): {}", bad, bad + rows.size(), table, why, consequence));
  rows.clear();
  return false;
}

}  // namespace

void readUnifiedMemory(Context& ctx) {
  readGpuFaults(ctx);
  readCpuFaults(ctx);
  readThrashing(ctx);
  UnifiedMemory& um = ctx.trace.unified_memory;
  sortBy(um.gpu_faults, [](const UmPageFaultGroup& f) { return f.start; });
  sortBy(um.cpu_faults, [](const UmCpuFault& f) { return f.time; });
  sortBy(um.thrashing, [](const UmThrashing& t) { return t.time; });
}

void readOpBuffers(Context& ctx) {
  const std::string_view table = schema::kOpBuffersTable;
  if (!ctx.db.hasTable(table)) return;
  // Only the judging of cross-stream waits uses them (diagnosis/data_order.h): a trace without a
  // stream wait is spared their reading (0.5 us and 34 bytes a row; a kernel has a row per pointer
  // argument). Read after the syncs.
  const auto& syncs = ctx.trace.syncs;
  if (std::none_of(syncs.begin(), syncs.end(), [](const SyncEvent& s) { return s.type == SyncType::kStreamWaitEvent; })) {
    return;
  }
  sqlite::Statement row(ctx.db, selectColumns(ctx.db, table,
      {"globalPid", "correlationId", "address", "bytes", "access"}, {}));
  std::vector<OpBuffer>& buffers = ctx.trace.op_buffers;
  std::size_t bad = 0;
  while (row.step()) {
    OpBuffer buffer;
    buffer.pid = pidOfColumn(row, 0);
    buffer.correlation_id = static_cast<std::uint32_t>(row.int64(1));
    buffer.address = static_cast<std::uint64_t>(row.int64(2));
    const std::int64_t bytes = row.int64(3), access = row.int64(4);
    if (access < 1 || access > 3 || bytes <= 0 || buffer.correlation_id == 0) {
      ++bad;
      continue;
    }
    buffer.bytes = static_cast<std::uint64_t>(bytes);
    buffer.access = static_cast<schema::BufferAccess>(access);
    buffers.push_back(buffer);
  }
  // An op missing one of its rows would read as touching less than it did, and a wait that orders
  // it as ordering nothing: none is trusted, the waits are judged as without the table.
  if (!keptWhole(ctx, buffers, bad, table, "access not 1-3, no bytes or no correlation id",
                 "which memory each op touched is not used")) {
    return;
  }
  sortBy(buffers, [](const OpBuffer& b) { return opBufferKey(b.pid, b.correlation_id); });
}

void readMemoryEvents(Context& ctx) {
  const std::string_view table = schema::kMemoryUsageTable;
  if (!ctx.db.hasTable(table)) return;
  sqlite::Statement row(ctx.db, selectColumns(ctx.db, table,
      {"start", "globalPid", "correlationId", "address", "bytes", "memKind", "memoryOperationType", "deviceId"},
      {"start"}));
  std::vector<MemoryEvent>& events = ctx.trace.memory_events;
  std::size_t bad = 0;
  while (row.step()) {
    MemoryEvent event;
    event.time = readTimestamp(row, 0, table, "start");
    event.pid = pidOfColumn(row, 1);
    event.correlation_id = static_cast<std::uint32_t>(std::clamp<std::int64_t>(
        row.int64Or(2, 0), 0, std::numeric_limits<std::uint32_t>::max()));
    event.address = static_cast<std::uint64_t>(row.int64(3));
    const std::int64_t bytes = row.int64(4), kind = row.int64Or(5, -1), operation = row.int64Or(6, -1);
    if (bytes < 0 || (operation != 0 && operation != 1)) {
      ++bad;
      continue;
    }
    event.bytes = static_cast<std::uint64_t>(bytes);
    event.kind = kind >= 0 && kind <= 7 ? static_cast<MemKind>(kind) : MemKind::kUnknown;
    event.allocation = operation == static_cast<int>(schema::MemoryOperation::kAllocation);
    event.device_id = readDeviceId(row, 7, table);
    events.push_back(event);
  }
  // An allocation missing would read as memory free that was not: none is trusted.
  if (!keptWhole(ctx, events, bad, table, "negative bytes, or an operation other than 0 or 1",
                 "the allocations recorded are not used")) {
    return;
  }
  sortBy(events, [](const MemoryEvent& e) { return e.time; });
}

void sortMigrations(Context& ctx) {
  sortBy(ctx.trace.unified_memory.migrations, [](const UmMigration& m) { return m.start; });
}

}  // namespace cuoverlap::reader
