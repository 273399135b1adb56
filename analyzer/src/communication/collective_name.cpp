// What an NCCL kernel's name says about its collective. NCCL names its kernels
//   ncclDevKernel_<Collective>[_<Reduction>_<dtype>]_<ALGORITHM>_<PROTOCOL>   (NCCL >= 2.19)
//   ncclKernel_<Collective>_<ALGORITHM>_<PROTOCOL>[_<Reduction>_<dtype>]      (NCCL <  2.19)
// (plus parameters after "(" in demangled names), and generic kernels such as
// ncclDevKernel_Generic or ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t. The collective is the first
// field; the others are recognised by their values wherever they stand, since the two layouts
// order them differently and some values contain '_' (COLLNET_DIRECT, int8_t, __nv_bfloat16).
#include <array>

#include "cuoverlap/communication.h"

namespace cuoverlap {
namespace {

constexpr std::array<std::string_view, 2> kNcclKernelPrefixes = {"ncclDevKernel_", "ncclKernel_"};
constexpr std::array<std::string_view, 6> kReductions = {"PreMulSum", "SumPostDiv", "Sum",
                                                         "Prod",      "Min",        "Max"};
// Longer values first, so that a value is never taken for its own prefix (f8e4m3 before f8).
constexpr std::array<std::string_view, 24> kDtypes = {
    "__nv_bfloat16", "__nv_fp8_e4m3", "__nv_fp8_e5m2", "f8e4m3", "f8e5m2", "bf16", "f16", "f32",
    "f64",           "i8",            "u8",            "i32",    "u32",    "i64",  "u64", "int8_t",
    "uint8_t",       "int32_t",       "uint32_t",      "int64_t", "uint64_t", "half", "float",
    "double"};
constexpr std::array<std::string_view, 8> kAlgorithms = {
    "COLLNET_DIRECT", "COLLNET_CHAIN", "NVLS_TREE", "NVLS", "RING", "TREE", "PAT", "COLLNET"};
constexpr std::array<std::string_view, 3> kProtocols = {"LL128", "LL", "SIMPLE"};

bool startsWith(std::string_view text, std::string_view prefix) {
  return text.size() >= prefix.size() && text.compare(0, prefix.size(), prefix) == 0;
}

// The value of `values` that the fields at `rest` start with, followed by '_' or the end.
template <std::size_t N>
std::string_view matchField(std::string_view rest, const std::array<std::string_view, N>& values) {
  for (std::string_view value : values) {
    if (startsWith(rest, value) && (rest.size() == value.size() || rest[value.size()] == '_')) {
      return value;
    }
  }
  return {};
}

// Fills the first empty field of `name` that the fields at `rest` start with; returns its length
// (0 when none matches).
std::size_t takeField(std::string_view rest, CollectiveName& name) {
  const std::pair<std::string*, std::string_view> candidates[] = {
      {&name.reduction, matchField(rest, kReductions)},
      {&name.dtype, matchField(rest, kDtypes)},
      {&name.algorithm, matchField(rest, kAlgorithms)},
      {&name.protocol, matchField(rest, kProtocols)},
  };
  for (const auto& [field, value] : candidates) {
    if (!value.empty() && field->empty()) {
      *field = std::string(value);
      return value.size();
    }
  }
  return 0;
}

}  // namespace

CollectiveName parseCollectiveName(std::string_view kernel_name) {
  CollectiveName name;
  if (startsWith(kernel_name, "void ")) kernel_name.remove_prefix(5);
  kernel_name = kernel_name.substr(0, kernel_name.find('('));
  std::string_view rest;
  for (std::string_view prefix : kNcclKernelPrefixes) {
    if (startsWith(kernel_name, prefix)) rest = kernel_name.substr(prefix.size());
  }
  if (rest.empty()) return name;
  const std::size_t type_end = rest.find('_');
  name.type = std::string(rest.substr(0, type_end));
  rest = type_end == std::string_view::npos ? std::string_view() : rest.substr(type_end + 1);
  while (!rest.empty()) {
    std::size_t used = takeField(rest, name);
    if (used == 0) used = std::min(rest.find('_'), rest.size());  // an unknown field: skip it
    rest.remove_prefix(std::min(used + 1, rest.size()));
  }
  return name;
}

std::string describeCollective(std::string_view kernel_name) {
  const CollectiveName name = parseCollectiveName(kernel_name);
  if (name.type.empty()) return std::string(kernel_name.substr(0, kernel_name.find('(')));
  return name.dtype.empty() ? name.type : name.type + " " + name.dtype;
}

}  // namespace cuoverlap
