// Adversarial trace shapes (issue 13): each must stay near-linear, so that no file of a few MB
// makes the analyzer take minutes. For each shape and size the trace is written to SQLite, then
// read + analyzed (or exported) and timed; the table goes into docs/BENCHMARKS.md.
//
//   many devices       N devices (TARGET_INFO_GPU rows), one kernel on each: per-device scans
//   + launch calls     the same, each kernel launched by its own runtime call
//   many contexts      N contexts with a legacy default stream, one kernel on each null stream
//   overlapping ops    N kernels on one stream that all overlap: N export tracks (Perfetto)
//   overlapping NVTX   N start/end ranges of one process that all overlap: N export tracks
//   spanning syncs     N kernels and N cudaStreamSynchronize calls that all span the trace
//                      (host state: blocking calls in progress during every gap)
//   spanning allocs    the same with cudaMalloc calls (allocation parts of every gap)
//   stream waits       N kernels on two streams without launch calls and N stream-wait
//                      records (event-wait-serialization's released-op lookup)
//   filling kernels    N device-filling kernels that all overlap (device-saturating-kernel)
//
// Usage: cuoverlap_bench_shapes [--dir DIR] [--sizes 1000,4000,16000,64000] [--limit SECONDS]
// Exits 1 when a shape at the largest size took longer than --limit (default: no limit).
#include <fmt/core.h>
#include <sqlite3.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <ostream>
#include <stdexcept>
#include <streambuf>
#include <string>
#include <vector>

#include "cuoverlap/analysis.h"
#include "cuoverlap/perfetto_export.h"
#include "cuoverlap/reader.h"
#include "trace_schema.h"

namespace {

using cuoverlap::Trace;

class Writer {
 public:
  explicit Writer(const std::string& path) {
    std::filesystem::remove(path);
    if (sqlite3_open(path.c_str(), &db_) != SQLITE_OK) throw std::runtime_error("cannot create " + path);
    exec(std::string(cuoverlap::schema::kCreateTables));
    exec("INSERT INTO CUOVERLAP_SESSION VALUES ('complete', '1')");
    exec("INSERT INTO StringIds VALUES (1, 'k'), (2, 'cudaStreamSynchronize_v3020'), "
         "(3, 'cudaMalloc_v3020'), (4, 'cudaLaunchKernel_v7000')");
    exec("INSERT INTO TARGET_INFO_GPU (vmId, id, name, smCount, maxThreadsPerBlock, "
         "threadsPerWarp, maxWarpsPerSm, maxBlocksPerSm) VALUES (0, 0, 'gpu', 132, 1024, 32, 64, 32)");
    exec("BEGIN");
  }
  ~Writer() {
    exec("COMMIT");
    sqlite3_close(db_);
  }
  void exec(const std::string& sql) {
    if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, nullptr) != SQLITE_OK) {
      throw std::runtime_error(std::string("bench: ") + sqlite3_errmsg(db_) + " in " + sql);
    }
  }
  void call(std::int64_t start, std::int64_t end, std::int64_t correlation, int name) {
    exec(fmt::format("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME (start, end, eventClass, globalTid, "
                     "correlationId, nameId, returnValue) VALUES ({}, {}, 0, {}, {}, {}, 0)",
                     start, end, cuoverlap::schema::encodeGlobalTid(42, 7), correlation, name));
  }
  void kernel(std::int64_t start, std::int64_t end, std::int64_t device, std::int64_t context,
              std::int64_t stream, std::int64_t correlation = 0, std::int64_t grid = 64) {
    exec(fmt::format("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, contextId, "
                     "streamId, correlationId, globalPid, demangledName, shortName, "
                     "registersPerThread, gridX, gridY, gridZ, blockX, blockY, blockZ, "
                     "staticSharedMemory, dynamicSharedMemory, localMemoryPerThread, "
                     "localMemoryTotal, gridId) VALUES "
                     "({}, {}, {}, {}, {}, {}, {}, 1, 1, 32, {}, 1, 1, 256, 1, 1, 0, 0, 0, 0, 1)",
                     start, end, device, context, stream, correlation,
                     cuoverlap::schema::encodeGlobalPid(42), grid));
  }

 private:
  sqlite3* db_ = nullptr;
};

