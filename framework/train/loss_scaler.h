// DYNAMIX — dynamic loss scaling (fp16 training): backward runs on loss x S so that small
// gradients do not flush to zero in half precision; the gradients are multiplied by 1/S while
// they are packed into the buckets (no extra pass), and the averaged gradient's squared norm,
// which every rank computes from the same reduced buckets, says whether any rank overflowed.
// A step with a non-finite gradient is skipped and S backs off; after `growth_interval` finite
// steps in a row S grows. Every rank takes the same decisions from the same inputs.
#pragma once

#include <cstdint>

namespace dynamix {

struct LossScaleOptions {
  bool enabled = false;
  double init = 65536.0;  // 2^16
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  int64_t growth_interval = 2000;
  double min_scale = 1.0;  // never below: a gradient that overflows at S = 1 is reported as such
};

class LossScaler {
 public:
  explicit LossScaler(LossScaleOptions options = {});

  bool enabled() const { return options_.enabled; }
  // The factor for the loss before backward (1 when disabled).
  double scale() const { return options_.enabled ? scale_ : 1.0; }

  // After the step's gradients were reduced: whether they are all finite (a non-finite squared
  // norm). Returns whether the optimizer may apply them (always, when disabled), and updates S.
  bool update(bool finite);

  int64_t skipped_steps() const { return skipped_; }
  int64_t good_steps() const { return good_; }  // finite steps since S last changed

  // For checkpoints.
  void restore(double scale, int64_t good_steps, int64_t skipped_steps);

 private:
  LossScaleOptions options_;
  double scale_ = 1.0;
  int64_t good_ = 0;
  int64_t skipped_ = 0;
};

}  // namespace dynamix
