// The driver's functions, looked up in the already-loaded libcuda (it loaded us): linking libcuda
// instead would keep the collector's tests from loading on machines without a driver. The runtime
// loads libcuda with RTLD_LOCAL, so RTLD_DEFAULT does not see its symbols: the library is asked for
// by name (RTLD_NOLOAD never loads it).
#pragma once

#include <dlfcn.h>

namespace cuoverlap::collector {

template <typename Function>
Function* driverFunction(const char* name) {
  static void* driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
  void* symbol = driver != nullptr ? dlsym(driver, name) : nullptr;
  if (symbol == nullptr) symbol = dlsym(RTLD_DEFAULT, name);
  return reinterpret_cast<Function*>(symbol);
}

}  // namespace cuoverlap::collector
