// Kineto importer benchmark (not a timed test). Writes a synthetic torch.profiler trace of about
// --size-mb MB with the event mix of a real eager training loop (torch_eager_nvtx.kineto.json:
// per GPU op about 4 cpu_op, 1.2 runtime calls, 2.3 flow events), then in a child process each:
//   import   readTrace() of the file: parse + model + sort (what `cuoverlap analyze` pays)
//   sax-only nlohmann::json::sax_parse of the same file with a handler that does nothing: the
//            floor of the alternative parser that is already a dependency
// and prints MB/s (of JSON text) per wall second and per CPU second of the child (the 2-core box
// is shared, so wall time includes waiting for a core), the ops kept and the peak RSS. With --gzip the file is also
// written gzip-compressed (level 1) and its import timed (MB/s of the decompressed text).
//
//   cuoverlap_bench_kineto [--size-mb 1024] [--path /tmp/cuoverlap_kineto_bench.json] [--gzip]
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "cuoverlap/reader.h"

namespace {

std::string micros(std::int64_t ns) {
  char text[48];
  std::snprintf(text, sizeof text, "%lld.%03lld", static_cast<long long>(ns / 1000),
                static_cast<long long>(ns % 1000));
  return text;
}

// One training step's worth of events: 40 GPU ops, as torch.profiler writes them.
void appendStep(std::string& out, int step, std::int64_t& t, std::uint32_t& correlation) {
  const std::int64_t step_start = t;
  std::string ops;
  for (int i = 0; i < 40; ++i) {
    for (int c = 0; c < 4; ++c) {
      out += "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::addmm\", \"pid\": 1188, \"tid\": 1188, \"ts\": " +
             micros(t + c * 1'100) + ", \"dur\": 1.201, \"args\": {\"External id\": " + std::to_string(correlation) +
             ", \"Record function id\": 0, \"Input Dims\": [[1024, 1024], [1024, 1024], []], \"Input type\": "
             "[\"float\", \"float\", \"Scalar\"], \"Concrete Inputs\": [\"\", \"\", \"1\"], \"Ev Idx\": 17}},\n";
    }
    ++correlation;
    const std::int64_t gpu = t + 9'000;
    out += "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 1188, \"tid\": 1188, \"ts\": " +
           micros(t + 4'500) + ", \"dur\": 4.427, \"args\": {\"External id\": 3, \"cbid\": 211, \"correlation\": " +
           std::to_string(correlation) + "}},\n";
    out += "{\"ph\": \"s\", \"id\": " + std::to_string(correlation) + ", \"pid\": 1188, \"tid\": 1188, \"ts\": " +
           micros(t + 4'500) + ", \"cat\": \"ac2g\", \"name\": \"ac2g\"},\n";
    out += "{\"ph\": \"f\", \"id\": " + std::to_string(correlation) + ", \"pid\": 0, \"tid\": 7, \"ts\": " +
           micros(gpu) + ", \"cat\": \"ac2g\", \"name\": \"ac2g\", \"bp\": \"e\"},\n";
    if (i % 10 == 0) {
      out += "{\"ph\": \"X\", \"cat\": \"gpu_memcpy\", \"name\": \"Memcpy HtoD (Pinned -> Device)\", \"pid\": 0, "
             "\"tid\": 7, \"ts\": " + micros(gpu) + ", \"dur\": 22.016, \"args\": {\"External id\": 4, \"device\": 0, "
             "\"context\": 1, \"stream\": 7, \"correlation\": " + std::to_string(correlation) +
             ", \"bytes\": 1048576, \"memory bandwidth (GB/s)\": 47.627906976744185}},\n";
    } else {
      out += "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize32x32x8_"
             "stage3_warpsize1x2x1_ffma_aligna4_alignc4_execute_kernel__5x_cublas\", \"pid\": 0, \"tid\": 7, \"ts\": " +
             micros(gpu) + ", \"dur\": 32.832, \"args\": {\"External id\": 14, \"queued\": 0, \"device\": 0, "
             "\"context\": 1, \"stream\": 7, \"correlation\": " + std::to_string(correlation) +
             ", \"registers per thread\": 80, \"shared memory\": 6912, \"blocks per SM\": 1.939394, \"warps per SM\": "
             "3.878788, \"grid\": [8, 32, 1], \"block\": [64, 1, 1], \"est. achieved occupancy %\": 6}},\n";
    }
    t += 10'007;
  }
  out += "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#" + std::to_string(step) +
         "\", \"pid\": 1188, \"tid\": 1188, \"ts\": " + micros(step_start) + ", \"dur\": " +
         micros(t - step_start) + ", \"args\": {\"External id\": 1}},\n";
}

std::uint64_t writeTrace(const std::string& path, std::uint64_t target_bytes, bool gzip) {
  std::FILE* plain = gzip ? nullptr : std::fopen(path.c_str(), "wb");
  gzFile packed = gzip ? gzopen(path.c_str(), "wb1") : nullptr;
  auto put = [&](const std::string& text) {
    if (plain) std::fwrite(text.data(), 1, text.size(), plain);
    else gzwrite(packed, text.data(), static_cast<unsigned>(text.size()));
  };
  std::string head = "{\n\"schemaVersion\": 1,\n\"deviceProperties\": [{\"id\": 0, \"name\": \"NVIDIA H200\", "
                     "\"numSms\": 132}],\n\"baseTimeNanoseconds\": 1790857026000000000,\n\"traceEvents\": [\n";
  put(head);
  std::uint64_t written = head.size();
  std::int64_t t = 4'481'602'177'311'905;
  std::uint32_t correlation = 0;
  std::string chunk;
  for (int step = 0; written < target_bytes; ++step) {
    chunk.clear();
    appendStep(chunk, step, t, correlation);
    put(chunk);
    written += chunk.size();
  }
  const std::string tail = "{\"name\": \"Record Window End\", \"ph\": \"i\", \"s\": \"g\", \"pid\": \"\", \"tid\": \"\", "
                           "\"ts\": " + micros(t) + "}\n],\n\"traceName\": \"bench\"\n}\n";
  put(tail);
  if (plain) std::fclose(plain);
  if (packed) gzclose(packed);
  return written + tail.size();
}

struct Measurement {
  double seconds = 0;
  double cpu_seconds = 0;  // user + system of the child: the box is shared, wall time waits too
  long max_rss_kib = 0;
  long ops = 0;
};

// Runs `work` in a child so that its peak RSS and CPU time are its own; the child sends back the
// count it returns through a pipe.
template <typename Work>
Measurement inChild(Work work) {
  int fds[2];
  if (pipe(fds) != 0) std::exit(1);
  std::fflush(stdout);
  const auto begin = std::chrono::steady_clock::now();
  const pid_t pid = fork();
  if (pid == 0) {
    const long count = work();
    if (write(fds[1], &count, sizeof count) != sizeof count) _exit(1);
    _exit(0);
  }
  int status = 0;
  rusage usage{};
  wait4(pid, &status, 0, &usage);
  Measurement m;
  m.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  m.max_rss_kib = usage.ru_maxrss;
  m.cpu_seconds = static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
                  static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
  if (read(fds[0], &m.ops, sizeof m.ops) != sizeof m.ops) m.ops = -1;
  close(fds[0]);
  close(fds[1]);
  return m;
}

struct NullSax : nlohmann::json::json_sax_t {
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override { ++objects; return true; }
  bool key(string_t&) override { return true; }
  bool end_object() override { return true; }
  bool start_array(std::size_t) override { return true; }
  bool end_array() override { return true; }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override { return false; }
  long objects = 0;
};

void report(const char* what, const Measurement& m, double mb) {
  std::printf("| %-26s | %8.2f | %8.1f | %8.2f | %8.1f | %10ld | %8.1f |\n", what, m.seconds,
              mb / m.seconds, m.cpu_seconds, mb / m.cpu_seconds, m.ops,
              static_cast<double>(m.max_rss_kib) / 1024.0);
}

}  // namespace

int main(int argc, char** argv) {
  std::uint64_t size_mb = 1024;
  std::string path = "/tmp/cuoverlap_kineto_bench.json";
  bool gzip = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--size-mb" && i + 1 < argc) size_mb = std::strtoull(argv[++i], nullptr, 10);
    else if (arg == "--path" && i + 1 < argc) path = argv[++i];
    else if (arg == "--gzip") gzip = true;
    else { std::fprintf(stderr, "usage: %s [--size-mb N] [--path FILE] [--gzip]\n", argv[0]); return 2; }
  }
  const std::uint64_t bytes = writeTrace(path, size_mb << 20, false);
  const double mb = static_cast<double>(bytes) / 1e6;
  std::printf("synthetic Kineto trace: %.1f MB (%s)\n\n", mb, path.c_str());
  std::printf("| run                        | wall (s) | MB/s wall | CPU (s) | MB/s CPU | ops kept | peak RSS (MiB) |\n");
  std::printf("| --- | ---: | ---: | ---: | ---: | ---: | ---: |\n");
  auto import = [&](const std::string& file) {
    return [file] { return static_cast<long>(cuoverlap::readTrace(file).ops.size()); };
  };
  inChild(import(path));  // warm the page cache
  report("import (.json)", inChild(import(path)), mb);
  report("nlohmann SAX, no model", inChild([&] {
    std::ifstream in(path, std::ios::binary);
    NullSax sax;
    nlohmann::json::sax_parse(in, &sax);
    return sax.objects;
  }), mb);
  if (gzip) {
    const std::string packed = path + ".gz";
    writeTrace(packed, size_mb << 20, true);
    report("import (.json.gz, level 1)", inChild(import(packed)), mb);
    std::filesystem::remove(packed);
  }
  std::filesystem::remove(path);
  return 0;
}
