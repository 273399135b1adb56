#include "cuoverlap/model.h"

namespace cuoverlap {

Engine engineOf(const GpuOp& op) {
  switch (op.kind) {
    case OpKind::kKernel: return Engine::kCompute;
    case OpKind::kMemset: return Engine::kMemset;
    case OpKind::kMemcpy: break;
  }
  switch (op.copy_kind) {
    case CopyKind::kHtoD:
    case CopyKind::kHtoA:
    case CopyKind::kUvmHtoD: return Engine::kH2D;
    case CopyKind::kDtoH:
    case CopyKind::kAtoH:
    case CopyKind::kUvmDtoH: return Engine::kD2H;
    case CopyKind::kDtoD:
    case CopyKind::kAtoA:
    case CopyKind::kAtoD:
    case CopyKind::kDtoA:
    case CopyKind::kUvmDtoD: return Engine::kD2D;
    default: return Engine::kOtherCopy;
  }
}

std::uint8_t engineSlot(Engine engine) {
  switch (engine) {
    case Engine::kCompute:
    case Engine::kComm: return 0;
    case Engine::kH2D: return 1;
    case Engine::kD2H: return 2;
    case Engine::kD2D:
    case Engine::kOtherCopy: return 3;
    case Engine::kMemset: return 4;
  }
  return 3;
}

}  // namespace cuoverlap
