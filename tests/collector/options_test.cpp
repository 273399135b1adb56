// Per-process naming (%r, %p, clashes), rank variables of each launcher, the collector's options
// from the environment, and the lean API selection: what the collector decides before any CUDA
// call, testable without a GPU.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <map>
#include <string>

#include "collector_env.h"
#include "collector_options.h"
#include "cupti/api_selection.h"

using namespace cuoverlap;

namespace {

// Sets variables for one test and restores them after.
struct Environment {
  std::map<std::string, std::string> saved;
  std::map<std::string, bool> had;
  void set(const std::string& name, const char* value) {
    if (!had.count(name)) {
      const char* old = std::getenv(name.c_str());
      had[name] = old != nullptr;
      if (old != nullptr) saved[name] = old;
    }
    if (value == nullptr) unsetenv(name.c_str());
    else setenv(name.c_str(), value, 1);
  }
  ~Environment() {
    for (const auto& [name, present] : had) {
      if (present) setenv(name.c_str(), saved[name].c_str(), 1);
      else unsetenv(name.c_str());
    }
  }
};

}  // namespace

TEST_CASE("%r is the rank, or pid<PID> for a process without one; %p/%r make a pattern per process") {
  using schema::expandOutputPattern;
  CHECK(expandOutputPattern("run-%r.sqlite", 123, "h", 3) == "run-3.sqlite");
  CHECK(expandOutputPattern("run-%r.sqlite", 123, "h") == "run-pid123.sqlite");
  CHECK(expandOutputPattern("%h-%r-%p-%%r", 9, "gpu1", 0) == "gpu1-0-9-%r");
  CHECK(schema::isPerProcessPattern("run-%r.sqlite"));
  CHECK(schema::isPerProcessPattern("run-%p.sqlite"));
  CHECK_FALSE(schema::isPerProcessPattern("run-%h.sqlite"));
  CHECK_FALSE(schema::isPerProcessPattern("run-%%p.sqlite"));
  CHECK_FALSE(schema::isPerProcessPattern("run.sqlite%"));
}

