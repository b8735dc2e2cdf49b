// DYNAMIX — TrackingCadence: a fraction of the regular window while speeds drift.
#include "agent/tracking_cadence.h"

#include <algorithm>

#include "framework/core/error.h"

namespace dynamix {

TrackingCadence::TrackingCadence(Options options) : options_(options) {
  DYNAMIX_CHECK(options_.divisor >= 1, "tracking cadence: divisor must be >= 1");
  DYNAMIX_CHECK(options_.min_steps >= 1, "tracking cadence: min_steps must be >= 1");
}

void TrackingCadence::decided(int64_t step, int32_t window_steps) {
  regular_steps_ = std::max(regular_steps_, window_steps);
  since_decision_ = 0;
  step_ = step;
}

bool TrackingCadence::observe(bool tracking) {
  ++since_decision_;
  ++step_;
  const int32_t due = steps_due();
  // On the grid the regular decision comes now and answers any request made at this step.
  if (!tracking || due == 0 || since_decision_ + 1 < due || step_ % regular_steps_ == 0) return false;
  const int64_t to_regular = steps_to_regular();
  return to_regular >= options_.min_steps && to_regular < regular_steps_;
}

bool TrackingCadence::regular_decision_near() const {
  if (regular_steps_ <= 0) return false;
  const int64_t to_regular = steps_to_regular();
  return to_regular < options_.min_steps && to_regular < regular_steps_;
}

int64_t TrackingCadence::steps_to_regular() const { return regular_steps_ - (step_ + 1) % regular_steps_; }

void TrackingCadence::reset() {
  regular_steps_ = 0;
  since_decision_ = 0;
  step_ = 0;
}

int32_t TrackingCadence::steps_due() const {
  if (regular_steps_ <= 0) return 0;
  return std::max(options_.min_steps, regular_steps_ / options_.divisor);
}

}  // namespace dynamix
