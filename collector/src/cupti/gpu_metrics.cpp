#include "gpu_metrics.h"

#include <cupti.h>
#include <cupti_pmsampling.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_target.h>
#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "collector_options.h"
#include "cupti/cupti_check.h"
#include "rows.h"
#include "trace_schema.h"
#include "writer_thread.h"

namespace cuoverlap::collector::gpu_metrics {
namespace {

// What each GPU samples, in order of need: a metric is taken when it fits one pass with those
// taken before it (PM sampling refuses more). The id of a metric is its place here, the same on
// every GPU. The first three tell memory-bound kernels and L2 working sets apart (what running two
// kernels side by side costs); warps tell how much of the device a kernel holds.
struct CatalogueMetric {
  const char* cupti;
  const char* name;  // TARGET_INFO_GPU_METRICS.metricName, with its unit
};
constexpr CatalogueMetric kCatalogue[] = {
    {"dram__bytes_read.sum", "DRAM Read [bytes]"},
    {"dram__bytes_write.sum", "DRAM Write [bytes]"},
    {"lts__t_bytes.sum", "L2 Traffic [bytes]"},
    {"sm__warps_active.avg.pct_of_peak_sustained_elapsed", "Warps Active [% of peak]"},
    {"dram__throughput.avg.pct_of_peak_sustained_elapsed", "DRAM Throughput [% of peak]"},
};
constexpr std::size_t kHardwareBufferBytes = 256u << 20;
constexpr std::size_t kMaxCounterDataBytes = 32u << 20;  // one decode's image
constexpr std::chrono::milliseconds kDecodePeriod{10};
// Samples in one decode's image: about 0.1 s of decoding at 50 µs a sample (H100), so that the
// sampling thread's round, and a stop's deadline, wait at most that long on one image.
constexpr std::size_t kMaxImageSamples = 2048;
// How long a context's creation waits for sampling to start on its GPU (about 0.4 s on an H100).
constexpr std::chrono::seconds kEnableWait{5};

struct Device {
  std::uint32_t index = 0;
  CUpti_Profiler_Host_Object* host = nullptr;
  CUpti_PmSampling_Object* sampler = nullptr;
  std::vector<const char*> cupti_names;
  std::vector<std::uint32_t> ids;
  // The config image CUPTI was given: it keeps the pointer while sampling runs (freed or rewritten
  // early, it hung or crashed Kineto's PM sampling: pytorch/kineto#1532), so it lives here, never
  // reallocated, until the sampling object is disabled.
  std::vector<std::uint8_t> config;
  std::vector<std::uint8_t> availability;  // the host object's counter availability image, kept alike
  std::vector<std::uint8_t> counter_data;
  std::vector<double> values;
  std::uint64_t samples = 0, lost = 0, last_start = 0;
  bool overflowed = false;
  bool broken = false;  // decoding failed: the object is left alone from then on
};

struct Sampler {
  WriterThread* writer = nullptr;
  std::uint64_t interval_ns = 0;
  // Under mutex: what the context callbacks ask and the sampling thread answers.
  std::mutex mutex;
  std::condition_variable wake, done_cv;
  std::map<std::uint32_t, int> contexts;     // live contexts per GPU
  std::set<std::uint32_t> pending, settled;  // to enable; enabling ended (sampling or not)
  std::set<std::uint32_t> ending, ended;     // to stop (its last context is going); stopped
  bool stopping = false, done = false;
  std::chrono::steady_clock::time_point final_deadline;
  // The sampling thread's (finish() reads them once done).
  std::vector<Device> devices;
  std::set<std::uint32_t> sampled;  // every GPU sampled at some time
  std::uint64_t samples = 0, lost = 0;
  std::string error;
  bool profiler_ready = false;
};

Sampler* g_sampler = nullptr;  // never destroyed: an exit path may still look
std::atomic<bool> g_detached{false};
// CUOVERLAP_GPU_METRICS_LOG=1: each step of enabling, decoding and stopping on stderr, with the
// milliseconds since start() (what a GPU's setup costs, where it stops).
bool g_log = false;
std::chrono::steady_clock::time_point g_started;

void logStep(const std::string& what) {
  if (!g_log) return;
  const auto ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - g_started).count();
  std::fprintf(stderr, "cuoverlap: gpu metrics: %10.3f ms %s\n", ms, what.c_str());
}

void addError(Sampler& s, const std::string& text) {
  if (s.error.find(text) != std::string::npos) return;
  if (!s.error.empty()) s.error += "; ";
  s.error += text;
}

std::string resultText(CUptiResult result) {
  const char* text = nullptr;
  cuptiGetResultString(result, &text);
  return text != nullptr ? text : "error " + std::to_string(static_cast<int>(result));
}

void destroyHost(CUpti_Profiler_Host_Object* host) {
  if (host == nullptr) return;
  CUpti_Profiler_Host_Deinitialize_Params p{};
  p.structSize = CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE;
  p.pHostObject = host;
  cuptiProfilerHostDeinitialize(&p);
}

// A host object holding `names`, its config image in `config`; the passes they need (0: refused).
std::size_t configure(const std::string& chip, const std::vector<std::uint8_t>& availability,
                      const std::vector<const char*>& names, std::vector<std::uint8_t>& config,
                      CUpti_Profiler_Host_Object*& host) {
  host = nullptr;
  CUpti_Profiler_Host_Initialize_Params init{};
  init.structSize = CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE;
  init.profilerType = CUPTI_PROFILER_TYPE_PM_SAMPLING;
  init.pChipName = chip.c_str();
  init.pCounterAvailabilityImage = availability.data();
  if (cuptiProfilerHostInitialize(&init) != CUPTI_SUCCESS) return 0;
  host = init.pHostObject;
  CUpti_Profiler_Host_ConfigAddMetrics_Params add{};
  add.structSize = CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE;
  add.pHostObject = host;
  add.ppMetricNames = const_cast<const char**>(names.data());
  add.numMetrics = names.size();
  CUpti_Profiler_Host_GetConfigImageSize_Params size{};
  size.structSize = CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE;
  size.pHostObject = host;
  if (cuptiProfilerHostConfigAddMetrics(&add) != CUPTI_SUCCESS ||
      cuptiProfilerHostGetConfigImageSize(&size) != CUPTI_SUCCESS) {
    return 0;
  }
  config.assign(size.configImageSize, 0);
  CUpti_Profiler_Host_GetConfigImage_Params image{};
  image.structSize = CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE;
  image.pHostObject = host;
  image.configImageSize = config.size();
  image.pConfigImage = config.data();
  CUpti_Profiler_Host_GetNumOfPasses_Params passes{};
  passes.structSize = CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE;
  passes.pConfigImage = config.data();
  passes.configImageSize = config.size();
  if (cuptiProfilerHostGetConfigImage(&image) != CUPTI_SUCCESS ||
      cuptiProfilerHostGetNumOfPasses(&passes) != CUPTI_SUCCESS) {
    return 0;
  }
  return passes.numOfPasses;
}

bool initializeCounterData(Device& d) {
  CUpti_PmSampling_CounterDataImage_Initialize_Params p{};
  p.structSize = CUpti_PmSampling_CounterDataImage_Initialize_Params_STRUCT_SIZE;
  p.pPmSamplingObject = d.sampler;
  p.counterDataSize = d.counter_data.size();
  p.pCounterData = d.counter_data.data();
  return cuptiPmSamplingCounterDataImageInitialize(&p) == CUPTI_SUCCESS;
}

bool initializeProfiler(Sampler& s) {
  if (s.profiler_ready) return true;
  CUpti_Profiler_Initialize_Params p{};
  p.structSize = CUpti_Profiler_Initialize_Params_STRUCT_SIZE;
  const CUptiResult r = cuptiProfilerInitialize(&p);
  if (r != CUPTI_SUCCESS) return addError(s, "CUPTI profiler: " + resultText(r)), false;
  s.profiler_ready = true;
  logStep("profiler initialized");
  return true;
}

// Sampling on `index` with the catalogue's metrics that fit one pass; the metric names for the
// trace in `batch`. On failure the reason goes to the session's gpu_metrics.error.
void enableDevice(Sampler& s, std::uint32_t index, GpuMetricBatch& batch) {
  const std::string gpu = "GPU " + std::to_string(index);
  logStep(gpu + ": enabling");
  if (!initializeProfiler(s)) return;
  CUpti_Device_GetChipName_Params chip_params{};
  chip_params.structSize = CUpti_Device_GetChipName_Params_STRUCT_SIZE;
  chip_params.deviceIndex = index;
  if (cuptiDeviceGetChipName(&chip_params) != CUPTI_SUCCESS) return addError(s, gpu + ": unknown chip");
  const std::string chip = chip_params.pChipName;
  CUpti_PmSampling_GetCounterAvailability_Params avail{};
  avail.structSize = CUpti_PmSampling_GetCounterAvailability_Params_STRUCT_SIZE;
  avail.deviceIndex = index;
  CUptiResult r = cuptiPmSamplingGetCounterAvailability(&avail);
  if (r != CUPTI_SUCCESS) return addError(s, gpu + " " + chip + ": PM sampling: " + resultText(r));
  std::vector<std::uint8_t> availability(avail.counterAvailabilityImageSize);
  avail.pCounterAvailabilityImage = availability.data();
  if (cuptiPmSamplingGetCounterAvailability(&avail) != CUPTI_SUCCESS) {
    return addError(s, gpu + " " + chip + ": counters unavailable");
  }
  Device d;
  d.index = index;
  std::vector<std::uint8_t> config;
  logStep(gpu + " " + chip + ": counters available");
  // The whole catalogue first (one host object); metric by metric only when it needs more passes.
  {
    std::vector<const char*> all;
    for (const CatalogueMetric& m : kCatalogue) all.push_back(m.cupti);
    CUpti_Profiler_Host_Object* host = nullptr;
    const std::size_t passes = configure(chip, availability, all, config, host);
    destroyHost(host);
    logStep(gpu + ": the whole catalogue needs " + std::to_string(passes) + " passes");
    if (passes == 1) {
      d.cupti_names = all;
      for (std::uint32_t id = 0; id < std::size(kCatalogue); ++id) d.ids.push_back(id);
    }
  }
  for (std::uint32_t id = 0; id < std::size(kCatalogue) && d.ids.size() != std::size(kCatalogue); ++id) {
    std::vector<const char*> trial = d.cupti_names;
    trial.push_back(kCatalogue[id].cupti);
    CUpti_Profiler_Host_Object* host = nullptr;
    const std::size_t passes = configure(chip, availability, trial, config, host);
    destroyHost(host);
    if (passes != 1) continue;
    d.cupti_names = std::move(trial);
    d.ids.push_back(id);
  }
  logStep(gpu + ": " + std::to_string(d.ids.size()) + " metrics in one pass");
  if (d.cupti_names.empty()) return addError(s, gpu + " " + chip + ": no metric fits one pass");
  d.availability = availability;
  if (configure(chip, d.availability, d.cupti_names, d.config, d.host) != 1) {
    destroyHost(d.host);
    return addError(s, gpu + " " + chip + ": metrics refused");
  }
  CUpti_PmSampling_Enable_Params enable{};
  enable.structSize = CUpti_PmSampling_Enable_Params_STRUCT_SIZE;
  enable.deviceIndex = index;
  r = cuptiPmSamplingEnable(&enable);
  if (r != CUPTI_SUCCESS) {
    destroyHost(d.host);
    return addError(s, gpu + " " + chip + ": PM sampling: " + resultText(r));
  }
  d.sampler = enable.pPmSamplingObject;
  CUpti_PmSampling_SetConfig_Params set{};
  set.structSize = CUpti_PmSampling_SetConfig_Params_STRUCT_SIZE;
  set.pPmSamplingObject = d.sampler;
  set.configSize = d.config.size();
  set.pConfig = d.config.data();
  set.hardwareBufferSize = kHardwareBufferBytes;
  set.samplingInterval = s.interval_ns;
  set.triggerMode = CUPTI_PM_SAMPLING_TRIGGER_MODE_GPU_TIME_INTERVAL;
  set.hwBufferAppendMode = CUPTI_PM_SAMPLING_HARDWARE_BUFFER_APPEND_MODE_KEEP_OLDEST;
  CUpti_PmSampling_GetCounterDataSize_Params size{};
  size.structSize = CUpti_PmSampling_GetCounterDataSize_Params_STRUCT_SIZE;
  size.pPmSamplingObject = d.sampler;
  size.pMetricNames = d.cupti_names.data();
  size.numMetrics = d.cupti_names.size();
  size.maxSamples = 64;
  bool ok = (r = cuptiPmSamplingSetConfig(&set)) == CUPTI_SUCCESS &&
            (r = cuptiPmSamplingGetCounterDataSize(&size)) == CUPTI_SUCCESS;
  if (ok) {
    // As many samples as kMaxCounterDataBytes holds (the image grows with them about linearly).
    const std::size_t per_sample = std::max<std::size_t>(1, size.counterDataSize / 64);
    size.maxSamples = static_cast<std::uint32_t>(std::clamp<std::size_t>(kMaxCounterDataBytes / per_sample, 64, kMaxImageSamples));
    ok = (r = cuptiPmSamplingGetCounterDataSize(&size)) == CUPTI_SUCCESS;
  }
  if (ok) {
    d.counter_data.assign(size.counterDataSize, 0);
    ok = initializeCounterData(d);
  }
  CUpti_PmSampling_Start_Params start{};
  start.structSize = CUpti_PmSampling_Start_Params_STRUCT_SIZE;
  start.pPmSamplingObject = d.sampler;
  if (ok) ok = (r = cuptiPmSamplingStart(&start)) == CUPTI_SUCCESS;
  if (!ok) {
    CUpti_PmSampling_Disable_Params off{};
    off.structSize = CUpti_PmSampling_Disable_Params_STRUCT_SIZE;
    off.pPmSamplingObject = d.sampler;
    cuptiPmSamplingDisable(&off);
    destroyHost(d.host);
    return addError(s, gpu + " " + chip + ": PM sampling: " + resultText(r));
  }
  logStep(gpu + ": sampling started");
  d.values.resize(d.cupti_names.size());
  const std::string source = gpu + " " + chip + " (CUPTI PM sampling)";
  // Names once per GPU: a GPU sampled again after a context's end keeps its metrics' rows.
  if (s.sampled.insert(index).second) {
    for (std::uint32_t id : d.ids) batch.names.push_back({index, id, kCatalogue[id].name, source});
  }
  s.devices.push_back(std::move(d));
}

// Moves the decoded samples into `batch`: one counter-data image of them (`whole` false: the
// sampling thread's round, so that a GPU producing samples faster than they decode cannot keep it
// from enabling another GPU or stopping; the hardware buffer then drops the newest, counted lost),
// or every sample the hardware buffer holds, unless `deadline` passes first.
void drain(Sampler& s, Device& d, GpuMetricBatch& batch, bool whole, std::chrono::steady_clock::time_point deadline) {
  for (;;) {
    CUpti_PmSampling_DecodeData_Params decode{};
    decode.structSize = CUpti_PmSampling_DecodeData_Params_STRUCT_SIZE;
    decode.pPmSamplingObject = d.sampler;
    decode.pCounterDataImage = d.counter_data.data();
    decode.counterDataImageSize = d.counter_data.size();
    if (d.broken) return;
    const CUptiResult r = cuptiPmSamplingDecodeData(&decode);
    if (r != CUPTI_SUCCESS) {
      d.broken = true;
      return addError(s, "GPU " + std::to_string(d.index) + ": decoding: " + resultText(r) +
                             " (sampling stopped there; a shorter interval than the decoding keeps up with?)");
    }
    d.overflowed = d.overflowed || decode.overflow != 0;
    CUpti_PmSampling_GetCounterDataInfo_Params info{};
    info.structSize = CUpti_PmSampling_GetCounterDataInfo_Params_STRUCT_SIZE;
    info.pCounterDataImage = d.counter_data.data();
    info.counterDataImageSize = d.counter_data.size();
    if (cuptiPmSamplingGetCounterDataInfo(&info) != CUPTI_SUCCESS) return;
    for (std::size_t i = 0; i < info.numCompletedSamples; ++i) {
      CUpti_PmSampling_CounterData_GetSampleInfo_Params sample{};
      sample.structSize = CUpti_PmSampling_CounterData_GetSampleInfo_Params_STRUCT_SIZE;
      sample.pPmSamplingObject = d.sampler;
      sample.pCounterDataImage = d.counter_data.data();
      sample.counterDataImageSize = d.counter_data.size();
      sample.sampleIndex = i;
      CUpti_Profiler_Host_EvaluateToGpuValues_Params eval{};
      eval.structSize = CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE;
      eval.pHostObject = d.host;
      eval.pCounterDataImage = d.counter_data.data();
      eval.counterDataImageSize = d.counter_data.size();
      eval.rangeIndex = i;
      eval.ppMetricNames = d.cupti_names.data();
      eval.numMetrics = d.cupti_names.size();
      eval.pMetricValues = d.values.data();
      if (cuptiPmSamplingCounterDataGetSampleInfo(&sample) != CUPTI_SUCCESS ||
          cuptiProfilerHostEvaluateToGpuValues(&eval) != CUPTI_SUCCESS) {
        ++d.lost;
        continue;
      }
      // A sample spanning more than two intervals is not one of the series (on an H100 the first
      // one spans from the configuration, half a second before): left out. A gap of more than one
      // and a half intervals between two starts is samples the hardware buffer dropped.
      if (sample.endTimestamp > sample.startTimestamp + 2 * s.interval_ns) continue;
      if (d.last_start != 0 && sample.startTimestamp > d.last_start + s.interval_ns * 3 / 2) {
        d.lost += (sample.startTimestamp - d.last_start) / s.interval_ns - 1;
      }
      d.last_start = sample.startTimestamp;
      ++d.samples;
      for (std::size_t m = 0; m < d.ids.size(); ++m) {
        batch.values.push_back({sample.startTimestamp, d.index, d.ids[m], d.values[m]});
      }
    }
    if (info.numCompletedSamples > 0) {
      logStep("GPU " + std::to_string(d.index) + ": decoded " + std::to_string(info.numCompletedSamples) + " samples");
    }
    if (!initializeCounterData(d)) return;
    if (decode.decodeStopReason != CUPTI_PM_SAMPLING_DECODE_STOP_REASON_COUNTER_DATA_FULL || !whole) return;
    if (std::chrono::steady_clock::now() > deadline) {
      return addError(s, "GPU " + std::to_string(d.index) + ": samples left undecoded at exit");
    }
  }
}

void stopDevice(Device& d) {
  if (d.broken) return;
  CUpti_PmSampling_Stop_Params stop{};
  stop.structSize = CUpti_PmSampling_Stop_Params_STRUCT_SIZE;
  stop.pPmSamplingObject = d.sampler;
  cuptiPmSamplingStop(&stop);  // fails when the context is gone at exit: nothing to stop
}

void disableDevice(Device& d) {
  if (d.broken) return;  // the driver releases it with the context
  CUpti_PmSampling_Disable_Params off{};
  off.structSize = CUpti_PmSampling_Disable_Params_STRUCT_SIZE;
  off.pPmSamplingObject = d.sampler;
  cuptiPmSamplingDisable(&off);
  destroyHost(d.host);
  d.host = nullptr;
}

// Stops `d` and moves what its hardware buffer holds into `batch`: before its context goes (the
// sampling object dies with it) or at the session's end.
void retire(Sampler& s, Device& d, GpuMetricBatch& batch, std::chrono::steady_clock::time_point deadline) {
  stopDevice(d);
  drain(s, d, batch, true, deadline);
  disableDevice(d);
  s.samples += d.samples;
  s.lost += d.lost;
  if (d.overflowed) addError(s, "GPU " + std::to_string(d.index) + ": hardware buffer overflowed");
}

void run(Sampler& s) {
  using Clock = std::chrono::steady_clock;
  initializeProfiler(s);  // before any context: a tenth of a second less for the first one to wait
  for (;;) {
    std::set<std::uint32_t> pending, ending;
    bool stopping;
    Clock::time_point deadline;
    {
      std::unique_lock<std::mutex> lock(s.mutex);
      s.wake.wait_for(lock, kDecodePeriod,
                      [&s] { return s.stopping || !s.pending.empty() || !s.ending.empty(); });
      pending.swap(s.pending);
      ending.swap(s.ending);
      stopping = s.stopping;
      deadline = s.final_deadline;
    }
    GpuMetricBatch batch;
    if (!stopping) {
      for (std::uint32_t index : pending) enableDevice(s, index, batch);
    }
    for (std::uint32_t index : ending) {
      for (auto d = s.devices.begin(); d != s.devices.end(); ++d) {
        if (d->index != index) continue;
        logStep("GPU " + std::to_string(index) + ": its last context ends");
        retire(s, *d, batch, Clock::now() + kEnableWait);
        s.devices.erase(d);
        break;
      }
    }
    if (!pending.empty() || !ending.empty()) {
      std::lock_guard<std::mutex> lock(s.mutex);
      s.settled.insert(pending.begin(), pending.end());
      s.ended.insert(ending.begin(), ending.end());
      s.done_cv.notify_all();
    }
    if (stopping) {
      logStep("stopping");
      for (Device& d : s.devices) retire(s, d, batch, deadline);
      s.devices.clear();
    } else {
      for (Device& d : s.devices) drain(s, d, batch, false, Clock::time_point::max());
    }
    if (!batch.names.empty() || !batch.values.empty()) s.writer->submitGpuMetrics(std::move(batch));
    if (stopping) {
      logStep("stopped");
      std::lock_guard<std::mutex> lock(s.mutex);
      s.done = true;
      s.done_cv.notify_all();
      return;
    }
  }
}

void stopAtExit();  // below

}  // namespace

