// DYNAMIX — ChangeAlarm: consecutive steps outside a ratio band around the expected time.
#include "agent/change_alarm.h"

#include <cmath>
#include <string>
#include <utility>

#include "framework/core/error.h"
#include "framework/core/stats.h"

namespace dynamix {

ChangeAlarm::ChangeAlarm(Options options) : options_(options) {
  DYNAMIX_CHECK(options_.factor > 1, "change alarm: factor must be > 1");
  DYNAMIX_CHECK(options_.steps >= 1, "change alarm: steps must be >= 1");
  DYNAMIX_CHECK(options_.confirm >= 0, "change alarm: confirm must be >= 0");
}

void ChangeAlarm::arm(std::vector<double> expected_s) {
  expected_ = std::move(expected_s);
  outside_.assign(expected_.size(), 0);
  sum_.assign(expected_.size(), 0.0);
  observed_ = 0;
  armed_ = !expected_.empty();
}

bool ChangeAlarm::observe(const std::vector<double>& compute_s) {
  if (!armed_) return false;
  DYNAMIX_CHECK(compute_s.size() == expected_.size(), "change alarm: " + std::to_string(compute_s.size()) +
                                                          " compute times for " +
                                                          std::to_string(expected_.size()) + " ranks");
  ++observed_;
  bool fired = false;
  for (size_t i = 0; i < expected_.size(); ++i) {
    const double e = expected_[i];
    const double t = compute_s[i];
    const bool usable = e > 0 && std::isfinite(e) && t > 0 && std::isfinite(t);
    const bool outside = usable && (t > e * options_.factor || t * options_.factor < e);
    sum_[i] += usable ? t : e;  // an unusable step counts as expected
    outside_[i] = outside ? outside_[i] + 1 : 0;
    const bool confirmed =
        options_.confirm == 0 || off_by_more_than(sum_[i] / observed_, e, options_.confirm);
    fired = fired || (outside_[i] >= options_.steps && confirmed);
  }
  if (fired) armed_ = false;  // once per decision: the next decision re-arms it
  return fired;
}

}  // namespace dynamix
