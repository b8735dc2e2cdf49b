// DYNAMIX — gradient noise scale (McCandlish et al.) from per-rank and global gradient norms.
#pragma once

#include <cstdint>
#include <vector>

namespace dynamix {

// One observation of E|g_b|^2 = |G|^2 + tr(Sigma)/b: a mean gradient over `batch` samples.
struct GradNormSample {
  double batch = 0;    // b (samples averaged in the gradient)
  double sq_norm = 0;  // |g_b|^2
};

class NoiseScaleEstimator {
 public:
  struct Options {
    double ema_decay = 0.9;  // weight of the past in the EMA of |G|^2 and tr(Sigma), in [0, 1)
  };

  NoiseScaleEstimator();
  explicit NoiseScaleEstimator(Options options);

  // One step: local pairs (b_i, |g_i|^2) and the global (B, |g|^2). Non-finite or non-positive
  // entries are skipped. Returns false (and changes nothing) when the step cannot separate the
  // two terms (fewer than two distinct batch sizes).
  bool add(const std::vector<int32_t>& local_batches, const std::vector<double>& local_sq_norms,
           double global_batch, double global_sq_norm);
  bool add(const std::vector<GradNormSample>& samples);

  // Bias-corrected EMAs of the per-step least-squares estimates.
  double grad_sq() const;      // |G|^2
  double trace_sigma() const;  // tr(Sigma)
  // B_noise = tr(Sigma)/|G|^2; 0 means unknown (no step yet, or a non-positive estimate).
  double noise_scale() const;
  int64_t steps() const { return steps_; }
  void reset();

  // The last step's raw (unsmoothed) fit, for tests and diagnostics.
  double last_grad_sq() const { return last_g_; }
  double last_trace_sigma() const { return last_s_; }

 private:
  Options options_;
  int64_t steps_ = 0;
  double ema_g_ = 0, ema_s_ = 0, decay_pow_ = 1;
  double last_g_ = 0, last_s_ = 0;
  std::vector<GradNormSample> scratch_;
};

// Pollux statistical efficiency of global batch B relative to B0: (B_noise + B0) / (B_noise + B).
// Returns 1 when B_noise is unknown (<= 0 or non-finite) so callers fall back to raw throughput.
double statistical_efficiency(double batch, double batch0, double noise_scale);

}  // namespace dynamix
