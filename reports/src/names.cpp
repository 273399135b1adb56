#include "cuoverlap/names.h"

namespace cuoverlap {

std::string_view engineName(Engine engine) {
  switch (engine) {
    case Engine::kCompute: return "compute";
    case Engine::kH2D: return "h2d";
    case Engine::kD2H: return "d2h";
    case Engine::kD2D: return "d2d";
    case Engine::kOtherCopy: return "other_copy";
    case Engine::kMemset: return "memset";
    case Engine::kComm: return "comm";
  }
  return "unknown";
}

std::string_view gapCauseName(GapCause cause) {
  switch (cause) {
    case GapCause::kSyncWait: return "sync-wait";
    case GapCause::kAllocation: return "allocation";
    case GapCause::kPageableStaging: return "pageable-staging";
    case GapCause::kHostLaunch: return "host-launch";
    case GapCause::kDependency: return "dependency";
    case GapCause::kModuleLoad: return "module-load";
    case GapCause::kHostBusy: return "host-busy";
    case GapCause::kUnknown: return "unknown";
  }
  return "unknown";
}

std::string_view severityName(Severity severity) {
  switch (severity) {
    case Severity::kInfo: return "info";
    case Severity::kWarning: return "warning";
    case Severity::kError: return "error";
  }
  return "unknown";
}

std::string_view opKindName(OpKind kind) {
  switch (kind) {
    case OpKind::kKernel: return "kernel";
    case OpKind::kMemcpy: return "memcpy";
    case OpKind::kMemset: return "memset";
  }
  return "unknown";
}

std::string_view copyKindName(CopyKind kind) {
  switch (kind) {
    case CopyKind::kHtoD: return "HtoD";
    case CopyKind::kDtoH: return "DtoH";
    case CopyKind::kHtoA: return "HtoA";
    case CopyKind::kAtoH: return "AtoH";
    case CopyKind::kAtoA: return "AtoA";
    case CopyKind::kAtoD: return "AtoD";
    case CopyKind::kDtoA: return "DtoA";
    case CopyKind::kDtoD: return "DtoD";
    case CopyKind::kHtoH: return "HtoH";
    case CopyKind::kPtoP: return "PtoP";
    case CopyKind::kUvmHtoD: return "UvmHtoD";
    case CopyKind::kUvmDtoH: return "UvmDtoH";
    case CopyKind::kUvmDtoD: return "UvmDtoD";
    case CopyKind::kUnknown: break;
  }
  return "unknown";
}

std::string_view memKindName(MemKind kind) {
  switch (kind) {
    case MemKind::kPageable: return "pageable";
    case MemKind::kPinned: return "pinned";
    case MemKind::kDevice: return "device";
    case MemKind::kArray: return "array";
    case MemKind::kManaged: return "managed";
    case MemKind::kDeviceStatic: return "device-static";
    case MemKind::kManagedStatic: return "managed-static";
    case MemKind::kUnknown: break;
  }
  return "unknown";
}

std::string_view sourceName(TraceSource source) {
  switch (source) {
    case TraceSource::kCuoverlap: return "cuoverlap";
    case TraceSource::kNsys: return "nsys";
    case TraceSource::kKineto: return "kineto";
  }
  return "unknown";
}

}  // namespace cuoverlap