void start(WriterThread& writer, std::uint64_t interval_ns) {
  if (interval_ns == 0 || g_sampler != nullptr) return;
  auto* s = new Sampler();
  s->writer = &writer;
  s->interval_ns = interval_ns;
  const char* log = std::getenv("CUOVERLAP_GPU_METRICS_LOG");
  g_log = log != nullptr && std::string(log) == "1";
  g_started = std::chrono::steady_clock::now();
  g_sampler = s;
  // As the writer thread: no asynchronous signal lands here, and nothing ever joins it.
  sigset_t all, previous;
  sigfillset(&all);
  for (int synchronous : {SIGSEGV, SIGBUS, SIGFPE, SIGILL}) sigdelset(&all, synchronous);
  pthread_sigmask(SIG_BLOCK, &all, &previous);
  std::thread([s] { run(*s); }).detach();
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
}

void noteContext(std::uint32_t device) {
  Sampler* s = g_sampler;
  if (s == nullptr || g_detached.load()) return;
  std::unique_lock<std::mutex> lock(s->mutex);
  if (s->stopping || ++s->contexts[device] != 1) return;
  static std::once_flag exit_hook;
  std::call_once(exit_hook, [] { std::atexit(stopAtExit); });
  s->settled.erase(device);
  s->pending.insert(device);
  s->wake.notify_one();
  logStep("context on GPU " + std::to_string(device));
  // The context's creator waits (at most kEnableWait) for sampling to start, so that its first
  // kernels are sampled too: the profiler's calls stay on the sampling thread, where decoding and
  // stopping run (a PM sampling object enabled on one thread and decoded on another corrupted the
  // heap on an H100).
  s->done_cv.wait_for(lock, kEnableWait, [s, device] { return s->settled.count(device) != 0 || s->done; });
}

