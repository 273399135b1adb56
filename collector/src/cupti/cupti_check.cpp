#include "cupti/cupti_check.h"

#include <cstdio>

namespace cuoverlap::collector {

bool checkCupti(CUptiResult result, const char* call, const char* file, int line) {
  if (result == CUPTI_SUCCESS) return true;
  const char* text = nullptr;
  if (cuptiGetResultString(result, &text) != CUPTI_SUCCESS || text == nullptr) text = "unknown";
  std::fprintf(stderr, "cuoverlap: warning: %s failed at %s:%d: %s (%d)\n", call, file, line, text,
               static_cast<int>(result));
  return false;
}

bool checkDriver(CUresult result, const char* call, const char* file, int line) {
  if (result == CUDA_SUCCESS) return true;
  std::fprintf(stderr, "cuoverlap: warning: %s failed at %s:%d: CUDA driver error %d\n", call,
               file, line, static_cast<int>(result));
  return false;
}

}  // namespace cuoverlap::collector
