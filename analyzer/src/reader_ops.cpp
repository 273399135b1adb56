// Reads the GPU activity tables (kernels, memcpys, memsets) into Trace::ops.
#include <algorithm>
#include <limits>
#include <memory>

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
  op.start = readTimestamp(row, 0, table, "start");
  op.end = readTimestamp(row, 1, table, "end");
  op.device_id = readDeviceId(row, 2, table);
  op.context_id = static_cast<std::uint32_t>(row.int64(3));
  op.stream_id = static_cast<std::uint32_t>(row.int64(4));
  op.correlation_id = static_cast<std::uint32_t>(row.int64(5));
  op.pid = schema::pidOf(static_cast<std::uint64_t>(row.int64(6)));
}

bool hasGraphNode(const sqlite::Statement& row, int column) {
  return !row.isNull(column) && row.int64(column) != 0;
}

void setAsync(const sqlite::Statement& row, int column, GpuOp& op) {
  if (row.isNull(column)) return;  // unknown here; maybe known from the runtime call later
  op.flags |= op_flag::kAsyncKnown;
  if (row.int64(column) != 0) op.flags |= op_flag::kAsync;
}

std::string kernelQuery(const sqlite::Database& db) {
  return selectColumns(db, schema::kKernelTable,
      {CUOVERLAP_COMMON_OP_COLUMNS, "demangledName", "shortName", "gridX", "gridY", "gridZ",
       "blockX", "blockY", "blockZ", "staticSharedMemory", "dynamicSharedMemory",
       "registersPerThread", "graphNodeId"},
      {"start", "end"});
}

// One dimension (NULL counts as 1), clamped to 32 bits.
std::uint32_t dimension(const sqlite::Statement& row, int column) {
  return row.isNull(column) ? 1 : clampTo<std::uint32_t>(row.int64(column));
}

void decodeKernel(Context& ctx, const sqlite::Statement& row, GpuOp& op, KernelDims& dims) {
  std::string_view table = schema::kKernelTable;
  op.kind = OpKind::kKernel;
  readCommon(row, table, op);
  int c = kCommonColumns;
  op.name = row.isNull(c) ? kNoString : ctx.strings.resolve(row.int64(c));
  if (op.name == kNoString && !row.isNull(c + 1)) op.name = ctx.strings.resolve(row.int64(c + 1));
  op.grid_blocks = static_cast<std::uint32_t>(product(row, c + 2));
  op.block_threads = clampTo<std::uint16_t>(static_cast<std::int64_t>(product(row, c + 5)));
  for (int i = 0; i < 3; ++i) {
    dims.grid[i] = dimension(row, c + 2 + i);
    dims.block[i] = clampTo<std::uint16_t>(row.isNull(c + 5 + i) ? 1 : row.int64(c + 5 + i));
  }
  // Each clamped first: their sum in 64 bits then cannot overflow.
  std::int64_t shared = std::int64_t{clampTo<std::uint32_t>(row.int64(c + 8))} +
                        clampTo<std::uint32_t>(row.int64(c + 9));
  op.shared_mem_bytes = clampTo<std::uint32_t>(shared);
  op.registers_per_thread = clampTo<std::uint16_t>(row.int64(c + 10));
  if (hasGraphNode(row, c + 11)) op.flags |= op_flag::kFromGraph;
}

std::string memcpyQuery(const sqlite::Database& db) {
  return selectColumns(db, schema::kMemcpyTable,
      {CUOVERLAP_COMMON_OP_COLUMNS, "bytes", "copyKind", "srcKind", "dstKind", "graphNodeId",
       "async"},
      {"start", "end"});
}

void decodeMemcpy(Context&, const sqlite::Statement& row, GpuOp& op, KernelDims&) {
  std::string_view table = schema::kMemcpyTable;
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
}

std::string memsetQuery(const sqlite::Database& db) {
  return selectColumns(db, schema::kMemsetTable,
      {CUOVERLAP_COMMON_OP_COLUMNS, "bytes", "memKind", "graphNodeId", "async"},
      {"start", "end"});
}

void decodeMemset(Context&, const sqlite::Statement& row, GpuOp& op, KernelDims&) {
  std::string_view table = schema::kMemsetTable;
  op.kind = OpKind::kMemset;
  readCommon(row, table, op);
  int c = kCommonColumns;
  op.bytes = clampTo<std::uint64_t>(row.int64(c));
  op.src_kind = memKindOf(row, c + 1);
  if (hasGraphNode(row, c + 2)) op.flags |= op_flag::kFromGraph;
  setAsync(row, c + 3, op);
}

// One op table read in its stored order, one decoded row ahead.
class OpCursor {
 public:
  using Decode = void (*)(Context&, const sqlite::Statement&, GpuOp&, KernelDims&);
  OpCursor(Context& ctx, const std::string& sql, Decode decode)
      : ctx_(ctx), row_(ctx.db, sql), decode_(decode) { advance(); }
  bool valid() const { return valid_; }
  const GpuOp& current() const { return op_; }
  const KernelDims& dims() const { return dims_; }
  void advance() {
    valid_ = row_.step();
    if (!valid_) return;
    op_ = GpuOp{};
    dims_ = KernelDims{};
    decode_(ctx_, row_, op_, dims_);
  }

 private:
  Context& ctx_;
  sqlite::Statement row_;
  Decode decode_;
  GpuOp op_;
  KernelDims dims_;
  bool valid_ = false;
};

bool before(const GpuOp& a, const GpuOp& b) {
  return a.start != b.start ? a.start < b.start : a.end < b.end;
}

}  // namespace

// Tables are normally stored in time order, so merging the three while reading yields sorted ops
// with no sort and no extra memory; when a table is not, readTrace's sort repairs the order.
void readOps(Context& ctx) {
  struct Table {
    std::string_view name;
    std::string (*query)(const sqlite::Database&);
    OpCursor::Decode decode;
  };
  const Table tables[] = {{schema::kKernelTable, kernelQuery, decodeKernel},
                          {schema::kMemcpyTable, memcpyQuery, decodeMemcpy},
                          {schema::kMemsetTable, memsetQuery, decodeMemset}};
  std::vector<std::unique_ptr<OpCursor>> cursors;
  std::size_t rows = 0;
  for (const Table& table : tables) {
    if (!ctx.db.hasTable(table.name)) continue;
    rows += static_cast<std::size_t>(sqlite::countRows(ctx.db, table.name));
    cursors.push_back(std::make_unique<OpCursor>(ctx, table.query(ctx.db), table.decode));
  }
  ctx.trace.ops.reserve(rows);  // once: growing would briefly hold two copies
  while (true) {
    OpCursor* next = nullptr;
    for (auto& cursor : cursors) {
      if (cursor->valid() && (next == nullptr || before(cursor->current(), next->current()))) {
        next = cursor.get();
      }
    }
    if (next == nullptr) break;
    if (!next->dims().oneDimensional()) addKernelDims(ctx.trace, next->dims());
    ctx.trace.ops.push_back(next->current());
    next->advance();
  }
}

}  // namespace cuoverlap::reader