void noteContextEnding(std::uint32_t device) {
  Sampler* s = g_sampler;
  if (s == nullptr || g_detached.load()) return;
  std::unique_lock<std::mutex> lock(s->mutex);
  auto live = s->contexts.find(device);
  if (s->stopping || live == s->contexts.end() || --live->second != 0) return;
  s->ended.erase(device);
  s->ending.insert(device);
  s->wake.notify_one();
  // The sampling object dies with the context (cudaDeviceReset, cuCtxDestroy): decoding it after
  // corrupted the heap. Its samples are taken while the context still stands.
  s->done_cv.wait_for(lock, 2 * kEnableWait, [s, device] { return s->ended.count(device) != 0 || s->done; });
}

namespace {

// Stops the sampling thread (its GPUs retired) and waits for it, at most `timeout`.
bool stopSampling(Sampler& s, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(s.mutex);
  if (!s.stopping) {
    s.stopping = true;
    s.final_deadline = std::chrono::steady_clock::now() + timeout / 2;
  }
  s.wake.notify_one();
  return s.done_cv.wait_for(lock, timeout, [&s] { return s.done; });
}

// At exit, before CUPTI's and the CUDA runtime's own handlers tear the profiler down under the
// sampling thread (it crashed in libnvperf_host when they ran first): registered at the first
// context's creation, after theirs, so it runs before them.
void stopAtExit() {
  Sampler* s = g_sampler;
  if (s == nullptr || g_detached.load()) return;
  logStep("exit: stopping before the profiler's teardown");
  stopSampling(*s, std::chrono::seconds(10));
}

}  // namespace

