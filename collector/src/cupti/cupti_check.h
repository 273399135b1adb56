// The one checking macro for every CUPTI and CUDA driver call made by the collector: it logs the
// call, file:line and the error string on stderr and lets the caller carry on or stop tracing.
// It never exits, aborts or throws: the collector lives inside someone else's program.
#pragma once

#include <cuda.h>
#include <cupti.h>

namespace cuoverlap::collector {

bool checkCupti(CUptiResult result, const char* call, const char* file, int line);
bool checkDriver(CUresult result, const char* call, const char* file, int line);

}  // namespace cuoverlap::collector

#define CUOVERLAP_CUPTI(call) ::cuoverlap::collector::checkCupti((call), #call, __FILE__, __LINE__)
// For calls whose failure is an expected answer (e.g. asking the name of an unused callback id):
// checked, never logged.
#define CUOVERLAP_CUPTI_QUIET(call) ((call) == CUPTI_SUCCESS)
#define CUOVERLAP_DRIVER_QUIET(call) ((call) == CUDA_SUCCESS)
#define CUOVERLAP_DRIVER(call) ::cuoverlap::collector::checkDriver((call), #call, __FILE__, __LINE__)