void manyDevices(const std::string& path, int n) {
  Writer w(path);
  for (int i = 0; i < n; ++i) {
    const int device = i % 65536;
    if (i < 65536 && device != 0) {
      w.exec(fmt::format("INSERT INTO TARGET_INFO_GPU (vmId, id, name, smCount) VALUES "
                         "(0, {}, 'gpu {}', 132)", device, device));
    }
    w.kernel(1000 + 10 * i, 1005 + 10 * i, device, 1, 7);
  }
}

void manyContexts(const std::string& path, int n) {
  Writer w(path);
  for (int i = 0; i < n; ++i) {
    w.exec(fmt::format("INSERT INTO TARGET_INFO_CUDA_CONTEXT_INFO (nullStreamId, hwId, vmId, "
                       "processId, deviceId, contextId) VALUES (7, 0, 0, 42, 0, {})", i + 1));
    w.kernel(1000 + 10 * i, 1005 + 10 * i, 0, i + 1, 7);
  }
}

void overlappingOps(const std::string& path, int n) {
  Writer w(path);
  for (int i = 0; i < n; ++i) w.kernel(1000 + i, 1000 + std::int64_t{n} * 10 + i, 0, 1, 7);
}

void overlappingNvtx(const std::string& path, int n) {
  Writer w(path);
  w.kernel(1000, 2000, 0, 1, 7);
  for (int i = 0; i < n; ++i) {
    w.exec(fmt::format("INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid) VALUES "
                       "({}, {}, 60, 'r', {})", 1000 + i, 1000 + std::int64_t{n} * 10 + i,
                       cuoverlap::schema::encodeGlobalTid(42, 7)));
  }
}

// N kernels 20 ns apart (a 10 ns gap after each), each launched by its own call, and N calls of
// `name` (2: synchronize, 3: malloc) that all span the whole trace.
void spanningCalls(const std::string& path, int n, int name) {
  Writer w(path);
  const std::int64_t end = 1000 + std::int64_t{n} * 20 + 1000;
  for (int i = 0; i < n; ++i) {
    const std::int64_t start = 1000 + std::int64_t{i} * 20;
    w.call(start - 5, start - 2, i + 1, 4);
    w.kernel(start, start + 10, 0, 1, 7, i + 1);
    w.call(500 + i % 100, end + i % 100, n + i + 1, name);
  }
}
// Many devices, each with one kernel launched by its own call: per-device views of the calls.
void manyDevicesWithCalls(const std::string& path, int n) {
  Writer w(path);
  for (int i = 0; i < n; ++i) {
    const int device = i % 65536;
    if (i < 65536 && device != 0) {
      w.exec(fmt::format("INSERT INTO TARGET_INFO_GPU (vmId, id, name, smCount) VALUES "
                         "(0, {}, 'gpu {}', 132)", device, device));
    }
    w.call(995 + 10 * i, 998 + 10 * i, i + 1, 4);
    w.kernel(1000 + 10 * i, 1005 + 10 * i, device, 1, 7, i + 1);
  }
}

void spanningSyncs(const std::string& path, int n) { spanningCalls(path, n, 2); }
void spanningAllocs(const std::string& path, int n) { spanningCalls(path, n, 3); }

void streamWaits(const std::string& path, int n) {
  Writer w(path);
  for (int i = 0; i < n; ++i) {
    const std::int64_t start = 1000 + std::int64_t{i} * 20;
    w.kernel(start, start + 10, 0, 1, 7 + i % 2);  // no launch call
    w.exec(fmt::format("INSERT INTO CUPTI_ACTIVITY_KIND_SYNCHRONIZATION (start, end, deviceId, "
                       "contextId, streamId, correlationId, globalPid, syncType, eventId) VALUES "
                       "({}, {}, 0, 1, {}, {}, {}, 2, {})", start - 5, start - 4, 7 + i % 2, i + 1,
                       cuoverlap::schema::encodeGlobalPid(42), i + 1));
  }
}

