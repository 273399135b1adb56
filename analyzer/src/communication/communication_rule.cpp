// Which kernels are communication. The rule: a kernel whose name starts with one of
// kCommunicationPrefixes (after an optional "void ", which demanglers put before the names of
// template kernels) runs a collective or point-to-point transfer: NCCL's ncclKernel_* (NCCL < 2.19)
// and ncclDevKernel_* (2.19 and later; RCCL uses the same names). Communication kernels occupy
// Engine::kComm instead of Engine::kCompute in every metric (docs/metrics.md, "Communication").
//
// To extend the rule, add a prefix below and a line to docs/metrics.md: e.g. "nvshmem" for
// NVSHMEM's device-initiated collectives, or the prefix of a custom collective library's kernels.
// A kernel that both computes and communicates (a fused GEMM + all-reduce) is communication under
// this rule only when its name says so.
#include <array>

#include "cuoverlap/communication.h"

#include "cuoverlap/trace_index.h"

namespace cuoverlap {
namespace {

constexpr std::array<std::string_view, 1> kCommunicationPrefixes = {"nccl"};

bool startsWith(std::string_view text, std::string_view prefix) {
  return text.size() >= prefix.size() && text.compare(0, prefix.size(), prefix) == 0;
}

}  // namespace

bool isCommunicationKernelName(std::string_view name) {
  if (startsWith(name, "void ")) name.remove_prefix(5);
  for (std::string_view prefix : kCommunicationPrefixes) {
    if (startsWith(name, prefix)) return true;
  }
  return false;
}

CommunicationKernels::CommunicationKernels(const Trace& trace)
    : by_string_(&communicationKernelNames(trace)) {}

}  // namespace cuoverlap
