// How a C++ kernel name is shown where the full name would be too long: template arguments and
// parameters elided ("void ns::k<float, 4>(float*, int)" -> "void ns::k<…>(…)"). Shared by the
// analyzer (evidence prose) and every renderer; the full name stays in the trace and in JSON.
#pragma once

#include <string>
#include <string_view>

namespace cuoverlap {

// An unbalanced name ("operator<") is returned whole.
std::string shortKernelName(std::string_view name);

}  // namespace cuoverlap
