// DYNAMIX — learning-rate scaling with the global batch.
#include "framework/train/lr_schedule.h"

#include <cmath>

namespace dynamix {

double LrSchedule::at(int64_t step, int64_t global_batch) const {
  const double ratio = static_cast<double>(global_batch) / static_cast<double>(base_batch);
  double f = 1.0;
  if (scaling == LrScaling::kLinear) f = ratio;
  if (scaling == LrScaling::kSqrt) f = std::sqrt(ratio);
  double warm = 1.0;
  if (warmup_steps > 0 && step < warmup_steps) warm = static_cast<double>(step + 1) / warmup_steps;
  return lr0 * f * warm;
}

}  // namespace dynamix
