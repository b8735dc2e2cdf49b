// DYNAMIX — dynamic loss scaling.
#include "framework/train/loss_scaler.h"

#include <algorithm>
#include <cmath>

#include "framework/core/error.h"

namespace dynamix {

LossScaler::LossScaler(LossScaleOptions options) : options_(options), scale_(options.init) {
  DYNAMIX_CHECK(options_.init >= options_.min_scale && std::isfinite(options_.init),
                "loss scale: bad initial scale");
  DYNAMIX_CHECK(options_.growth_factor > 1 && options_.backoff_factor > 0 && options_.backoff_factor < 1,
                "loss scale: growth factor must be > 1 and backoff factor in (0, 1)");
  DYNAMIX_CHECK(options_.growth_interval >= 1, "loss scale: growth interval must be >= 1");
}

bool LossScaler::update(bool finite) {
  if (!options_.enabled) return true;  // unscaled training applies what it gets, as before
  if (!finite) {
    scale_ = std::max(options_.min_scale, scale_ * options_.backoff_factor);
    good_ = 0;
    ++skipped_;
    return false;
  }
  if (++good_ >= options_.growth_interval) {
    const double grown = scale_ * options_.growth_factor;
    // float32 gradients of a scaled loss overflow long before this; keep S itself finite.
    if (std::isfinite(grown) && grown <= 1e30) scale_ = grown;
    good_ = 0;
  }
  return true;
}

void LossScaler::restore(double scale, int64_t good_steps, int64_t skipped_steps) {
  if (!(scale >= options_.min_scale) || !std::isfinite(scale) || good_steps < 0 || skipped_steps < 0) {
    throw Error("checkpoint: invalid loss-scale state (scale " + std::to_string(scale) + ", good steps " +
                std::to_string(good_steps) + ")");
  }
  scale_ = scale;
  good_ = good_steps;
  skipped_ = skipped_steps;
}

}  // namespace dynamix
