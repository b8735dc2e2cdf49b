// DYNAMIX — SwitchCost: the excess time of the first steps after a plan change.
#include "agent/switch_cost.h"

#include <algorithm>
#include <cmath>

#include "framework/core/error.h"

namespace dynamix {

SwitchCost::SwitchCost(Options options) : options_(options) {
  DYNAMIX_CHECK(options_.steps >= 1, "switch cost: steps must be >= 1");
  DYNAMIX_CHECK(options_.min_later >= 2, "switch cost: min_later must be >= 2");
  DYNAMIX_CHECK(options_.min_changes >= 2, "switch cost: min_changes must be >= 2");
  DYNAMIX_CHECK(options_.clamp > 0, "switch cost: clamp must be > 0");
  critical_.reserve(64);
}

void SwitchCost::reset() {
  critical_.clear();
  changed_ = RunningMean{};
  kept_ = RunningMean{};
  window_open_ = false;
}

void SwitchCost::decided(bool changed) {
  score_window();
  critical_.clear();
  window_changed_ = changed;
  window_open_ = true;
}

void SwitchCost::observe(const std::vector<double>& compute_s) {
  if (!window_open_ || compute_s.empty()) return;
  double worst = 0;
  for (double t : compute_s) {
    if (!(t > 0) || !std::isfinite(t)) {  // an unusable step: the window is not scored
      window_open_ = false;
      return;
    }
    worst = std::max(worst, t);
  }
  critical_.push_back(worst);
}

// The window since the last decision: its first `steps` steps' excess over its later steps' mean.
void SwitchCost::score_window() {
  const size_t k = size_t(options_.steps);
  if (!window_open_ || critical_.size() < k + size_t(options_.min_later)) return;
  double later = 0;
  for (size_t i = k; i < critical_.size(); ++i) later += critical_[i];
  later /= double(critical_.size() - k);
  if (!(later > 0)) return;
  double excess = 0;
  for (size_t i = 0; i < k; ++i) excess += std::min(critical_[i] / later - 1, options_.clamp);
  (window_changed_ ? changed_ : kept_).add(excess);
}

double SwitchCost::cost() const {
  if (changed_.n < options_.min_changes) return 0;
  const double kept = kept_.n > 0 ? kept_.mean : 0;
  return std::max(0.0, changed_.mean - kept - changed_.standard_error());
}

}  // namespace dynamix
