// GPU metrics by CUPTI's PM sampling (cupti_pmsampling.h): device-wide hardware counters sampled
// on a fixed GPU-time interval while the program runs (DRAM and L2 traffic, resident warps, PCIe
// bytes), written as GPU_METRICS rows the way Nsight Systems' `--gpu-metrics-devices` exports them
// (schema/trace_schema.h). Experimental and opt-in: CUOVERLAP_GPU_METRICS=<interval in µs>; some
// runs on an H100 still crash at exit inside libnvperf_host (docs/collector.md).
//
// One thread of ours makes every profiler call: it enables sampling on a GPU when the program
// creates its first context there (the creating thread waits for it, about 0.4 s on an H100, so
// that the first kernels are sampled), decodes the hardware buffers every few milliseconds, hands
// the samples to the writer thread, and stops a GPU's sampling before its last context is
// destroyed. PM sampling takes only metrics that one pass of the counters can collect: each GPU
// samples those of the catalogue (gpu_metrics.cpp) that fit together, in order.
#pragma once

#include <chrono>
#include <cstdint>

namespace cuoverlap::collector {

class WriterThread;

namespace gpu_metrics {

// Starts the sampling thread (interval_ns > 0). Devices are sampled from their first context on.
void start(WriterThread& writer, std::uint64_t interval_ns);
// From CUPTI's resource callbacks: a context was created on CUDA device `device` (its GPU's first
// waits for sampling to start), or one is about to be destroyed (its GPU's last waits for its
// samples to be taken: the sampling object dies with the context).
void noteContext(std::uint32_t device);
void noteContextEnding(std::uint32_t device);
// Stops sampling, decodes what the hardware buffers still hold (for at most `timeout`) and writes
// the session values (gpu_metrics.*). Call before the writer stops; nothing when never started.
void finish(WriterThread& writer, std::chrono::milliseconds timeout);
// In a forked child: the sampling thread and PM sampling objects are the parent's.
void detachInForkedChild();

}  // namespace gpu_metrics
}  // namespace cuoverlap::collector
