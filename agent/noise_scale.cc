// DYNAMIX — weighted least-squares fit of |G|^2 and tr(Sigma) per step, smoothed by bias-corrected EMAs.
#include "agent/noise_scale.h"

#include <algorithm>
#include <cmath>

#include "framework/core/error.h"
#include "framework/core/stats.h"

namespace dynamix {

NoiseScaleEstimator::NoiseScaleEstimator() : NoiseScaleEstimator(Options{}) {}

NoiseScaleEstimator::NoiseScaleEstimator(Options options) : options_(options) {
  DYNAMIX_CHECK(options_.ema_decay >= 0 && options_.ema_decay < 1,
                "noise scale: ema_decay must be in [0, 1), got " + std::to_string(options_.ema_decay));
}

bool NoiseScaleEstimator::add(const std::vector<int32_t>& local_batches,
                              const std::vector<double>& local_sq_norms, double global_batch,
                              double global_sq_norm) {
  DYNAMIX_CHECK(local_batches.size() == local_sq_norms.size(),
                "noise scale: " + std::to_string(local_batches.size()) + " batch sizes but " +
                    std::to_string(local_sq_norms.size()) + " gradient norms");
  scratch_.clear();
  for (size_t i = 0; i < local_batches.size(); ++i)
    scratch_.push_back({double(local_batches[i]), local_sq_norms[i]});
  scratch_.push_back({global_batch, global_sq_norm});
  return add(scratch_);  // reuses scratch_: no allocation per step once warm
}

bool NoiseScaleEstimator::add(const std::vector<GradNormSample>& samples) {
  // Fit y = G + S·x with x = 1/b. The variance of |g_b|^2 falls roughly like 1/b, so each point is
  // weighted by b: the global gradient (largest b) counts most, as in the two-batch estimator.
  const AffineFit fit = fit_affine(samples.size(), [&](size_t k) {
    const GradNormSample& p = samples[k];
    const bool valid = std::isfinite(p.batch) && std::isfinite(p.sq_norm) && p.batch > 0 && p.sq_norm >= 0;
    return valid ? WeightedPoint{1 / p.batch, p.sq_norm, p.batch} : WeightedPoint{0, 0, 0};
  });
  if (!fit.ok) return false;  // one distinct batch size: terms inseparable
  last_s_ = fit.slope;
  last_g_ = fit.intercept;

  // EMA of the two terms (not of their ratio, which is unstable when |G|^2 is near 0).
  const double d = options_.ema_decay;
  ema_g_ = d * ema_g_ + (1 - d) * last_g_;
  ema_s_ = d * ema_s_ + (1 - d) * last_s_;
  decay_pow_ *= d;
  ++steps_;
  return true;
}

double NoiseScaleEstimator::grad_sq() const { return steps_ == 0 ? 0 : ema_g_ / (1 - decay_pow_); }

double NoiseScaleEstimator::trace_sigma() const { return steps_ == 0 ? 0 : ema_s_ / (1 - decay_pow_); }

double NoiseScaleEstimator::noise_scale() const {
  const double g = grad_sq(), s = trace_sigma();
  if (!(g > 0) || !(s > 0)) return 0;
  const double bn = s / g;
  return std::isfinite(bn) ? bn : 0;
}

void NoiseScaleEstimator::reset() {
  steps_ = 0;
  ema_g_ = ema_s_ = last_g_ = last_s_ = 0;
  decay_pow_ = 1;
}

double statistical_efficiency(double batch, double batch0, double noise_scale) {
  if (!(noise_scale > 0) || !std::isfinite(noise_scale) || !(batch > 0) || !(batch0 > 0)) return 1;
  return (noise_scale + batch0) / (noise_scale + batch);
}

}  // namespace dynamix
