#include "event_names.h"

#include <array>
#include <utility>

namespace cuoverlap::kineto {
namespace {

bool startsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

// Kineto's memcpyKindString / memoryKindString spellings (libkineto/src/cupti_strings.cpp).
constexpr std::array<std::pair<std::string_view, CopyKind>, 10> kCopyKinds{{
    {"HtoD", CopyKind::kHtoD}, {"DtoH", CopyKind::kDtoH}, {"HtoA", CopyKind::kHtoA},
    {"AtoH", CopyKind::kAtoH}, {"AtoA", CopyKind::kAtoA}, {"AtoD", CopyKind::kAtoD},
    {"DtoA", CopyKind::kDtoA}, {"DtoD", CopyKind::kDtoD}, {"HtoH", CopyKind::kHtoH},
    {"PtoP", CopyKind::kPtoP}}};

constexpr std::array<std::pair<std::string_view, MemKind>, 7> kMemKinds{{
    {"Pageable", MemKind::kPageable}, {"Pinned", MemKind::kPinned}, {"Device", MemKind::kDevice},
    {"Array", MemKind::kArray}, {"Managed", MemKind::kManaged},
    {"Device Static", MemKind::kDeviceStatic}, {"Managed Static", MemKind::kManagedStatic}}};

MemKind memKindNamed(std::string_view text) {
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
  for (const auto& [name, kind] : kMemKinds) {
    if (text == name) return kind;
  }
  return MemKind::kUnknown;
}

// The text between the first '(' and the last ')', or empty.
std::string_view parenthesized(std::string_view name) {
  const auto open = name.find('(');
  const auto close = name.rfind(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close <= open) return {};
  return name.substr(open + 1, close - open - 1);
}

}  // namespace

EventKind eventKindOf(std::string_view cat, std::string_view name) {
  if (cat == "kernel") return EventKind::kKernel;
  if (cat == "gpu_memcpy") return EventKind::kMemcpy;
  if (cat == "gpu_memset") return EventKind::kMemset;
  if (cat == "cuda_runtime") return EventKind::kRuntime;
  if (cat == "cuda_driver") return EventKind::kDriver;
  if (cat == "cuda_sync") return EventKind::kSync;
  if (cat == "user_annotation") return EventKind::kAnnotation;
  if (cat == "gpu_user_annotation") return EventKind::kGpuAnnotation;
  if ((cat == "cpu_op" || cat == "python_function") && startsWith(name, "ProfilerStep#")) {
    return EventKind::kAnnotation;
  }
  return EventKind::kOther;
}

CopyName parseMemcpyName(std::string_view name) {
  CopyName copy;
  if (!startsWith(name, "Memcpy ")) return copy;
  const std::string_view rest = name.substr(7);
  for (const auto& [text, kind] : kCopyKinds) {
    if (startsWith(rest, text)) copy.kind = kind;
  }
  const std::string_view kinds = parenthesized(rest);
  const auto arrow = kinds.find("->");
  if (arrow != std::string_view::npos) {
    copy.src = memKindNamed(kinds.substr(0, arrow));
    copy.dst = memKindNamed(kinds.substr(arrow + 2));
  }
  return copy;
}

MemKind parseMemsetName(std::string_view name) { return memKindNamed(parenthesized(name)); }

SyncType syncTypeOf(std::string_view kind) {
  if (kind.find("Wait") != std::string_view::npos) return SyncType::kStreamWaitEvent;
  if (kind.find("Event") != std::string_view::npos) return SyncType::kEventSynchronize;
  if (kind.find("Stream") != std::string_view::npos) return SyncType::kStreamSynchronize;
  if (kind.find("Context") != std::string_view::npos) return SyncType::kContextSynchronize;
  return SyncType::kUnknown;
}

bool isGraphLaunch(std::string_view api_name) {
  return startsWith(api_name, "cudaGraphLaunch") || startsWith(api_name, "cuGraphLaunch");
}

}  // namespace cuoverlap::kineto
