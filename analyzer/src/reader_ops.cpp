// Reads the GPU activity tables (kernels, memcpys, memsets) into Trace::ops.
#include <algorithm>
#include <limits>

#include "reader_internal.h"

namespace cuoverlap::reader {

namespace {

template <typename T>
T clampTo(std::int64_t value) {
  if (value < 0) return 0;
  return static_cast<std::uint64_t>(value) > std::numeric_limits<T>::max()
             ? std::numeric_limits<T>::max()
             : static_cast<T>(value);
}

// Saturating product of up to three dimensions (NULL columns count as 1).
std::uint64_t product(const sqlite::Statement& row, int first) {
  std::uint64_t result = 1;
  for (int i = first; i < first + 3; ++i) {
    std::uint64_t dim = row.isNull(i) ? 1 : clampTo<std::uint32_t>(row.int64(i));
    result = std::min<std::uint64_t>(result * dim, std::numeric_limits<std::uint32_t>::max());
  }
  return result;
}

MemKind memKindOf(const sqlite::Statement& row, int column) {
  if (row.isNull(column)) return MemKind::kUnknown;
  std::int64_t value = row.int64(column);
  return value >= 0 && value <= 7 ? static_cast<MemKind>(value) : MemKind::kUnknown;
}

// Columns 0..6 are the same in all three tables.
constexpr int kCommonColumns = 7;
#define CUOVERLAP_COMMON_OP_COLUMNS \
  "start", "end", "deviceId", "contextId", "streamId", "correlationId", "globalPid"

void readCommon(const sqlite::Statement& row, std::string_view table, GpuOp& op) {
  op.start = row.checkedInt64(0, table, "start");
  op.end = row.checkedInt64(1, table, "end");
  op.device_id = clampTo<std::uint16_t>(row.int64(2));
  op.context_id = static_cast<std::uint32_t>(row.int64(3));
  op.stream_id = static_cast<std::uint32_t>(row.int64(4));
  op.correlation_id = static_cast<std::uint32_t>(row.int64(5));
  op.pid = schema::pidOf(static_cast<std::uint64_t>(row.int64(6)));
}

void reserveFor(Context& ctx, std::string_view table) {
  ctx.trace.ops.reserve(ctx.trace.ops.size() +
                        static_cast<std::size_t>(sqlite::countRows(ctx.db, table)));
}

bool hasGraphNode(const sqlite::Statement& row, int column) {
  return !row.isNull(column) && row.int64(column) != 0;
}

void setAsync(const sqlite::Statement& row, int column, GpuOp& op) {
  if (row.isNull(column)) return;  // unknown here; maybe known from the runtime call later
  op.flags |= op_flag::kAsyncKnown;
  if (row.int64(column) != 0) op.flags |= op_flag::kAsync;
}

}  // namespace

void readKernels(Context& ctx) {
  std::string_view table = schema::kKernelTable;
  if (!ctx.db.hasTable(table)) return;
  sqlite::Statement row(ctx.db, selectColumns(ctx.db, table,
      {CUOVERLAP_COMMON_OP_COLUMNS, "demangledName", "shortName", "gridX", "gridY", "gridZ",
       "blockX", "blockY", "blockZ", "staticSharedMemory", "dynamicSharedMemory",
       "registersPerThread", "graphNodeId"},
      {"start", "end"}));
  reserveFor(ctx, table);
  while (row.step()) {
    GpuOp op;
    op.kind = OpKind::kKernel;
    readCommon(row, table, op);
    int c = kCommonColumns;
    op.name = row.isNull(c) ? kNoString : ctx.strings.resolve(row.int64(c));
    if (op.name == kNoString && !row.isNull(c + 1)) op.name = ctx.strings.resolve(row.int64(c + 1));
    op.grid_blocks = static_cast<std::uint32_t>(product(row, c + 2));
    op.block_threads = clampTo<std::uint16_t>(static_cast<std::int64_t>(product(row, c + 5)));
    op.shared_mem_bytes = clampTo<std::uint32_t>(row.int64(c + 8) + row.int64(c + 9));
    op.registers_per_thread = clampTo<std::uint16_t>(row.int64(c + 10));
    if (hasGraphNode(row, c + 11)) op.flags |= op_flag::kFromGraph;
    ctx.trace.ops.push_back(op);
  }
}

void readMemcpys(Context& ctx) {
  std::string_view table = schema::kMemcpyTable;
  if (!ctx.db.hasTable(table)) return;
  sqlite::Statement row(ctx.db, selectColumns(ctx.db, table,
      {CUOVERLAP_COMMON_OP_COLUMNS, "bytes", "copyKind", "srcKind", "dstKind", "graphNodeId",
       "async"},
      {"start", "end"}));
  reserveFor(ctx, table);
  while (row.step()) {
    GpuOp op;
    op.kind = OpKind::kMemcpy;
    readCommon(row, table, op);
    int c = kCommonColumns;
    op.bytes = clampTo<std::uint64_t>(row.int64(c));
    std::int64_t copy_kind = row.int64(c + 1);
    op.copy_kind = copy_kind >= 0 && copy_kind <= 13 ? static_cast<CopyKind>(copy_kind)
                                                     : CopyKind::kUnknown;
    op.src_kind = memKindOf(row, c + 2);
    op.dst_kind = memKindOf(row, c + 3);
    if (hasGraphNode(row, c + 4)) op.flags |= op_flag::kFromGraph;
    setAsync(row, c + 5, op);
    ctx.trace.ops.push_back(op);
  }
}

void readMemsets(Context& ctx) {
  std::string_view table = schema::kMemsetTable;
  if (!ctx.db.hasTable(table)) return;
  sqlite::Statement row(ctx.db, selectColumns(ctx.db, table,
      {CUOVERLAP_COMMON_OP_COLUMNS, "bytes", "memKind", "graphNodeId", "async"},
      {"start", "end"}));
  reserveFor(ctx, table);
  while (row.step()) {
    GpuOp op;
    op.kind = OpKind::kMemset;
    readCommon(row, table, op);
    int c = kCommonColumns;
    op.bytes = clampTo<std::uint64_t>(row.int64(c));
    op.src_kind = memKindOf(row, c + 1);
    if (hasGraphNode(row, c + 2)) op.flags |= op_flag::kFromGraph;
    setAsync(row, c + 3, op);
    ctx.trace.ops.push_back(op);
  }
}

}  // namespace cuoverlap::reader
