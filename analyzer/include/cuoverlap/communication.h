// Communication kernels: which kernels run collectives (the one rule, communication_rule.cpp) and
// what a collective kernel's name says about it (collective_name.cpp). Definitions:
// docs/metrics.md, "Communication".
#pragma once

#include <algorithm>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "cuoverlap/model.h"

namespace cuoverlap {

// Whether a kernel of this (demangled or short) name is communication: it starts, after an
// optional "void ", with one of kCommunicationPrefixes. Extending the rule (NVSHMEM, a custom
// collective library) is one entry in that list.
bool isCommunicationKernelName(std::string_view name);

// The rule evaluated once per string of a trace (cached with the trace: trace_index.h), so that
// a per-op query is one byte lookup and building one costs nothing. Valid while the trace lives.
class CommunicationKernels {
 public:
  explicit CommunicationKernels(const Trace& trace);

  bool isCommunication(const GpuOp& op) const {
    return op.kind == OpKind::kKernel && op.name < by_string_->size() && (*by_string_)[op.name] != 0;
  }
  // Whether no kernel name of the trace is a communication kernel's: then no op is one.
  bool noneInTrace() const {
    return std::none_of(by_string_->begin(), by_string_->end(), [](std::uint8_t is) { return is != 0; });
  }
  // engineOf(op), except that communication kernels occupy Engine::kComm.
  Engine engineOf(const GpuOp& op) const {
    return isCommunication(op) ? Engine::kComm : cuoverlap::engineOf(op);
  }

 private:
  const std::vector<std::uint8_t>* by_string_;  // per StringId: 1 = communication kernel name
};

// What an NCCL kernel name says: "ncclDevKernel_AllReduce_Sum_f32_RING_LL" -> AllReduce, Sum,
// f32, RING, LL; the older "ncclKernel_AllReduce_RING_LL_Sum_float" -> the same with dtype
// "float". Fields the name does not carry stay empty; `type` is empty when the name is no
// NCCL kernel name (it is then still communication if the rule says so).
struct CollectiveName {
  std::string type;       // AllReduce, AllGather, ReduceScatter, Broadcast, Reduce, SendRecv, ...
  std::string reduction;  // Sum, Prod, Min, Max, PreMulSum, SumPostDiv
  std::string dtype;      // f32, bf16, ... (new names) or float, half, ... (old names)
  std::string algorithm;  // RING, TREE, NVLS, COLLNET_DIRECT, ...
  std::string protocol;   // LL, LL128, SIMPLE
};
CollectiveName parseCollectiveName(std::string_view kernel_name);

// "AllReduce f32" / "AllGather" / the kernel name itself when it is no NCCL name.
std::string describeCollective(std::string_view kernel_name);

}  // namespace cuoverlap
