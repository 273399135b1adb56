// Reads the GPU activity tables (kernels, memcpys, memsets) into Trace::ops.
#include <algorithm>
#include <limits>
#include <memory>
#include <optional>
#include <thread>

#include <fmt/core.h>

#include "reader_internal.h"
#include "reader_table_stream.h"

namespace cuoverlap::reader {

namespace {

template <typename T>
T clampTo(std::int64_t value) {
  if (value < 0) return 0;
  return static_cast<std::uint64_t>(value) > std::numeric_limits<T>::max()
             ? std::numeric_limits<T>::max()
             : static_cast<T>(value);
}

MemKind memKindOf(const sqlite::Statement& row, int column) {
  const std::int64_t value = row.int64Or(column, -1);  // NULL: unknown
  return value >= 0 && value <= 7 ? static_cast<MemKind>(value) : MemKind::kUnknown;
}

// Columns 0..6 are the same in all three tables.
constexpr int kCommonColumns = 7;
#define CUOVERLAP_COMMON_OP_COLUMNS \
  "start", "end", "deviceId", "contextId", "streamId", "correlationId", "globalPid"

void readCommon(const sqlite::Statement& row, std::string_view table, GpuOp& op) {
  op.start = readTimestamp(row, 0, table, "start");
  op.end = readTimestamp(row, 1, table, "end");
  op.device_id = readDeviceId(row, 2, table);
  op.context_id = static_cast<std::uint32_t>(row.int64(3));
  op.stream_id = static_cast<std::uint32_t>(row.int64(4));
  op.correlation_id = static_cast<std::uint32_t>(row.int64(5));
  op.pid = schema::pidOf(static_cast<std::uint64_t>(row.int64(6)));
}

// NULL or 0: not from a graph (column_int64 reads NULL as 0).
bool hasGraphNode(const sqlite::Statement& row, int column) { return row.int64(column) != 0; }

void setAsync(const sqlite::Statement& row, int column, GpuOp& op) {
  const std::int64_t async = row.int64Or(column, -1);
  if (async == -1) return;  // NULL: unknown here; maybe known from the runtime call later
  op.flags |= op_flag::kAsyncKnown;
  if (async != 0) op.flags |= op_flag::kAsync;
}

std::string kernelQuery(const sqlite::Database& db) {
  return selectColumns(db, schema::kKernelTable,
      {CUOVERLAP_COMMON_OP_COLUMNS, "demangledName", "shortName", "gridX", "gridY", "gridZ",
       "blockX", "blockY", "blockZ", "staticSharedMemory", "dynamicSharedMemory",
       "registersPerThread", "graphNodeId"},
      {"start", "end"});
}

// A row decoded on a stream's thread: the op, a kernel's dimensions, and its name columns as
// the file's string ids, resolved by the merging thread (the string table is not shared).
struct DecodedOp {
  GpuOp op;  // of a migration: its start and end only (the merge's order)
  KernelDims dims;
  std::optional<UmMigration> migration;  // a memcpy row of copyKind 11-13: no op
  std::int64_t name_id = 0;
  std::int64_t short_name_id = 0;
  bool has_name = false;
  bool has_short_name = false;
};

void decodeKernel(const sqlite::Statement& row, DecodedOp& out) {
  std::string_view table = schema::kKernelTable;
  GpuOp& op = out.op;
  op.kind = OpKind::kKernel;
  readCommon(row, table, op);
  int c = kCommonColumns;
  constexpr std::int64_t kNull = std::numeric_limits<std::int64_t>::min();
  out.name_id = row.int64Or(c, kNull);
  out.has_name = out.name_id != kNull;
  out.short_name_id = row.int64Or(c + 1, kNull);
  out.has_short_name = out.short_name_id != kNull;
  // Each dimension once (NULL counts as 1), clamped to 32 bits; the products saturate at 2^32-1.
  std::uint64_t grid = 1;
  std::uint64_t block = 1;
  for (int i = 0; i < 3; ++i) {
    const std::uint32_t g = clampTo<std::uint32_t>(row.int64Or(c + 2 + i, 1));
    const std::int64_t b = row.int64Or(c + 5 + i, 1);
    out.dims.grid[i] = g;
    out.dims.block[i] = clampTo<std::uint16_t>(b);
    grid = std::min<std::uint64_t>(grid * g, std::numeric_limits<std::uint32_t>::max());
    block = std::min<std::uint64_t>(block * clampTo<std::uint32_t>(b),
                                    std::numeric_limits<std::uint32_t>::max());
  }
  op.grid_blocks = static_cast<std::uint32_t>(grid);
  op.block_threads = clampTo<std::uint16_t>(static_cast<std::int64_t>(block));
  // Each clamped first: their sum in 64 bits then cannot overflow.
  std::int64_t shared = std::int64_t{clampTo<std::uint32_t>(row.int64(c + 8))} +
                        clampTo<std::uint32_t>(row.int64(c + 9));
  op.shared_mem_bytes = clampTo<std::uint32_t>(shared);
  op.registers_per_thread = clampTo<std::uint16_t>(row.int64(c + 10));
  if (hasGraphNode(row, c + 11)) op.flags |= op_flag::kFromGraph;
}

// Unified-memory migrations (copyKind 11-13) are not ops (model.h, UnifiedMemory): the same scan
// of the table hands them to Trace::unified_memory (a second scan for them alone cost a third of
// the table's decoding).
std::string memcpyQuery(const sqlite::Database& db) {
  return selectColumns(db, schema::kMemcpyTable,
      {CUOVERLAP_COMMON_OP_COLUMNS, "bytes", "copyKind", "srcKind", "dstKind", "graphNodeId",
       "async", "migrationCause", "virtualAddress"},
      {"start", "end"});
}

bool isMigration(std::int64_t copy_kind) { return copy_kind >= 11 && copy_kind <= 13; }

// A migration's end: NULL (an export without it) or before the start (corrupt) reads as its start.
void decodeMigration(const sqlite::Statement& row, std::int64_t copy_kind, DecodedOp& out) {
  std::string_view table = schema::kMemcpyTable;
  UmMigration& migration = out.migration.emplace();
  migration.start = readTimestamp(row, 0, table, "start");
  migration.end = row.isNull(1) ? migration.start
                                : std::max(migration.start, readTimestamp(row, 1, table, "end"));
  migration.device_id = readDeviceId(row, 2, table);
  migration.pid = schema::pidOf(static_cast<std::uint64_t>(row.int64(6)));
  migration.bytes = static_cast<std::uint64_t>(std::max<std::int64_t>(0, row.int64(kCommonColumns)));
  migration.direction = static_cast<CopyKind>(copy_kind);
  const std::int64_t cause = row.int64(kCommonColumns + 6);
  migration.cause = cause >= 0 && cause <= 5 ? static_cast<schema::UmMigrationCause>(cause)
                                             : schema::UmMigrationCause::kUnknown;
  migration.address = static_cast<std::uint64_t>(row.int64(kCommonColumns + 7));
  out.op.start = migration.start;
  out.op.end = migration.end;
}

void decodeMemcpy(const sqlite::Statement& row, DecodedOp& out) {
  std::string_view table = schema::kMemcpyTable;
  int c = kCommonColumns;
  std::int64_t copy_kind = row.int64(c + 1);
  if (isMigration(copy_kind)) return decodeMigration(row, copy_kind, out);
  GpuOp& op = out.op;
  op.kind = OpKind::kMemcpy;
  readCommon(row, table, op);
  op.bytes = clampTo<std::uint64_t>(row.int64(c));
  op.copy_kind = copy_kind >= 0 && copy_kind <= 13 ? static_cast<CopyKind>(copy_kind)
                                                   : CopyKind::kUnknown;
  op.src_kind = memKindOf(row, c + 2);
  op.dst_kind = memKindOf(row, c + 3);
  if (hasGraphNode(row, c + 4)) op.flags |= op_flag::kFromGraph;
  setAsync(row, c + 5, op);
}

std::string memsetQuery(const sqlite::Database& db) {
  return selectColumns(db, schema::kMemsetTable,
      {CUOVERLAP_COMMON_OP_COLUMNS, "bytes", "memKind", "graphNodeId", "async"},
      {"start", "end"});
}

void decodeMemset(const sqlite::Statement& row, DecodedOp& out) {
  std::string_view table = schema::kMemsetTable;
  GpuOp& op = out.op;
  op.kind = OpKind::kMemset;
  readCommon(row, table, op);
  int c = kCommonColumns;
  op.bytes = clampTo<std::uint64_t>(row.int64(c));
  op.src_kind = memKindOf(row, c + 1);
  if (hasGraphNode(row, c + 2)) op.flags |= op_flag::kFromGraph;
  setAsync(row, c + 3, op);
}

bool before(const GpuOp& a, const GpuOp& b) {
  return a.start != b.start ? a.start < b.start : a.end < b.end;
}

// The last op's order and context into `seen` (the op and the one before are still in cache).
void noteOp(const std::vector<GpuOp>& ops, OpsSeen& seen) {
  const GpuOp& op = ops.back();
  if (ops.size() > 1) {
    const GpuOp& previous = ops[ops.size() - 2];
    if (before(op, previous)) seen.sorted = false;
    if (op.context_id == previous.context_id && op.pid == previous.pid &&
        op.device_id == previous.device_id) {
      return;  // runs of one context are the common case
    }
  }
  seen.contexts.emplace_back(op.context_id, op.pid, op.device_id);
}

// The kernel's name: its demangled name, else its short name (string ids the file resolves).
StringId kernelName(Context& ctx, const DecodedOp& row) {
  StringId name = row.has_name ? ctx.strings.resolve(row.name_id) : kNoString;
  if (name == kNoString && row.has_short_name) name = ctx.strings.resolve(row.short_name_id);
  return name;
}

}  // namespace

// Tables are normally stored in time order, so merging the three while reading yields sorted ops
// with no sort and no extra memory; when a table is not, readTrace's sort repairs the order. The
// tables are decoded on threads of their own when there are several and kParallelRows rows or
// more (reader_table_stream.h), and merged here.
OpsSeen readOps(Context& ctx) {
  using Stream = TableStream<DecodedOp>;
  struct Table {
    std::string_view name;
    std::string (*query)(const sqlite::Database&);
    Stream::Decode decode;
  };
  const Table tables[] = {{schema::kKernelTable, kernelQuery, decodeKernel},
                          {schema::kMemcpyTable, memcpyQuery, decodeMemcpy},
                          {schema::kMemsetTable, memsetQuery, decodeMemset}};
  std::vector<const Table*> present;
  std::size_t rows = 0;
  for (const Table& table : tables) {
    if (!ctx.db.hasTable(table.name)) continue;
    rows += static_cast<std::size_t>(sqlite::rowsAtMost(ctx.db, table.name));
    present.push_back(&table);
  }
  // Below kParallelRows, reading takes a few ms: more connections (each parses the schema) and
  // threads would cost more than they save.
  const bool threaded = present.size() > 1 && rows >= kParallelRows &&
                        std::thread::hardware_concurrency() > 1;
  std::vector<std::unique_ptr<Stream>> streams;
  for (const Table* table : present) {
    streams.push_back(std::make_unique<Stream>(ctx.db, table->query(ctx.db), table->decode, threaded));
  }
  for (auto& stream : streams) stream->begin();
  ctx.trace.ops.reserve(rows);  // once: growing would briefly hold two copies (unused capacity
                                // where rows were deleted is never touched: no memory)
  progress::phase(fmt::format("reading {}: GPU ops", ctx.db.path()), rows);
  OpsSeen seen;
  seen.by_device = OpsByDevice(rows);
  while (true) {
    if ((ctx.trace.ops.size() & kProgressRows) == 0) progress::done(ctx.trace.ops.size());
    Stream* next = nullptr;
    for (auto& stream : streams) {
      if (stream->current() != nullptr &&
          (next == nullptr || before(stream->current()->op, next->current()->op))) {
        next = stream.get();
      }
    }
    if (next == nullptr) break;
    const DecodedOp& row = *next->current();
    if (row.migration) {
      ctx.trace.unified_memory.migrations.push_back(*row.migration);
      next->advance();
      continue;
    }
    if (!row.dims.oneDimensional()) addKernelDims(ctx.trace, row.dims);
    ctx.trace.ops.push_back(row.op);
    if (row.op.kind == OpKind::kKernel) ctx.trace.ops.back().name = kernelName(ctx, row);
    noteOp(ctx.trace.ops, seen);
    seen.by_device.add(ctx.trace.ops.back());
    next->advance();
  }
  std::sort(seen.contexts.begin(), seen.contexts.end());
  seen.contexts.erase(std::unique(seen.contexts.begin(), seen.contexts.end()), seen.contexts.end());
  sortMigrations(ctx);
  return seen;
}

}  // namespace cuoverlap::reader
