#include "cuoverlap/model.h"

namespace cuoverlap {

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
