// Run on a GPU host (scripts/gpu): nvcc -O2 -arch=sm_90 -std=c++17 pm_sampling_probe.cu -lcupti
// then ./a.out [INTERVAL_NS (20000)]. docs/collector.md, "GPU metrics by PM sampling (a probe)",
// holds what it printed.
// Can the collector sample the GPU's memory traffic while a traced program runs, and does it tell
// why kernels run longer side by side? Uses CUPTI's PM sampling API (cupti_pmsampling.h, CUDA
// 12.6+): the metrics that fit one pass, sampled every INTERVAL_NS of GPU time, over phases of
// kernels run alone and in pairs on two streams; prints each phase's CUPTI timestamps (the
// clock of the activity records) and every sample (start, end, metric values).
#include <cuda_runtime.h>
#include <cupti.h>
#include <cupti_pmsampling.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_target.h>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>
#define CK(x) do { CUptiResult r_ = (x); if (r_ != CUPTI_SUCCESS) { const char* s_; cuptiGetResultString(r_, &s_); printf("FAIL %s: %s\n", #x, s_); return 1; } } while (0)

__device__ unsigned long long gt() { unsigned long long t; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); return t; }
__global__ void stream_k(float* a, float* b, size_t n, int reps) {
  for (int r = 0; r < reps; ++r)
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) b[i] = a[i] * 1.0001f + r;
}
__global__ void touch_spin(unsigned* w, unsigned long long count, unsigned long long ns) {
  unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < count; i += stride) w[i] = w[i] * 3u + 1u;
  __shared__ unsigned long long s; __syncthreads(); if (threadIdx.x == 0) s = gt(); __syncthreads();
  while (gt() - s < ns) {}
}
static uint64_t ts() { uint64_t t; cuptiGetTimestamp(&t); return t; }

