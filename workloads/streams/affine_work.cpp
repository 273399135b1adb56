#include "affine_work.h"

namespace cuoverlap {

// Applying x -> m*x + c after M*x + C gives (m*M)*x + (m*C + c): compose one step at a time.
AffineMap composeAffine(int steps) {
  AffineMap map;
  for (int s = 0; s < steps; ++s) {
    map.multiplier *= kAffineMultiplier;
    map.increment = map.increment * kAffineMultiplier + kAffineIncrement;
  }
  return map;
}

}  // namespace cuoverlap