void fillingKernels(const std::string& path, int n) {
  Writer w(path);
  for (int i = 0; i < n; ++i) w.kernel(1000 + i, 1000 + std::int64_t{n} * 10 + i, 0, 1, 7 + i % 4, 0, 4096);
}

// Counts bytes instead of keeping them.
class NullBuffer : public std::streambuf {
 protected:
  std::streamsize xsputn(const char*, std::streamsize n) override { return n; }
  int_type overflow(int_type c) override { return traits_type::not_eof(c); }
};

double seconds(const std::function<void()>& work) {
  const auto start = std::chrono::steady_clock::now();
  work();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

struct Shape {
  const char* name;
  void (*write)(const std::string&, int);
  bool do_export;     // time the Perfetto export, else read + analyze
  int max_size = 0;   // the shape exists up to this size only (0: any)
};

const Shape kShapes[] = {
    {"many devices (read+analyze)", manyDevices, false},
    // One kernel per device only up to 65536 (16-bit device ids); beyond, each device's kernels
    // spread over the whole trace and its view holds every call in between (docs/BENCHMARKS.md).
    {"many devices + calls (read+analyze)", manyDevicesWithCalls, false, 65536},
    {"many contexts (read+analyze)", manyContexts, false},
    {"overlapping ops (export)", overlappingOps, true},
    {"overlapping NVTX (export)", overlappingNvtx, true},
    {"spanning syncs (read+analyze)", spanningSyncs, false},
    {"spanning allocs (read+analyze)", spanningAllocs, false},
    {"stream waits (read+analyze)", streamWaits, false},
    {"filling kernels (read+analyze)", fillingKernels, false},
};

std::vector<int> parseSizes(const std::string& text) {
  std::vector<int> sizes;
  std::size_t at = 0;
  while (at < text.size()) {
    std::size_t comma = text.find(',', at);
    sizes.push_back(std::stoi(text.substr(at, comma - at)));
    at = comma == std::string::npos ? text.size() : comma + 1;
  }
  return sizes;
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir = (std::filesystem::temp_directory_path() / "cuoverlap-bench-shapes").string();
  std::vector<int> sizes{1000, 4000, 16000, 64000};
  double limit = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--dir") dir = argv[i + 1];
    else if (flag == "--sizes") sizes = parseSizes(argv[i + 1]);
    else if (flag == "--limit") limit = std::stod(argv[i + 1]);
  }
  std::filesystem::create_directories(dir);
  fmt::print("{:<36}", "shape (seconds)");
  for (int n : sizes) fmt::print("{:>10}", n);
  fmt::print("\n");
  bool over = false;
  for (const Shape& shape : kShapes) {
    fmt::print("{:<36}", shape.name);
    double last = 0;
    for (int n : sizes) {
      if (shape.max_size > 0 && n > shape.max_size) {
        fmt::print("{:>10}", "-");
        continue;
      }
      const std::string path = fmt::format("{}/shape_{}.sqlite", dir, n);
      shape.write(path, n);
      if (shape.do_export) {
        const Trace trace = cuoverlap::readTrace(path);
        NullBuffer sink;
        std::ostream out(&sink);
        last = seconds([&] { cuoverlap::writePerfettoTrace(trace, out); });
      } else {
        last = seconds([&] {
          const Trace trace = cuoverlap::readTrace(path);
          cuoverlap::analyzeTrace(trace, cuoverlap::AnalysisOptions{});
        });
      }
      fmt::print("{:>10.3f}", last);
      std::fflush(stdout);
      std::filesystem::remove(path);
    }
    fmt::print("\n");
    over = over || (limit > 0 && last > limit);
  }
  return over ? 1 : 0;
}
