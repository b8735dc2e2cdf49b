// DYNAMIX — StartCheck: the ranks' mean compute times under the starting plan, against their noise.
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
    sum_[i] += compute_s[i];
    sum_sq_[i] += compute_s[i] * compute_s[i];
  }
  if (++steps_ < options_.min_steps) return false;

  const size_t n = sum_.size();
  const double k = steps_;
  cv_.resize(n);
  double lo = HUGE_VAL, hi = 0;
  for (size_t i = 0; i < n; ++i) {
    const double mean = sum_[i] / k;
    const double var = std::max(0.0, (sum_sq_[i] - k * mean * mean) / (k - 1));
    cv_[i] = std::sqrt(var) / mean;
    lo = std::min(lo, mean);
    hi = std::max(hi, mean);
  }
  std::nth_element(cv_.begin(), cv_.begin() + long(n / 2), cv_.end());
  const double rel_se = cv_[n / 2] / std::sqrt(k) * small_sample_widening(steps_ - 1);
  const double z = extremes_z(n);
  const double slow = hi * (1 - z * rel_se), fast = lo * (1 + z * rel_se);
  if (!(slow > 0) || slow < options_.spread * fast) return false;
  armed_ = false;
  return true;
}

}  // namespace dynamix
