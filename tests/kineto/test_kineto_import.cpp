// The Kineto importer against traces the test writes itself (kineto_json_builder.h): every
// count is compared with the builder's own count of the events it wrote, and every timestamp
// with the integer nanoseconds it was written from.
#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <algorithm>

#include "cuoverlap/model.h"
#include "cuoverlap/progress.h"
#include "cuoverlap/reader.h"
#include "kineto/json_input.h"
#include "kineto/numbers.h"
#include "kineto_json_builder.h"
#include "synthetic_trace.h"

using namespace cuoverlap;
using cuoverlap::testing::KinetoJsonBuilder;

namespace {

constexpr int kPid = 4242;
constexpr int kTid = 4243;
constexpr std::int64_t kEpochNs = 1'790'857'026'123'456'789;  // 19 digits: a double loses the ns

struct StepPlan {
  std::int64_t start = 0;
  std::int64_t end = 0;
  int kernels = 0;
  int memcpys = 0;
  int memsets = 0;
};

// A training loop as torch.profiler records it: per step a ProfilerStep#N range, aten ops,
// H2D copies, a varying number of kernels, a memset and a pageable D2H copy; each GPU op
// launched by a runtime call with its correlation id and an ac2g flow.
std::vector<StepPlan> writeTrainingLoop(KinetoJsonBuilder& json, int steps, std::int64_t t0) {
  std::vector<StepPlan> plan;
  std::uint32_t correlation = 100;
  std::int64_t t = t0;
  json.metadata("process_name", kPid, "\"name\": \"python3\"");
  json.metadata("process_labels", 0, "\"labels\": \"GPU 0\"");
  for (int s = 0; s < steps; ++s) {
    StepPlan step;
    step.start = t;
    auto launch = [&](const std::string& api, std::int64_t gpu_start, bool driver = false) {
      json.runtime(api, kPid, kTid, t + 1'001, 3'333, ++correlation, driver);
      json.flow('s', correlation, kPid, kTid, t + 1'001);
      json.flow('f', correlation, 0, 7, gpu_start);
      t += 5'007;
      return correlation;
    };
    json.raw("cpu_op", "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::linear\", \"pid\": 4242, "
                       "\"tid\": 4243, \"ts\": " + testing::microsText(t) + ", \"dur\": 1.5, \"args\": "
                       "{\"External id\": 3, \"Input Dims\": [[1024, 1024], []], \"Ev Idx\": 9}}");
    for (int c = 0; c < 2; ++c, ++step.memcpys) {
      const std::int64_t gpu = t + 2'000;
      json.memcpy("Memcpy HtoD (Pinned -> Device)", 0, 7, gpu, 1'999, launch("cudaMemcpyAsync", gpu), 1 << 20);
    }
    for (int k = 0; k < 3 + s % 4; ++k, ++step.kernels) {
      const std::int64_t gpu = t + 2'500;
      json.kernel(k % 2 ? "void gemm<float>(int)" : "elementwise_kernel", 0, 7, gpu, 4'321,
                  launch(k == 2 ? "cuLaunchKernel" : "cudaLaunchKernel", gpu, k == 2));
    }
    const std::int64_t memset_at = t + 2'600;
    json.memset(0, 7, memset_at, 1'024, launch("cudaMemsetAsync", memset_at));
    ++step.memsets;
    const std::int64_t d2h = t + 3'000;
    json.memcpy("Memcpy DtoH (Device -> Pageable)", 0, 7, d2h, 2'500, launch("cudaMemcpy", d2h), 4096);
    ++step.memcpys;
    t += 10'000;
    step.end = t;
    json.event("user_annotation", "ProfilerStep#" + std::to_string(s), kPid, kTid, step.start,
               step.end - step.start, "\"External id\": 1");
    json.event("gpu_user_annotation", "ProfilerStep#" + std::to_string(s), 0, 7, step.start,
               step.end - step.start, "\"External id\": 1");
    plan.push_back(step);
  }
  return plan;
}

std::size_t countOps(const Trace& trace, OpKind kind, Ns from = 0, Ns to = kEpochNs * 2) {
  return static_cast<std::size_t>(std::count_if(trace.ops.begin(), trace.ops.end(), [&](const GpuOp& op) {
    return op.kind == kind && op.start >= from && op.start < to;
  }));
}

}  // namespace

TEST_CASE("Kineto import: counts equal the events the test wrote, per step", "[kineto]") {
  KinetoJsonBuilder json;
  json.rank = 1;
  json.world_size = 2;
  const std::vector<StepPlan> plan = writeTrainingLoop(json, 7, kEpochNs);
  const std::string path = testing::tempTracePath("loop.pt.trace.json");
  json.write(path);
  const Trace trace = readTrace(path);

  CHECK(trace.source == TraceSource::kKineto);
  CHECK(countOps(trace, OpKind::kKernel) == static_cast<std::size_t>(json.count["kernel"]));
  CHECK(countOps(trace, OpKind::kMemcpy) == static_cast<std::size_t>(json.count["gpu_memcpy"]));
  CHECK(countOps(trace, OpKind::kMemset) == static_cast<std::size_t>(json.count["gpu_memset"]));
  CHECK(trace.runtime_calls.size() ==
        static_cast<std::size_t>(json.count["cuda_runtime"] + json.count["cuda_driver"]));
  CHECK(std::count_if(trace.runtime_calls.begin(), trace.runtime_calls.end(),
                      [](const RuntimeCall& c) { return c.is_driver; }) == json.count["cuda_driver"]);
  CHECK(trace.nvtx.size() ==
        static_cast<std::size_t>(json.count["user_annotation"] + json.count["gpu_user_annotation"]));
  for (std::size_t s = 0; s < plan.size(); ++s) {
    INFO("step " << s);
    CHECK(countOps(trace, OpKind::kKernel, plan[s].start, plan[s].end) == static_cast<std::size_t>(plan[s].kernels));
    CHECK(countOps(trace, OpKind::kMemcpy, plan[s].start, plan[s].end) == static_cast<std::size_t>(plan[s].memcpys));
    CHECK(countOps(trace, OpKind::kMemset, plan[s].start, plan[s].end) == static_cast<std::size_t>(plan[s].memsets));
  }
  REQUIRE(trace.processes.size() == 1);
  CHECK(trace.processes[0].pid == static_cast<std::uint32_t>(kPid));
  CHECK(trace.processes[0].command == "python3");
  CHECK(trace.processes[0].rank == 1);
  CHECK(trace.processes[0].world_size == 2);
  REQUIRE(trace.devices.size() == 1);
  CHECK(trace.devices[0].name == "Test GPU");
  CHECK(trace.devices[0].sm_count == 132);
}

TEST_CASE("Kineto import: fields of ops, calls and ranges", "[kineto]") {
  KinetoJsonBuilder json;
  writeTrainingLoop(json, 1, kEpochNs);
  const std::string path = testing::tempTracePath("fields.json");
  json.write(path);
  const Trace trace = readTrace(path);

  const GpuOp& h2d = trace.ops.front();
  CHECK(h2d.kind == OpKind::kMemcpy);
  CHECK(h2d.start == kEpochNs + 2'000);  // exact to the ns at 19 significant digits
  CHECK(h2d.end == kEpochNs + 2'000 + 1'999);
  CHECK(h2d.copy_kind == CopyKind::kHtoD);
  CHECK(h2d.src_kind == MemKind::kPinned);
  CHECK(h2d.dst_kind == MemKind::kDevice);
  CHECK(h2d.bytes == (1u << 20));
  CHECK(h2d.stream_id == 7);
  CHECK(h2d.context_id == 1);
  CHECK(h2d.correlation_id == 101);
  CHECK(h2d.pid == static_cast<std::uint32_t>(kPid));  // from the runtime call, not the GPU pid 0
  CHECK((h2d.flags & op_flag::kAsyncKnown) != 0);
  CHECK((h2d.flags & op_flag::kAsync) != 0);

  auto d2h = std::find_if(trace.ops.begin(), trace.ops.end(),
                          [](const GpuOp& op) { return op.copy_kind == CopyKind::kDtoH; });
  REQUIRE(d2h != trace.ops.end());
  CHECK(d2h->dst_kind == MemKind::kPageable);
  CHECK((d2h->flags & op_flag::kAsync) == 0);  // cudaMemcpy: synchronous

  auto kernel = std::find_if(trace.ops.begin(), trace.ops.end(),
                             [](const GpuOp& op) { return op.kind == OpKind::kKernel; });
  REQUIRE(kernel != trace.ops.end());
  CHECK(trace.str(kernel->name) == "elementwise_kernel");
  CHECK(kernel->grid_blocks == 8);
  CHECK(kernel->block_threads == 128);
  CHECK(kernel->registers_per_thread == 32);
  CHECK(kernel->shared_mem_bytes == 1024);

  const RuntimeCall& first = trace.runtime_calls.front();
  CHECK(trace.str(first.name) == "cudaMemcpyAsync");
  CHECK(first.tid == static_cast<std::uint32_t>(kTid));
  CHECK(first.start == kEpochNs + 1'001);
  CHECK(first.end == kEpochNs + 1'001 + 3'333);

  auto step = std::find_if(trace.nvtx.begin(), trace.nvtx.end(), [&](const NvtxRange& r) {
    return trace.str(r.text) == "ProfilerStep#0" && r.domain == kNoString;
  });
  REQUIRE(step != trace.nvtx.end());
  CHECK(step->event_type == static_cast<std::int32_t>(schema::NvtxEventType::kPushPopRange));
  CHECK(step->tid == static_cast<std::uint32_t>(kTid));
  auto gpu_step = std::find_if(trace.nvtx.begin(), trace.nvtx.end(), [&](const NvtxRange& r) {
    return trace.str(r.domain) == "gpu_user_annotation";
  });
  REQUIRE(gpu_step != trace.nvtx.end());
  CHECK(gpu_step->pid == static_cast<std::uint32_t>(kPid));
}

TEST_CASE("Kineto import: gzip and plain JSON give the same model", "[kineto]") {
  KinetoJsonBuilder json;
  writeTrainingLoop(json, 4, kEpochNs);
  const std::string plain = testing::tempTracePath("same.json");
  const std::string gz = testing::tempTracePath("same.json.gz");
  json.write(plain);
  json.writeGzip(gz);
  const Trace a = readTrace(plain);
  const Trace b = readTrace(gz);
  REQUIRE(a.ops.size() == b.ops.size());
  for (std::size_t i = 0; i < a.ops.size(); ++i) {
    CHECK(a.ops[i].start == b.ops[i].start);
    CHECK(a.ops[i].end == b.ops[i].end);
    CHECK(a.str(a.ops[i].name) == b.str(b.ops[i].name));
  }
  CHECK(a.runtime_calls.size() == b.runtime_calls.size());
  CHECK(a.nvtx.size() == b.nvtx.size());
}

// The reading phase's percentage (the progress line): bytes of the file as stored, compressed or
// not, reported as each chunk is read, all of them at the end.
TEST_CASE("Kineto import: progress in bytes of the file read", "[kineto][progress]") {
  KinetoJsonBuilder json;
  writeTrainingLoop(json, 3000, kEpochNs);  // several 1 MiB chunks of JSON text
  const std::string plain = testing::tempTracePath("progress.json");
  const std::string gz = testing::tempTracePath("progress.json.gz");
  json.write(plain);
  json.writeGzip(gz);
  for (const std::string& path : {plain, gz}) {
    struct stat st {};
    REQUIRE(::stat(path.c_str(), &st) == 0);
    const auto size = static_cast<std::uint64_t>(st.st_size);
    progress::phase("reading", size);
    kineto::JsonInput input(path);
    const std::uint64_t first = progress::snapshot().done;
    INFO(path << ": " << size << " bytes, " << first << " after the first chunk");
    CHECK(first > 0);
    if (path == plain) CHECK(first < size);  // 1 MiB of several
    while (input.Take() != '\0') {
    }
    CHECK(progress::snapshot().done == size);
  }
}

TEST_CASE("Kineto import: ts relative to baseTimeNanoseconds", "[kineto]") {
  KinetoJsonBuilder json;
  json.base_ns = 1'790'857'026'000'000'000;
  json.kernel("k", 0, 7, 4'481'602'301'401'241, 32'832, 1);
  const std::string path = testing::tempTracePath("base.json");
  json.write(path);
  const Trace trace = readTrace(path);
  REQUIRE(trace.ops.size() == 1);
  CHECK(trace.ops[0].start == 1'790'857'026'000'000'000 + 4'481'602'301'401'241);
  CHECK(trace.ops[0].duration() == 32'832);
}

TEST_CASE("microsToNs: digits as written, no float drift", "[kineto]") {
  using kineto::microsToNs;
  CHECK(microsToNs("1790857026123456.789") == 1'790'857'026'123'456'789);
  CHECK(microsToNs("0.001") == 1);
  CHECK(microsToNs("5") == 5'000);
  CHECK(microsToNs("12.5") == 12'500);
  CHECK(microsToNs("2.5e1") == 25'000);
  CHECK(microsToNs("1E-3") == 1);
  CHECK(microsToNs("-3.25") == -3'250);
  CHECK(microsToNs("0.0004") == 0);
  CHECK(microsToNs("0.0005") == 1);
  CHECK_FALSE(microsToNs("NaN"));
  CHECK_FALSE(microsToNs("Infinity"));
  CHECK_FALSE(microsToNs("-Infinity"));
  CHECK_FALSE(microsToNs(""));
  CHECK_FALSE(microsToNs("1e400"));
  CHECK_FALSE(microsToNs("4611686018427388"));  // 2^62 ns and more: beyond the model's range
  CHECK_FALSE(microsToNs("12abc"));
  CHECK(kineto::parseInteger("7") == 7);
  CHECK(kineto::parseInteger("-1") == -1);
  CHECK(kineto::parseInteger("7.0") == 7);
  CHECK_FALSE(kineto::parseInteger("7.5"));
}

TEST_CASE("Kineto import: a UTF-8 byte order mark before the JSON", "[kineto]") {
  KinetoJsonBuilder json;
  json.kernel("k", 0, 7, 1'000, 2'000, 1);
  const std::string path = testing::tempTracePath("bom.json");
  std::ofstream(path, std::ios::binary) << "\xEF\xBB\xBF" << json.text();
  const Trace trace = readTrace(path);
  CHECK(trace.source == TraceSource::kKineto);
  CHECK(trace.ops.size() == 1);
}