TEST_CASE("rank variables: torchrun, Open MPI, PMI, Slurm, first found wins, junk ignored") {
  auto from = [](std::map<std::string, std::string> vars) {
    return schema::rankInfo([vars](const char* name) -> const char* {
      auto it = vars.find(name);
      return it != vars.end() ? it->second.c_str() : nullptr;
    });
  };
  schema::RankInfo torch = from({{"RANK", "3"}, {"LOCAL_RANK", "1"}, {"WORLD_SIZE", "8"}});
  CHECK(torch.rank == 3);
  CHECK(torch.local_rank == 1);
  CHECK(torch.world_size == 8);
  schema::RankInfo mpi = from({{"OMPI_COMM_WORLD_RANK", "5"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                               {"OMPI_COMM_WORLD_SIZE", "6"}});
  CHECK(mpi.rank == 5);
  CHECK(mpi.local_rank == 1);
  CHECK(mpi.world_size == 6);
  CHECK(from({{"PMI_RANK", "2"}, {"PMI_SIZE", "4"}}).rank == 2);
  schema::RankInfo slurm = from({{"SLURM_PROCID", "7"}, {"SLURM_LOCALID", "3"}, {"SLURM_NTASKS", "16"}});
  CHECK(slurm.rank == 7);
  CHECK(slurm.local_rank == 3);
  CHECK(slurm.world_size == 16);
  CHECK(from({{"RANK", "1"}, {"SLURM_PROCID", "9"}}).rank == 1);
  CHECK_FALSE(from({{"RANK", "-1"}}).rank.has_value());
  CHECK_FALSE(from({{"RANK", "1x"}}).rank.has_value());
  CHECK_FALSE(from({{"RANK", ""}}).rank.has_value());
  CHECK_FALSE(from({{"RANK", "99999999999999"}}).rank.has_value());
  CHECK_FALSE(from({}).world_size.has_value());
}

TEST_CASE("a taken per-process name gets a pid suffix before the extension") {
  using collector::withPidSuffix;
  CHECK(withPidSuffix("run-0.sqlite", 42) == "run-0-pid42.sqlite");
  CHECK(withPidSuffix("dir.d/run", 42) == "dir.d/run-pid42");
  CHECK(withPidSuffix("dir/.hidden", 42) == "dir/.hidden-pid42");
}

TEST_CASE("collector options from the environment: output, rank, API mode, overhead knobs") {
  Environment env;
  env.set(schema::kEnvOutput, "/tmp/x-%r.sqlite");
  env.set("RANK", "4");
  env.set("LOCAL_RANK", "0");
  env.set("WORLD_SIZE", "8");
  env.set(schema::kEnvRunDir, "/tmp/run");
  env.set(schema::kEnvApi, "all");
  env.set(schema::kEnvHostBufferKb, "1024");
  env.set(schema::kEnvDeviceBufferKb, "2048");
  env.set(schema::kEnvDeviceBufferPool, "16");
  env.set(schema::kEnvPerThreadBuffers, "0");
  env.set(schema::kEnvCommitMs, "50");
  env.set(schema::kEnvCuptiFlushMs, "20");
  env.set(schema::kEnvGpuMetricsUs, "100");
  env.set(schema::kEnvQuiet, "1");
  env.set(schema::kEnvCommand, "python train.py");
  env.set(schema::kEnvRootPid, std::to_string(getpid()).c_str());
  collector::CollectorOptions o = collector::optionsFromEnvironment();
  CHECK(o.output_path == "/tmp/x-4.sqlite");
  CHECK(o.per_process);
  CHECK(o.run_dir == "/tmp/run");
  CHECK(o.rank.rank == 4);
  CHECK(o.api == collector::ApiTracing::kAll);
  CHECK(o.host_buffer_bytes == 1024u << 10);
  CHECK(o.device_buffer_bytes == 2048u << 10);
  CHECK(o.device_buffer_pool == 16);
  CHECK_FALSE(o.per_thread_buffers);
  CHECK(o.commit_interval.count() == 50);
  CHECK(o.cupti_flush_period_ms == 20);
  CHECK(o.gpu_metrics_interval_ns == 100'000);
  CHECK(o.command == "python train.py");
  // Another process (a rank torchrun started) describes itself, not record's command line.
  env.set(schema::kEnvRootPid, "1");
  CHECK(collector::optionsFromEnvironment().command != "python train.py");
  // Defaults, and junk falls back to them.
  env.set(schema::kEnvApi, nullptr);
  env.set(schema::kEnvCommitMs, "5000000");
  env.set(schema::kEnvHostBufferKb, "lots");
  env.set(schema::kEnvGpuMetricsUs, "often");  // GPU metrics stay off
  collector::CollectorOptions d = collector::optionsFromEnvironment();
  CHECK(d.gpu_metrics_interval_ns == 0);
  CHECK(d.api == collector::ApiTracing::kLean);
  CHECK(d.commit_interval.count() == 100);
  CHECK(d.host_buffer_bytes == 4096u << 10);
}

TEST_CASE("lean API selection keeps what the analysis reads and drops the per-op queries") {
  using collector::activity::isLeanDriverApi;
  using collector::activity::isLeanRuntimeApi;
  for (const char* kept : {"cudaLaunchKernel_v7000", "cudaLaunchKernelExC_v11060", "cudaMemcpyAsync_v3020",
                           "cudaMemcpyAsync_ptsz_v7000", "cudaMemsetAsync_v3020", "cudaStreamSynchronize_v3020",
                           "cudaDeviceSynchronize_v3020", "cudaEventRecord_v3020", "cudaEventQuery_v3020",
                           "cudaEventSynchronize_v3020", "cudaStreamWaitEvent_v3020",
                           "cudaStreamCreateWithFlags_v5000", "cudaStreamDestroy_v5050", "cudaMalloc_v3020",
                           "cudaMallocAsync_v11020", "cudaFree_v3020", "cudaFreeHost_v3020",
                           "cudaHostAlloc_v3020", "cudaHostRegister_v4000", "cudaGraphLaunch_v10000",
                           "cudaGraphInstantiate_v10000", "cudaSetDevice_v3020", "cudaLibraryLoadData_v12000"}) {
    INFO(kept);
    CHECK(isLeanRuntimeApi(kept));
  }
  for (const char* dropped : {"cudaGetDevice_v3020", "cudaGetLastError_v3020", "cudaPeekAtLastError_v3020",
                              "cudaGetDeviceProperties_v3020", "cudaStreamGetCaptureInfo_v10010",
                              "cudaDeviceGetAttribute_v5000", "cudaFuncGetAttributes_v3020",
                              "cudaStreamIsCapturing_v10000", "cudaEventCreate_v3020"}) {
    INFO(dropped);
    CHECK_FALSE(isLeanRuntimeApi(dropped));
  }
  for (const char* kept : {"cuLaunchKernel", "cuLaunchKernelEx", "cuMemcpyHtoDAsync_v2", "cuMemsetD32Async",
                           "cuStreamSynchronize", "cuCtxSynchronize", "cuEventRecord", "cuStreamWaitEvent",
                           "cuMemAlloc_v2", "cuMemFree_v2", "cuMemHostRegister_v2", "cuGraphLaunch",
                           "cuModuleLoadData", "cuLibraryLoadData", "cuLinkComplete", "cuCtxSetCurrent",
                           "cuMemCreate", "cuMemMap"}) {
    INFO(kept);
    CHECK(isLeanDriverApi(kept));
  }
  for (const char* dropped : {"cuCtxGetCurrent", "cuCtxGetDevice", "cuDeviceGetAttribute", "cuGetProcAddress_v2",
                              "cuPointerGetAttribute", "cuStreamGetCaptureInfo_v2", "cuFuncGetAttribute",
                              "cuModuleGetFunction", "cuMemHostGetDevicePointer_v2"}) {
    INFO(dropped);
    CHECK_FALSE(isLeanDriverApi(dropped));
  }
}
