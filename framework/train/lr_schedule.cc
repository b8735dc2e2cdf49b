// DYNAMIX — learning-rate scaling with the global batch.
#include "framework/train/lr_schedule.h"

#include <cmath>

#include "framework/core/error.h"

namespace dynamix {

LrScaling parse_lr_scaling(const std::string& name) {
  if (name == "linear") return LrScaling::kLinear;
  if (name == "sqrt") return LrScaling::kSqrt;
  if (name == "none") return LrScaling::kNone;
  throw Error("train.lr_scaling must be linear, sqrt or none, got '" + name + "'");
}

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
