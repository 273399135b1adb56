// What Kineto's categories and names mean in the model: event kinds by `cat`, copy direction
// and memory kinds from "Memcpy HtoD (Pageable -> Device)", memset memory kind from
// "Memset (Device)", synchronization kinds from args.cuda_sync_kind.
#pragma once

#include <string_view>

#include "cuoverlap/model.h"

namespace cuoverlap::kineto {

enum class EventKind : std::uint8_t {
  kKernel, kMemcpy, kMemset, kRuntime, kDriver, kSync, kAnnotation, kGpuAnnotation, kOther
};

inline constexpr std::string_view kGpuAnnotationDomain = "gpu_user_annotation";

// By category; a "ProfilerStep#N" in any host category (older PyTorch writes cpu_op) is a range.
EventKind eventKindOf(std::string_view cat, std::string_view name);

struct CopyName {
  CopyKind kind = CopyKind::kUnknown;
  MemKind src = MemKind::kUnknown;
  MemKind dst = MemKind::kUnknown;
};
CopyName parseMemcpyName(std::string_view name);
MemKind parseMemsetName(std::string_view name);
SyncType syncTypeOf(std::string_view kind);
bool isGraphLaunch(std::string_view api_name);

}  // namespace cuoverlap::kineto
