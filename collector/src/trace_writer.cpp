// TraceWriter: file creation, transactions, strings and the session table.
// The per-kind row writers are in trace_writer_rows.cpp.
#include "trace_writer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "kernel_names.h"
#include "trace_schema.h"

namespace cuoverlap::collector {

const char* recordKindName(RecordKind kind) {
  static constexpr const char* kNames[] = {
      "kernel", "memcpy", "memset", "runtime", "driver", "sync", "cuda_event", "stream",
      "context", "device", "nvtx_marker", "nvtx_marker_data", "overhead", "um_migration",
      "um_gpu_fault", "um_cpu_fault", "um_thrashing", "unknown", "incomplete", "gpu_metric",
      "op_buffer", "memory"};
  static_assert(sizeof kNames / sizeof kNames[0] == static_cast<std::size_t>(RecordKind::kCount));
  return kNames[static_cast<std::size_t>(kind)];
}

namespace {

// Claims `path` atomically so that two processes (or a re-run) never share or clobber a file.
// Side files (-wal, -shm, -journal) already beside `path` belong to someone else's database of
// that name: SQLite would replay them into ours, and removing them could destroy another
// program's data, so the path is refused and they are left alone.
void createExclusively(const std::string& path) {
  for (const char* suffix : {"-wal", "-shm", "-journal"}) {
    struct stat st {};
    if (::lstat((path + suffix).c_str(), &st) == 0) {
      throw WriterError("'" + path + suffix + "' already exists (left by another database of that "
                        "name; not removed): choose another output");
    }
  }
  // O_EXCL also refuses a symlink planted at `path`, dangling or not.
  int fd = ::open(path.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) {
    if (errno == EEXIST) throw WriterError("'" + path + "' already exists (not overwritten)");
    throw WriterError("cannot create '" + path + "': " + std::strerror(errno));
  }
  ::close(fd);
}

}  // namespace

TraceWriter::TraceWriter(const std::string& path, std::uint32_t pid)
    : path_(path), pid_(pid), global_pid_(schema::encodeGlobalPid(pid)) {
  createExclusively(path);
  if (sqlite3_open_v2(path.c_str(), &db_,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_NOFOLLOW,
                      nullptr) != SQLITE_OK) {
    std::string message = db_ != nullptr ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    db_ = nullptr;
    ::unlink(path.c_str());
    throw WriterError("cannot open '" + path + "': " + message);
  }
  // A killed process loses nothing the OS already has, so fsync buys nothing here.
  execSql(db_, "PRAGMA journal_mode=WAL; PRAGMA synchronous=OFF; PRAGMA cache_size=-16384;");
  createSchema();
  prepareStatements();
}

TraceWriter::~TraceWriter() { closeDatabase(); }

void TraceWriter::closeDatabase() {
  kernel_.reset(), memcpy_.reset(), memset_.reset(), api_.reset(), sync_.reset();
  cuda_event_.reset(), stream_.reset(), context_.reset(), device_.reset(), nvtx_.reset();
  overhead_.reset(), session_.reset(), um_gpu_fault_.reset(), um_cpu_fault_.reset();
  um_thrashing_.reset(), gpu_metric_name_.reset(), gpu_metric_.reset(), op_buffer_.reset();
  string_.reset();
  if (db_ != nullptr) sqlite3_close(db_);
  db_ = nullptr;
}

void TraceWriter::createSchema() {
  execSql(db_, "BEGIN");
  execSql(db_, schema::kCreateTables);
  execSql(db_, schema::kCreateCollectorTables);
  execSql(db_, "COMMIT");
}

void TraceWriter::begin() {
  if (in_transaction_) return;
  execSql(db_, "BEGIN");
  in_transaction_ = true;
}

void TraceWriter::commit() {
  begin();
  writeSessionRows();
  execSql(db_, "COMMIT");
  in_transaction_ = false;
}

void TraceWriter::close() {
  if (db_ == nullptr) return;
  commit();
  execSql(db_, "PRAGMA journal_mode=DELETE");
}

bool TraceWriter::holdsActivity() const {
  for (RecordKind kind : {RecordKind::kKernel, RecordKind::kMemcpy, RecordKind::kMemset,
                          RecordKind::kRuntime, RecordKind::kDriver, RecordKind::kSync,
                          RecordKind::kCudaEvent, RecordKind::kMarker, RecordKind::kUmMigration,
                          RecordKind::kUmGpuFault, RecordKind::kIncomplete}) {
    if (counts_[static_cast<std::size_t>(kind)] != 0) return true;
  }
  return false;
}

void TraceWriter::removeFile() {
  closeDatabase();
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) ::unlink((path_ + suffix).c_str());
}

std::int64_t TraceWriter::intern(const std::string& text) {
  auto it = strings_.find(text);
  if (it != strings_.end()) return it->second;
  std::int64_t id = static_cast<std::int64_t>(strings_.size()) + 1;
  begin();
  string_->run({id, text});
  strings_.emplace(text, id);
  return id;
}

const TraceWriter::KernelNameIds& TraceWriter::kernelNameIds(const char* name) {
  std::string key = name != nullptr ? name : "";
  auto it = kernel_names_.find(key);
  if (it != kernel_names_.end()) return it->second;
  KernelNames names = kernelNames(name);
  KernelNameIds ids{intern(names.demangled), intern(names.short_name), intern(names.mangled)};
  return kernel_names_.emplace(std::move(key), ids).first->second;
}

std::int64_t TraceWriter::apiNameId(const ApiRow& row) {
  std::uint64_t key = (static_cast<std::uint64_t>(row.kind) << 32) | row.callback_id;
  auto it = api_names_.find(key);
  if (it != api_names_.end()) return it->second;
  std::string name = row.name != nullptr
                         ? std::string(row.name)
                         : (row.kind == ApiKind::kRuntime ? "cudaRuntimeApi_" : "cuDriverApi_") +
                               std::to_string(row.callback_id);
  return api_names_.emplace(key, intern(name)).first->second;
}

void TraceWriter::setSessionValue(const std::string& key, const std::string& value) {
  session_values_[key] = value;
}

void TraceWriter::writeSessionRows() {
  for (std::size_t i = 0; i < counts_.size(); ++i) {
    session_values_[std::string(schema::session_key::kRecordsPrefix) +
             recordKindName(static_cast<RecordKind>(i))] = std::to_string(counts_[i]);
  }
  session_values_[std::string(schema::session_key::kCuptiOverheadNs)] =
      std::to_string(cupti_overhead_ns_);
  for (const auto& [key, value] : session_values_) session_->run({key, value});
}

}  // namespace cuoverlap::collector