void finish(WriterThread& writer, std::chrono::milliseconds timeout) {
  Sampler* s = g_sampler;
  if (s == nullptr || g_detached.load()) return;
  namespace key = schema::session_key;
  logStep("finishing");
  const bool done = stopSampling(*s, timeout);
  writer.setSessionValue(std::string(key::kGpuMetricsIntervalNs), std::to_string(s->interval_ns));
  if (!done) {
    writer.setSessionValue(std::string(key::kGpuMetricsError), "sampling did not stop in time");
    return;
  }
  std::string devices;
  for (std::uint32_t d : s->sampled) devices += (devices.empty() ? "" : ",") + std::to_string(d);
  writer.setSessionValue(std::string(key::kGpuMetricsDevices), devices);
  writer.setSessionValue(std::string(key::kGpuMetricsSamples), std::to_string(s->samples));
  writer.setSessionValue(std::string(key::kGpuMetricsLost), std::to_string(s->lost));
  writer.setSessionValue(std::string(key::kGpuMetricsError), s->error);
  if (!s->error.empty()) {
    std::fprintf(stderr, "cuoverlap: warning: GPU metrics: %s\n", printableForLog(s->error).c_str());
  }
}

void detachInForkedChild() { g_detached.store(true); }

}  // namespace cuoverlap::collector::gpu_metrics
