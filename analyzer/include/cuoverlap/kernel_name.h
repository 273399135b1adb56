// How a C++ kernel name is shown where the full name would be too long: template arguments and
// parameters elided ("void ns::k<float, 4>(float*, int)" -> "void ns::k<…>(…)"). Shared by the
// analyzer (evidence prose) and every renderer; the full name stays in the trace and in JSON.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace cuoverlap {

// An unbalanced name ("operator<") is returned whole.
std::string shortKernelName(std::string_view name);

// The names of one table's rows, each shortened as shortKernelName except where two different
// names would read the same: those keep more, step by step, until they differ: first the template
// arguments one level deep ("k<float, Policy<…>>(…)"), then all of them ("k<float,
// Policy<128>>(…)"), then the whole name. So kernels that differ only in their template arguments
// or parameters stay distinguishable.
std::vector<std::string> distinctShortKernelNames(const std::vector<std::string_view>& names);

}  // namespace cuoverlap