int main(int argc, char** argv) {
  uint64_t interval = argc > 1 ? atoll(argv[1]) : 20000;
  cudaSetDevice(0); cudaFree(0);
  CUpti_Profiler_Initialize_Params ip = {CUpti_Profiler_Initialize_Params_STRUCT_SIZE};
  CK(cuptiProfilerInitialize(&ip));
  CUpti_Device_GetChipName_Params cn = {CUpti_Device_GetChipName_Params_STRUCT_SIZE}; cn.deviceIndex = 0;
  CK(cuptiDeviceGetChipName(&cn)); printf("chip %s\n", cn.pChipName);
  CUpti_PmSampling_GetCounterAvailability_Params ca = {CUpti_PmSampling_GetCounterAvailability_Params_STRUCT_SIZE}; ca.deviceIndex = 0;
  CK(cuptiPmSamplingGetCounterAvailability(&ca));
  std::vector<uint8_t> avail(ca.counterAvailabilityImageSize); ca.pCounterAvailabilityImage = avail.data();
  CK(cuptiPmSamplingGetCounterAvailability(&ca));
  CUpti_Profiler_Host_Initialize_Params hi = {CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE};
  hi.profilerType = CUPTI_PROFILER_TYPE_PM_SAMPLING; hi.pChipName = cn.pChipName; hi.pCounterAvailabilityImage = avail.data();
  CK(cuptiProfilerHostInitialize(&hi));
  for (int t = 0; t < 3; ++t) {
    CUpti_Profiler_Host_GetBaseMetrics_Params bm = {CUpti_Profiler_Host_GetBaseMetrics_Params_STRUCT_SIZE};
    bm.pHostObject = hi.pHostObject; bm.metricType = (CUpti_MetricType)t;
    if (cuptiProfilerHostGetBaseMetrics(&bm) != CUPTI_SUCCESS) continue;
    printf("type %d: %zu base metrics; dram/sm/pcie:", t, bm.numMetrics);
    for (size_t i = 0; i < bm.numMetrics; ++i) { std::string m = bm.ppMetricNames[i]; if (m.find("dram") != std::string::npos || m.rfind("sm__", 0) == 0 && m.find("active") != std::string::npos || m.find("pcie") != std::string::npos) printf(" %s", m.c_str()); }
    printf("\n");
  }
  const char* cands[] = {"dram__throughput.avg.pct_of_peak_sustained_elapsed", "dram__bytes_read.sum", "dram__bytes_write.sum",
                         "lts__t_bytes.sum", "lts__throughput.avg.pct_of_peak_sustained_elapsed", "lts__t_sectors.sum",
                         "sm__warps_active.avg.pct_of_peak_sustained_elapsed", "sm__cycles_active.avg", "pcie__read_bytes.sum",
                         "pcie__write_bytes.sum", "l1tex__t_bytes.sum", "sm__ctas_active.avg"};
  std::vector<const char*> ok;
  std::vector<uint8_t> cfg;
  auto build = [&](std::vector<const char*> ms, std::vector<uint8_t>& out) -> size_t {
    CUpti_Profiler_Host_Initialize_Params h = {CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE};
    h.profilerType = CUPTI_PROFILER_TYPE_PM_SAMPLING; h.pChipName = cn.pChipName; h.pCounterAvailabilityImage = avail.data();
    if (cuptiProfilerHostInitialize(&h) != CUPTI_SUCCESS) return 99;
    CUpti_Profiler_Host_ConfigAddMetrics_Params am = {CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE};
    am.pHostObject = h.pHostObject; am.ppMetricNames = ms.data(); am.numMetrics = ms.size();
    if (cuptiProfilerHostConfigAddMetrics(&am) != CUPTI_SUCCESS) return 98;
    CUpti_Profiler_Host_GetConfigImageSize_Params cs = {CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE}; cs.pHostObject = h.pHostObject;
    cuptiProfilerHostGetConfigImageSize(&cs);
    out.assign(cs.configImageSize, 0);
    CUpti_Profiler_Host_GetConfigImage_Params gc = {CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE}; gc.pHostObject = h.pHostObject;
    gc.configImageSize = out.size(); gc.pConfigImage = out.data(); cuptiProfilerHostGetConfigImage(&gc);
    CUpti_Profiler_Host_GetNumOfPasses_Params np = {CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE}; np.pConfigImage = out.data(); np.configImageSize = out.size();
    cuptiProfilerHostGetNumOfPasses(&np);
    return np.numOfPasses;
  };
  for (const char* m : cands) {
    std::vector<const char*> t = ok; t.push_back(m);
    std::vector<uint8_t> img; size_t p = build(t, img);
    printf("with %s: passes %zu\n", m, p);
    if (p == 1) ok = t;
  }
  printf("passes %zu for %zu metrics\n", build(ok, cfg), ok.size());
  { CUpti_Profiler_Host_ConfigAddMetrics_Params am = {CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE};
    am.pHostObject = hi.pHostObject; am.ppMetricNames = ok.data(); am.numMetrics = ok.size(); CK(cuptiProfilerHostConfigAddMetrics(&am)); }
  CUpti_PmSampling_Enable_Params en = {CUpti_PmSampling_Enable_Params_STRUCT_SIZE}; en.deviceIndex = 0;
  CK(cuptiPmSamplingEnable(&en));
  CUpti_PmSampling_SetConfig_Params sc = {CUpti_PmSampling_SetConfig_Params_STRUCT_SIZE};
  sc.pPmSamplingObject = en.pPmSamplingObject; sc.configSize = cfg.size(); sc.pConfig = cfg.data();
  sc.hardwareBufferSize = 512ull << 20; sc.samplingInterval = interval; sc.triggerMode = CUPTI_PM_SAMPLING_TRIGGER_MODE_GPU_TIME_INTERVAL;
  sc.hwBufferAppendMode = CUPTI_PM_SAMPLING_HARDWARE_BUFFER_APPEND_MODE_KEEP_OLDEST;
  CK(cuptiPmSamplingSetConfig(&sc));
  size_t n = 64 << 20; float *a, *b, *c, *d; unsigned* w;
  cudaMalloc(&a, n * 4); cudaMalloc(&b, n * 4); cudaMalloc(&c, n * 4); cudaMalloc(&d, n * 4); cudaMalloc(&w, 26 << 20);
  cudaStream_t s1, s2; cudaStreamCreate(&s1); cudaStreamCreate(&s2);
  cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
  auto phase = [&](const char* name, auto fn) {
    cudaDeviceSynchronize(); uint64_t t0 = ts(); cudaEventRecord(e0); fn(); cudaEventRecord(e1); cudaDeviceSynchronize(); uint64_t t1 = ts();
    float ms; cudaEventElapsedTime(&ms, e0, e1); printf("PHASE %s %llu %llu %.3f ms\n", name, (unsigned long long)t0, (unsigned long long)t1, ms);
  };
  unsigned *w2, *w3, *w4; cudaMalloc(&w2, 26 << 20); cudaMalloc(&w3, 7 << 20); cudaMalloc(&w4, 7 << 20);
  auto work = [&]() {
    phase("stream_alone", [&] { stream_k<<<1056, 256, 0, s1>>>(a, b, n, 8); });
    phase("stream_pair", [&] { stream_k<<<1056, 256, 0, s1>>>(a, b, n, 8); stream_k<<<1056, 256, 0, s2>>>(c, d, n, 8); });
    phase("ts2112_26MB_alone", [&] { for (int i = 0; i < 20; ++i) touch_spin<<<2112, 256, 0, s1>>>(w, (26 << 20) / 4, 30000); });
    phase("ts2112_26MB_pair", [&] { for (int i = 0; i < 20; ++i) { touch_spin<<<2112, 256, 0, s1>>>(w, (26 << 20) / 4, 30000); touch_spin<<<2112, 256, 0, s2>>>(w2, (26 << 20) / 4, 30000); } });
    phase("ts264_7MB_alone", [&] { for (int i = 0; i < 20; ++i) touch_spin<<<264, 256, 0, s1>>>(w3, (7 << 20) / 4, 20000); });
    phase("ts264_7MB_pair", [&] { for (int i = 0; i < 20; ++i) { touch_spin<<<264, 256, 0, s1>>>(w3, (7 << 20) / 4, 20000); touch_spin<<<264, 256, 0, s2>>>(w4, (7 << 20) / 4, 20000); } });
    phase("ts4_26MB_alone", [&] { touch_spin<<<4, 256, 0, s1>>>(w, (26 << 20) / 4, 3000); });
    phase("ts4_26MB_pair", [&] { touch_spin<<<4, 256, 0, s1>>>(w, (26 << 20) / 4, 3000); touch_spin<<<4, 256, 0, s2>>>(w2, (26 << 20) / 4, 3000); });
    phase("spin1056_alone", [&] { for (int i = 0; i < 10; ++i) touch_spin<<<1056, 256, 0, s1>>>(w, 0, 100000); });
    phase("spin1056_pair", [&] { for (int i = 0; i < 10; ++i) { touch_spin<<<1056, 256, 0, s1>>>(w, 0, 100000); touch_spin<<<1056, 256, 0, s2>>>(w2, 0, 100000); } });
    phase("ts2112_700MB_alone", [&] { touch_spin<<<2112, 256, 0, s1>>>((unsigned*)a, (size_t)n, 3000); });
    phase("ts2112_700MB_pair", [&] { touch_spin<<<2112, 256, 0, s1>>>((unsigned*)a, (size_t)n, 3000); touch_spin<<<2112, 256, 0, s2>>>((unsigned*)c, (size_t)n, 3000); });
  };
  work();  // warm, unsampled
  printf("-- unsampled above, sampled below --\n");
  CUpti_PmSampling_Start_Params st = {CUpti_PmSampling_Start_Params_STRUCT_SIZE}; st.pPmSamplingObject = en.pPmSamplingObject;
  uint64_t tstart = ts(); CK(cuptiPmSamplingStart(&st));
  work();
  CUpti_PmSampling_Stop_Params sp = {CUpti_PmSampling_Stop_Params_STRUCT_SIZE}; sp.pPmSamplingObject = en.pPmSamplingObject;
  CK(cuptiPmSamplingStop(&sp)); uint64_t tstop = ts();
  printf("sampling %llu..%llu\n", (unsigned long long)tstart, (unsigned long long)tstop);
  CUpti_PmSampling_GetCounterDataSize_Params ds = {CUpti_PmSampling_GetCounterDataSize_Params_STRUCT_SIZE};
  ds.pPmSamplingObject = en.pPmSamplingObject; ds.pMetricNames = ok.data(); ds.numMetrics = ok.size(); ds.maxSamples = 20000;
  CK(cuptiPmSamplingGetCounterDataSize(&ds)); printf("counter data %zu bytes\n", ds.counterDataSize);
  std::vector<uint8_t> cd(ds.counterDataSize);
  CUpti_PmSampling_CounterDataImage_Initialize_Params ci = {CUpti_PmSampling_CounterDataImage_Initialize_Params_STRUCT_SIZE};
  ci.pPmSamplingObject = en.pPmSamplingObject; ci.counterDataSize = cd.size(); ci.pCounterData = cd.data(); CK(cuptiPmSamplingCounterDataImageInitialize(&ci));
  CUpti_PmSampling_DecodeData_Params dd = {CUpti_PmSampling_DecodeData_Params_STRUCT_SIZE};
  dd.pPmSamplingObject = en.pPmSamplingObject; dd.pCounterDataImage = cd.data(); dd.counterDataImageSize = cd.size();
  CK(cuptiPmSamplingDecodeData(&dd)); printf("decode stop %d overflow %d\n", (int)dd.decodeStopReason, (int)dd.overflow);
  CUpti_PmSampling_GetCounterDataInfo_Params gi = {CUpti_PmSampling_GetCounterDataInfo_Params_STRUCT_SIZE}; gi.pCounterDataImage = cd.data(); gi.counterDataImageSize = cd.size();
  CK(cuptiPmSamplingGetCounterDataInfo(&gi)); printf("samples total %zu populated %zu completed %zu\n", gi.numTotalSamples, gi.numPopulatedSamples, gi.numCompletedSamples);
  printf("SAMPLE start end"); for (auto m : ok) printf(" %s", m); printf("\n");
  std::vector<double> v(ok.size());
  for (size_t i = 0; i < gi.numCompletedSamples; ++i) {
    CUpti_PmSampling_CounterData_GetSampleInfo_Params si = {CUpti_PmSampling_CounterData_GetSampleInfo_Params_STRUCT_SIZE};
    si.pPmSamplingObject = en.pPmSamplingObject; si.pCounterDataImage = cd.data(); si.counterDataImageSize = cd.size(); si.sampleIndex = i;
    CK(cuptiPmSamplingCounterDataGetSampleInfo(&si));
    CUpti_Profiler_Host_EvaluateToGpuValues_Params ev = {CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE};
    ev.pHostObject = hi.pHostObject; ev.pCounterDataImage = cd.data(); ev.counterDataImageSize = cd.size(); ev.rangeIndex = i;
    ev.ppMetricNames = ok.data(); ev.numMetrics = ok.size(); ev.pMetricValues = v.data();
    CK(cuptiProfilerHostEvaluateToGpuValues(&ev));
    printf("S %llu %llu", (unsigned long long)si.startTimestamp, (unsigned long long)si.endTimestamp); for (double x : v) printf(" %.4g", x); printf("\n");
  }
  CUpti_PmSampling_Disable_Params di = {CUpti_PmSampling_Disable_Params_STRUCT_SIZE}; di.pPmSamplingObject = en.pPmSamplingObject; cuptiPmSamplingDisable(&di);
  return 0;
}
