// DYNAMIX — StartCheck: the ranks' mean log compute times under the starting plan, against their noise.
#include "agent/start_check.h"

#include <algorithm>
#include <cmath>

#include "framework/core/error.h"
#include "framework/core/stats.h"

namespace dynamix {

StartCheck::StartCheck(Options options) : options_(options) {
  DYNAMIX_CHECK(options_.spread > 1, "start check: spread must be > 1");
  DYNAMIX_CHECK(options_.min_steps >= 2, "start check: min_steps must be >= 2");
}

void StartCheck::arm() {
  sum_.clear();
  sum_sq_.clear();
  steps_ = 0;
  startup_left_ = kStartupSteps;
  armed_ = true;
}

bool StartCheck::observe(const std::vector<double>& compute_s) {
  if (!armed_ || compute_s.size() < 2) return false;
  if (startup_left_ > 0) {  // the process's first steps: start-up costs (cluster_state.h)
    --startup_left_;
    return false;
  }
  const bool usable =
      std::all_of(compute_s.begin(), compute_s.end(), [](double t) { return t > 0 && std::isfinite(t); });
  if (!usable) return false;
  if (sum_.size() != compute_s.size()) {
    sum_.assign(compute_s.size(), 0.0);
    sum_sq_.assign(compute_s.size(), 0.0);
    steps_ = 0;
  }
  for (size_t i = 0; i < compute_s.size(); ++i) {
    const double log_t = std::log(compute_s[i]);
    sum_[i] += log_t;
    sum_sq_[i] += log_t * log_t;
  }
  if (++steps_ < options_.min_steps) return false;

  // On the log scale a stalled step counts by its ratio (a 5x stall adds ln 5 = 1.6 to one of k
  // terms), where on the linear scale it dominated a fast rank's spread; the noise is the ranks'
  // pooled variance, so one rank's stalls widen the bar by their share, not all of it.
  const size_t n = sum_.size();
  const double k = steps_;
  double lo = HUGE_VAL, hi = -HUGE_VAL, pooled_var = 0;
  for (size_t i = 0; i < n; ++i) {
    const double mean = sum_[i] / k;
    pooled_var += std::max(0.0, (sum_sq_[i] - k * mean * mean) / (k - 1)) / double(n);
    lo = std::min(lo, mean);
    hi = std::max(hi, mean);
  }
  const double se = std::sqrt(pooled_var / k) * small_sample_widening(steps_ - 1);
  if (hi - lo - 2 * extremes_z(n) * se < std::log(options_.spread)) return false;
  armed_ = false;
  return true;
}

}  // namespace dynamix
