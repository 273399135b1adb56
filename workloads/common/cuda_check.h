// Checked CUDA calls for the workload programs. These are our own test programs, not injected
// code, so a failed call ends the program: a workload that cannot trust its GPU state cannot
// produce a result worth verifying.
#pragma once

#include <cstdio>
#include <cstdlib>

#include <cuda_runtime_api.h>

#define CUOVERLAP_CUDA_CHECK(call)                                                     \
  do {                                                                                 \
    cudaError_t cuoverlap_status_ = (call);                                            \
    if (cuoverlap_status_ != cudaSuccess) {                                            \
      std::fprintf(stderr, "error: %s at %s:%d: %s\n", #call, __FILE__, __LINE__,      \
                   cudaGetErrorString(cuoverlap_status_));                             \
      std::exit(1);                                                                    \
    }                                                                                  \
  } while (0)

// After a <<<...>>> launch: catches bad configurations at once rather than at the next sync.
#define CUOVERLAP_CHECK_LAUNCH() CUOVERLAP_CUDA_CHECK(cudaGetLastError())
