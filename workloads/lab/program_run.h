// Runs one lab program on the current GPU: set up (buffers, streams, events, graphs) outside the
// timed range, then the NVTX range `NAME` around its threads, started together, and a device
// synchronize; then tear down. A failed CUDA call never ends the process: it ends the run, whose
// error names the step (`threads[0].steps[3]: copy: cudaMemcpyAsync: invalid argument`).
#pragma once

#include <string>

#include "program.h"

namespace cuoverlap::lab {

struct RunOutcome {
  bool ok = true;
  std::string error;   // the first failure, when !ok
  double host_us = 0;  // host wall time of the NVTX range
};

RunOutcome runProgram(const Program& program, const std::string& range_name);

// Every kind of GPU work the lab issues (kernel, copies of each kind, memset, managed memory and
// prefetch, events, a graph), once, so that lazy loading and first-use costs land before any
// timed range. Returns the device's name; throws std::runtime_error when the GPU is unusable.
std::string warmUp();

}  // namespace cuoverlap::lab
