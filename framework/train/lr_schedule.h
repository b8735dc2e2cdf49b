// DYNAMIX — learning rate that follows the global batch: lr(B) = lr0 * f(B / B0) with
// f = identity (linear), sqrt, or 1 (none), times a linear warmup over the first steps.
#pragma once

#include <cstdint>

#include "framework/config/choices.h"

namespace dynamix {

struct LrSchedule {
  double lr0 = 0.01;       // at the reference global batch
  int64_t base_batch = 1;  // B0: the initial global batch
  LrScaling scaling = LrScaling::kLinear;
  int64_t warmup_steps = 0;

  // Learning rate for `step` (0-based) at global batch `global_batch`.
  double at(int64_t step, int64_t global_batch) const;
};

}  // namespace dynamix
