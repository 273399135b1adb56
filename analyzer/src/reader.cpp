// Reader entry point: recognizes the file and hands it to its importer, the SQLite reader (each
// table in reader_ops.cpp, reader_host.cpp, reader_target.cpp) or the Kineto JSON importer
// (kineto/), then puts the model in its documented order, the same for both.
#include "cuoverlap/reader.h"

#include <fmt/core.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <future>
#include <system_error>
#include <thread>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include "cuoverlap/error.h"
#include "kineto/kineto_importer.h"
#include "reader_internal.h"
#include "sqlite_snapshot.h"

namespace cuoverlap {
namespace reader {

StringId StringInterner::intern(std::string_view text) {
  if (text.empty()) return kNoString;
  auto [it, inserted] = ids_.try_emplace(std::string(text), 0);
  if (inserted) {
    it->second = static_cast<StringId>(trace_.strings.size());
    trace_.strings.emplace_back(text);
  }
  return it->second;
}

StringTable::StringTable(const sqlite::Database& db, StringInterner& interner)
    : interner_(interner) {
  if (!db.hasTable(schema::kStringIds)) return;
  sqlite::TableColumns columns(db, schema::kStringIds);
  columns.requireIntegerType("id");
  columns.requireTextType("value");
  sqlite::Statement stmt(db, "SELECT id, value FROM StringIds");
  while (stmt.step()) values_.emplace(stmt.int64(0), std::string(stmt.text(1)));
}

StringId StringTable::resolve(std::int64_t nsys_id) {
  auto done = resolved_.find(nsys_id);
  if (done != resolved_.end()) return done->second;
  auto value = values_.find(nsys_id);
  StringId id = value == values_.end() ? kNoString : interner_.intern(value->second);
  resolved_.emplace(nsys_id, id);
  return id;
}

std::string selectColumns(const sqlite::Database& db, std::string_view table,
                          std::initializer_list<const char*> columns,
                          std::initializer_list<const char*> required,
                          std::initializer_list<const char*> text_columns) {
  sqlite::TableColumns present(db, table);
  for (const char* name : required) {
    if (!present.has(name)) {
      throw UserError(fmt::format("{}: table {} has no column {}", db.path(), table, name));
    }
  }
  std::string sql = "SELECT ";
  for (const char* name : columns) {
    if (sql.size() > 7) sql += ", ";
    if (present.has(name)) {
      present.requireIntegerType(name);
      sql += fmt::format("\"{}\"", name);
    } else {
      sql += "NULL";
    }
  }
  for (const char* name : text_columns) {
    if (sql.size() > 7) sql += ", ";
    if (present.has(name)) {
      present.requireTextType(name);
      sql += fmt::format("\"{}\"", name);
    } else {
      sql += "NULL";
    }
  }
  return sql + fmt::format(" FROM \"{}\"", table);
}

namespace {

template <typename T>
void sortByStart(std::vector<T>& items) {
  auto before = [](const T& a, const T& b) {
    return a.start != b.start ? a.start < b.start : a.end < b.end;
  };
  // Tables are usually already in time order; checking first avoids a full sort.
  if (!std::is_sorted(items.begin(), items.end(), before)) {
    std::sort(items.begin(), items.end(), before);
  }
}

// sortByStart for ops, keeping Trace::kernel_dims (keyed by op index) pointing at the same ops.
void sortOps(Trace& trace, bool known_sorted) {
  if (known_sorted) return;
  if (trace.kernel_dims.empty()) return sortByStart(trace.ops);
  const auto ops_before = [](const GpuOp& x, const GpuOp& y) {
    return x.start != y.start ? x.start < y.start : x.end < y.end;
  };
  // The reader merges the tables in time order: checked on the ops themselves, before an order
  // vector (8 bytes an op) is allocated.
  if (std::is_sorted(trace.ops.begin(), trace.ops.end(), ops_before)) return;
  auto before = [&](std::size_t a, std::size_t b) { return ops_before(trace.ops[a], trace.ops[b]); };
  std::vector<std::size_t> order(trace.ops.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), before);
  std::vector<std::size_t> position(order.size());
  std::vector<GpuOp> sorted;
  sorted.reserve(order.size());
  for (std::size_t i = 0; i < order.size(); ++i) {
    position[order[i]] = i;
    sorted.push_back(trace.ops[order[i]]);
  }
  trace.ops = std::move(sorted);
  for (OpDims& entry : trace.kernel_dims) entry.op = static_cast<std::uint32_t>(position[entry.op]);
  std::sort(trace.kernel_dims.begin(), trace.kernel_dims.end(),
            [](const OpDims& a, const OpDims& b) { return a.op < b.op; });
}

// Nesting depth of push/pop ranges per thread: the number of enclosing ranges still open.
void computeNvtxDepths(std::vector<NvtxRange>& nvtx) {
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::vector<Ns>> open_ends;
  for (NvtxRange& range : nvtx) {
    if (range.event_type != static_cast<std::int32_t>(schema::NvtxEventType::kPushPopRange)) continue;
    std::vector<Ns>& ends = open_ends[{range.pid, range.tid}];
    while (!ends.empty() && ends.back() <= range.start) ends.pop_back();
    range.depth = static_cast<std::int32_t>(ends.size());
    ends.push_back(range.end);
  }
}

// Contexts seen in ops but absent from the context tables, so every op has a Context entry.
// `seen`: the ops' (context, pid, device), sorted and unique, when the reader collected them;
// else a pass over the ops finds them.
void addContextsFromOps(Trace& trace, const OpsSeen* ops_seen) {
  using Key = std::tuple<std::uint32_t, std::uint32_t, std::uint16_t>;
  std::set<Key> known;
  for (const cuoverlap::Context& c : trace.contexts) known.insert({c.context_id, c.pid, c.device_id});
  std::set<Key> seen;
  if (ops_seen != nullptr) {
    seen.insert(ops_seen->contexts.begin(), ops_seen->contexts.end());
  } else {
    Key last{0, 0, 0};
    bool have_last = false;
    for (const GpuOp& op : trace.ops) {
      Key key{op.context_id, op.pid, op.device_id};
      if (have_last && key == last) continue;  // runs of one context are the common case
      seen.insert(key);
      last = key;
      have_last = true;
    }
  }
  for (const auto& key : seen) {
    if (known.count(key) != 0) continue;
    cuoverlap::Context c;
    std::tie(c.context_id, c.pid, c.device_id) = key;
    trace.contexts.push_back(c);
  }
}

// A trace whose writer did not finish: a log beside the file, or our session table without
// complete=1 (the collector writes it last).
void noteUnfinished(const sqlite::Database& db, Trace& trace) {
  std::string log = db.unfinishedLog();
  if (!log.empty()) trace.warnings.push_back("unfinished trace: " + log);
  if (trace.source != TraceSource::kCuoverlap) return;
  for (const auto& [key, value] : trace.session) {
    if (key == schema::session_key::kComplete && value != "0") return;
  }
  trace.warnings.push_back(
      "unfinished trace: the session table has no complete=1: the program was killed or is still "
      "running, so activity after the last commit is missing");
}

// A trace whose collector dropped activity records (CUPTI found no buffer free: the writer fell
// behind): the session's dropped_records (summed over processes). What was dropped is not known:
// kernels, copies, API calls or NVTX ranges are missing anywhere in the run.
void noteDroppedRecords(Trace& trace) {
  if (trace.source != TraceSource::kCuoverlap) return;
  for (const auto& [key, value] : trace.session) {
    if (key != schema::session_key::kDroppedRecords) continue;
    const std::uint64_t dropped = std::strtoull(value.c_str(), nullptr, 10);
    if (dropped == 0) return;
    trace.warnings.push_back(fmt::format(
        "the collector dropped {} activity records (CUPTI's buffers filled faster than they were "
        "written): some GPU ops, API calls or NVTX ranges are missing, so gaps and costs near them "
        "are uncertain; record a shorter run or fewer ops (record --capture)",
        dropped));
    return;
  }
}

bool isTraceFile(const sqlite::Database& db) {
  for (std::string_view table : {schema::kSessionTable, schema::kKernelTable, schema::kMemcpyTable,
                                 schema::kMemsetTable, schema::kRuntimeTable, schema::kSyncTable,
                                 schema::kNvtxTable, schema::kStringIds}) {
    if (db.hasTable(table)) return true;
  }
  return false;
}

bool endsWith(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

// Only regular files are traces. Checked with stat() before anything opens the path: opening a
// FIFO for reading blocks until a writer comes, and a device may never end.
void requireRegularFile(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    throw UserError(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
  }
  if (S_ISREG(st.st_mode)) return;
  const char* what = S_ISFIFO(st.st_mode) ? "a FIFO" : S_ISDIR(st.st_mode) ? "a directory"
                     : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device"
                     : S_ISSOCK(st.st_mode) ? "a socket" : "not a file";
  throw UserError(fmt::format("{}: {}, not a regular file; a trace is read from a file", path, what));
}

// Nsight Systems' own report format (.nsys-rep, formerly .qdrep) is not a database: say how to
// export it instead of "file is not a database".
void rejectNsightReport(const std::string& path) {
  for (std::string_view extension : {".nsys-rep", ".qdrep"}) {
    if (!endsWith(path, extension)) continue;
    const std::string stem = path.substr(0, path.size() - extension.size());
    throw UserError(fmt::format(
        "{}: an Nsight Systems report, not an export; export it first with: "
        "nsys export --type sqlite -o {}.sqlite {}",
        path, stem, path));
  }
}

}  // namespace
}  // namespace reader

namespace {

reader::OpsSeen readSqliteTrace(const std::string& path, Trace& trace) {
  sqlite::Database db(path);
  if (!reader::isTraceFile(db)) {
    throw UserError(fmt::format(
        "{}: not a cuoverlap trace or Nsight Systems export (no CUPTI_ACTIVITY_KIND_*, NVTX_EVENTS "
        "or StringIds tables)", path));
  }
  trace.source = db.hasTable(schema::kSessionTable) ? TraceSource::kCuoverlap : TraceSource::kNsys;
  reader::StringInterner interner(trace);
  reader::StringTable strings(db, interner);
  reader::Context ctx{db, trace, interner, strings};
  reader::readSession(ctx);
  reader::noteUnfinished(db, trace);
  reader::noteDroppedRecords(trace);
  reader::readDevices(ctx);
  reader::readStreamsAndContexts(ctx);
  reader::readRuntimeCalls(ctx);
  reader::readStreamOrigins(ctx);
  // Unified-memory page faults and thrashing touch nothing else of the trace: when their tables
  // are large, read on a connection and thread of their own beside the ops (each table decoded on a
  // thread of its own) and then the synchronization, event and NVTX records.
  std::future<void> unified_memory;
  bool large = false;
  for (std::string_view table : {schema::kUmGpuFaultTable, schema::kUmCpuFaultTable, schema::kUmThrashingTable}) {
    large = large || (db.hasTable(table) &&
                      sqlite::rowsAtMost(db, table) >= static_cast<std::int64_t>(reader::kParallelRows));
  }
  if (large && std::thread::hardware_concurrency() > 1) {
    const auto read = [&db, &trace, &interner, &strings] {
      const sqlite::Database connection(db, sqlite::Database::Sibling{});
      reader::Context own{connection, trace, interner, strings};
      reader::readUnifiedMemory(own);
    };
    try {
      unified_memory = std::async(std::launch::async, read);
    } catch (const std::system_error&) {
      // no thread to be had: read below
    }
  }
  reader::OpsSeen seen = reader::readOps(ctx);
  reader::readSyncs(ctx);
  reader::readEventRecords(ctx);
  reader::readNvtx(ctx);
  if (unified_memory.valid()) {
    unified_memory.get();  // rethrows its error
  } else {
    reader::readUnifiedMemory(ctx);
  }
  reader::readGpuMetrics(ctx);
  reader::readOpBuffers(ctx);
  reader::readMemoryEvents(ctx);
  reader::readProcessNames(ctx);
  return seen;
}

// The file's size in bytes (0 when it cannot be told): the Kineto reading phase's total.
std::uint64_t fileBytes(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && st.st_size > 0 ? static_cast<std::uint64_t>(st.st_size) : 0;
}

}  // namespace

// One importer per format in front of one model: JSON text, plain or gzip-compressed, goes to the
// Kineto importer, anything else (a gzip-compressed SQLite database too) to the SQLite reader
// (which rejects what is not a trace).
Trace readTrace(const std::string& path) {
  reader::rejectNsightReport(path);
  reader::requireRegularFile(path);
  Trace trace;
  trace.path = path;
  std::optional<reader::OpsSeen> seen;  // the SQLite reader's: the Kineto importer's ops are not merged
  // gzip holds either: a compressed SQLite trace (lab corpora store theirs so) or Kineto JSON.
  if (!sqlite::PrivateSnapshot::gzippedSqlite(path) && kineto::looksLikeJson(path)) {
    progress::phase(fmt::format("reading {} (PyTorch profiler JSON)", path), fileBytes(path));
    trace.source = TraceSource::kKineto;
    kineto::importTrace(path, trace);
  } else {
    seen = readSqliteTrace(path, trace);
  }
  progress::phase(fmt::format("reading {}: sorting", path));
  reader::resolveAsyncFromRuntime(trace);
  reader::addContextsFromOps(trace, seen ? &*seen : nullptr);
  reader::sortOps(trace, seen && seen->sorted);
  if (seen && seen->sorted) std::move(seen->by_device).install(trace);
  reader::sortByStart(trace.runtime_calls);
  reader::sortByStart(trace.syncs);
  reader::sortByStart(trace.nvtx);
  reader::computeNvtxDepths(trace.nvtx);
  return trace;
}

}  // namespace cuoverlap
