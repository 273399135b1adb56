// Writes Kineto (PyTorch profiler) JSON traces for tests, in the layout torch.profiler writes,
// and counts what it wrote: the counts are the independent reference the importer must match.
// Times are integer ns here and written as microseconds with three decimals, so the expected
// model values are known exactly.
#pragma once

#include <zlib.h>

#include <cstdint>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace cuoverlap::testing {

inline std::string microsText(std::int64_t ns) {
  const char* sign = ns < 0 ? "-" : "";
  const std::int64_t m = ns < 0 ? -ns : ns;
  std::string frac = std::to_string(m % 1000);
  return sign + std::to_string(m / 1000) + "." + std::string(3 - frac.size(), '0') + frac;
}

class KinetoJsonBuilder {
 public:
  std::map<std::string, int> count;  // events written per cat ("M" for metadata)
  std::optional<int> rank;
  std::optional<int> world_size;
  std::optional<std::int64_t> base_ns;

  void event(const std::string& cat, const std::string& name, int pid, int tid, std::int64_t ts_ns,
             std::int64_t dur_ns, const std::string& args) {
    add(cat, "{\"ph\": \"X\", \"cat\": \"" + cat + "\", \"name\": \"" + name + "\", \"pid\": " +
                 std::to_string(pid) + ", \"tid\": " + std::to_string(tid) + ", \"ts\": " +
                 microsText(ts_ns) + ", \"dur\": " + microsText(dur_ns) + ", \"args\": {" + args + "}}");
  }
  void kernel(const std::string& name, int device, int stream, std::int64_t ts, std::int64_t dur,
              std::uint32_t correlation) {
    event("kernel", name, device, stream, ts, dur, gpuArgs(device, stream, correlation) +
          ", \"registers per thread\": 32, \"shared memory\": 1024, \"blocks per SM\": 0.5, "
          "\"grid\": [4, 2, 1], \"block\": [128, 1, 1], \"est. achieved occupancy %\": 0");
  }
  void memcpy(const std::string& name, int device, int stream, std::int64_t ts, std::int64_t dur,
              std::uint32_t correlation, std::uint64_t bytes) {
    event("gpu_memcpy", name, device, stream, ts, dur, gpuArgs(device, stream, correlation) +
          ", \"bytes\": " + std::to_string(bytes) + ", \"memory bandwidth (GB/s)\": 1.5");
  }
  void memset(int device, int stream, std::int64_t ts, std::int64_t dur, std::uint32_t correlation) {
    event("gpu_memset", "Memset (Device)", device, stream, ts, dur,
          gpuArgs(device, stream, correlation) + ", \"bytes\": 256, \"memory bandwidth (GB/s)\": 0.1");
  }
  void runtime(const std::string& name, int pid, int tid, std::int64_t ts, std::int64_t dur,
               std::uint32_t correlation, bool driver = false) {
    event(driver ? "cuda_driver" : "cuda_runtime", name, pid, tid, ts, dur,
          "\"cbid\": 211, \"correlation\": " + std::to_string(correlation));
  }
  void flow(char ph, std::uint32_t id, int pid, int tid, std::int64_t ts) {
    add("ac2g", std::string("{\"ph\": \"") + ph + "\", \"id\": " + std::to_string(id) +
                    ", \"pid\": " + std::to_string(pid) + ", \"tid\": " + std::to_string(tid) +
                    ", \"ts\": " + microsText(ts) + ", \"cat\": \"ac2g\", \"name\": \"ac2g\"" +
                    (ph == 'f' ? ", \"bp\": \"e\"}" : "}"));
  }
  void metadata(const std::string& name, int pid, const std::string& args) {
    add("M", "{\"name\": \"" + name + "\", \"ph\": \"M\", \"ts\": 0.000, \"pid\": " + std::to_string(pid) +
                 ", \"tid\": 0, \"args\": {" + args + "}}");
  }
  void raw(const std::string& cat, const std::string& json) { add(cat, json); }

  std::string text() const {
    std::string out = "{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [\n    {\"id\": 0, \"name\": "
                      "\"Test GPU\", \"totalGlobalMem\": 1024, \"computeMajor\": 9, \"computeMinor\": 0, "
                      "\"numSms\": 132, \"maxThreadsPerMultiprocessor\": 2048}\n  ],\n";
    if (rank) {
      out += "  \"distributedInfo\": {\"backend\": \"nccl\", \"rank\": " + std::to_string(*rank) +
             ", \"world_size\": " + std::to_string(world_size.value_or(1)) +
             ", \"pg_count\": 1, \"pg_config\": [{\"pg_name\": \"0\", \"ranks\": [0, 1]}]},\n";
    }
    if (base_ns) out += "  \"baseTimeNanoseconds\": " + std::to_string(*base_ns) + ",\n";
    out += "  \"traceEvents\": [";
    for (std::size_t i = 0; i < events_.size(); ++i) out += (i ? ",\n  " : "\n  ") + events_[i];
    return out + "\n  ],\n  \"traceName\": \"test.json\"\n}\n";
  }

  void write(const std::string& path) const {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text();
  }
  void writeGzip(const std::string& path) const {
    gzFile file = gzopen(path.c_str(), "wb");
    const std::string body = text();
    gzwrite(file, body.data(), static_cast<unsigned>(body.size()));
    gzclose(file);
  }

 private:
  static std::string gpuArgs(int device, int stream, std::uint32_t correlation) {
    return "\"External id\": 7, \"queued\": 0, \"device\": " + std::to_string(device) +
           ", \"context\": 1, \"stream\": " + std::to_string(stream) +
           ", \"correlation\": " + std::to_string(correlation);
  }
  void add(const std::string& cat, std::string json) {
    ++count[cat];
    events_.push_back(std::move(json));
  }
  std::vector<std::string> events_;
};

}  // namespace cuoverlap::testing
