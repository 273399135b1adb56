// Kernel names as nsys stores them: demangled, short (function name only) and mangled.
#pragma once

#include <string>

namespace cuoverlap::collector {

struct KernelNames {
  std::string demangled, short_name, mangled;
};

// `name` is what CUPTI reports: mangled for C++ kernels, plain for extern "C" ones.
KernelNames kernelNames(const char* name);

// "void ns::scan<int, 4>(int*, int)" -> "scan": no return type, scope, template or parameters.
std::string shortKernelName(const std::string& demangled);

}  // namespace cuoverlap::collector
