// Export of a trace in the PyTorch profiler's (Kineto's) JSON layout, so that the tools that read
// torch.profiler traces (HolisticTraceAnalysis, TensorBoard's profiler plugin, chrome://tracing,
// ui.perfetto.dev) read ours.
//
// Layout as Kineto writes it: top-level schemaVersion, deviceProperties, distributedInfo (when
// a process has a rank), baseTimeNanoseconds and traceEvents. GPU ops are complete ("X") events
// with pid = device and tid = stream, cat "kernel" (the kernel's name), "gpu_memcpy"
// ("Memcpy HtoD (Pinned -> Device)") or "gpu_memset" ("Memset (Device)"), and args device,
// context, stream, correlation, bytes, grid/block. Runtime and driver calls are cat
// "cuda_runtime" / "cuda_driver" on their host pid/tid with args.correlation; NVTX ranges are
// "user_annotation" (those imported from gpu_user_annotation go back to that category). Each
// call that launched an op is linked to it by an "ac2g" flow (ph s at the call, ph f bp e at
// the op). Synchronization records are left out: HTA counts every event with a stream as GPU
// activity, and a stream sync on the GPU timeline would change the temporal breakdown.
//
// ts/dur are microseconds with three decimals (exact ns) relative to baseTimeNanoseconds, the
// earliest timestamp in the trace, as Kineto >= 2023 writes them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <vector>

#include "cuoverlap/model.h"

namespace cuoverlap {

// The iterations to mark as Kineto's ProfilerStep#N annotations (what HTA splits a trace by):
// step i spans [starts[i], starts[i + 1]), the last one [starts.back(), end), numbered from
// `first_number`. Put on the host thread that made the most API calls (the training loop's).
struct KinetoSteps {
  std::vector<Ns> starts;
  Ns end = 0;
  std::uint64_t first_number = 0;
};

struct KinetoExportStats {
  std::uint64_t ops = 0;     // kernel, gpu_memcpy and gpu_memset events
  std::uint64_t calls = 0;   // cuda_runtime and cuda_driver events
  std::uint64_t flows = 0;   // ac2g flow pairs
  std::uint64_t ranges = 0;  // user_annotation and gpu_user_annotation events
  std::uint64_t steps = 0;   // ProfilerStep#N annotations
  std::uint64_t names_cut = 0;  // event names cut to kKinetoNameBytes
};

// Every event repeats its name, so one long stored name used by many events would multiply the
// export's size: names are cut to this many bytes (with "…"), which keeps the export proportional
// to the trace; real kernel names (templated C++ included) are shorter.
inline constexpr std::size_t kKinetoNameBytes = 1024;

KinetoExportStats writeKinetoTrace(const Trace& trace, std::ostream& out, const KinetoSteps& steps = {});

}  // namespace cuoverlap
