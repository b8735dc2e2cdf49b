// DYNAMIX — ChangeAlarm: consecutive steps outside a ratio band around the expected time.
#include "agent/change_alarm.h"

#include <cmath>
#include <cstddef>
#include <deque>
#include <numeric>
#include <string>
#include <utility>

#include "framework/core/error.h"
#include "framework/core/stats.h"

namespace dynamix {
namespace {

// The mean of `quarter`, oldest first (the decision's compute_recent_s sums the same way).
double mean_of(const std::deque<double>& quarter) {
  return std::accumulate(quarter.begin(), quarter.end(), 0.0) / static_cast<double>(quarter.size());
}

}  // namespace

ChangeAlarm::ChangeAlarm(Options options) : options_(options) {
  DYNAMIX_CHECK(options_.factor > 1, "change alarm: factor must be > 1");
  DYNAMIX_CHECK(options_.steps >= 1, "change alarm: steps must be >= 1");
  DYNAMIX_CHECK(options_.confirm >= 0, "change alarm: confirm must be >= 0");
}

void ChangeAlarm::arm(std::vector<double> expected_s, std::vector<bool> slowed) {
  DYNAMIX_CHECK(slowed.empty() || expected_s.empty() || slowed.size() == expected_s.size(),
                "change alarm: " + std::to_string(slowed.size()) + " slowed-rank flags for " +
                    std::to_string(expected_s.size()) + " ranks");
  expected_ = std::move(expected_s);
  slowed_ = std::move(slowed);
  slowed_.resize(expected_.size(), false);
  outside_.assign(expected_.size(), 0);
  sum_.assign(expected_.size(), 0.0);
  quarter_.resize(expected_.size());
  for (auto& q : quarter_) q.clear();
  observed_ = 0;
  deferred_ = 0;
  armed_ = !expected_.empty();
}

void ChangeAlarm::keep_quarter(std::deque<double>& quarter, double t) const {
  // The last recent_steps(observed_) steps: that count grows by one every 4 steps, so the oldest
  // step leaves on the others, and a rank keeps a quarter of the steps since the arming.
  quarter.push_back(t);
  while (quarter.size() > static_cast<size_t>(recent_steps(observed_))) quarter.pop_front();
}

bool ChangeAlarm::quarter_readable(int64_t steps) const { return recent_steps(steps) >= options_.steps; }

bool ChangeAlarm::observe(const std::vector<double>& compute_s) {
  if (!armed_) return false;
  DYNAMIX_CHECK(compute_s.size() == expected_.size(), "change alarm: " + std::to_string(compute_s.size()) +
                                                          " compute times for " +
                                                          std::to_string(expected_.size()) + " ranks");
  ++observed_;
  bool fired = false, by_quarter = false, pending = false;
  confirmed_.assign(expected_.size(), false);
  for (size_t i = 0; i < expected_.size(); ++i) {
    const double e = expected_[i];
    const double t = compute_s[i];
    const bool usable = e > 0 && std::isfinite(e) && t > 0 && std::isfinite(t);
    const bool outside = usable && (t > e * options_.factor || t * options_.factor < e);
    sum_[i] += usable ? t : e;  // an unusable step counts as expected
    if (options_.recent) keep_quarter(quarter_[i], usable ? t : e);
    outside_[i] = outside ? outside_[i] + 1 : 0;
    const bool by_mean = options_.confirm == 0 || off_by_more_than(sum_[i] / observed_, e, options_.confirm);
    // Only a rank outside the band can confirm a change: the quarter is summed for those alone.
    const bool by_recent = options_.recent && options_.confirm > 0 && outside_[i] > 0 &&
                           (slowed_[i] || quarter_readable(observed_)) &&
                           off_by_more_than(mean_of(quarter_[i]), e, options_.confirm);
    // A rank in a slowdown back below its slow expectation is the slowdown's end, which the plan
    // that followed it pays for at every step: two steps are enough there (Options::steps).
    const bool returning = i < slowed_.size() && slowed_[i] && usable && t * options_.factor < e;
    const bool held = outside_[i] >= (returning ? options_.steps - 1 : options_.steps);
    confirmed_[i] = outside_[i] > 0 && (by_mean || by_recent);  // a change under way that shows
    fired = fired || (held && by_mean);
    by_quarter = by_quarter || (held && by_recent);
    pending = pending || (outside_[i] > 0 && !confirmed_[i]);
  }
  // A change confirmed by the quarter alone waits, up to `steps` steps, for other ranks outside
  // the band whose change does not show yet: changes of several ranks a step or two apart are
  // answered by one decision (in a moving wave one group returns as the next slows; a decision on
  // the return alone left the slowdown to the window's end, +0.8 % there).
  deferred_ = by_quarter && !fired && pending && deferred_ < options_.steps ? deferred_ + 1 : deferred_;
  fired = fired || (by_quarter && (!pending || deferred_ >= options_.steps));
  if (fired) {
    armed_ = false;  // once per decision: the next decision re-arms it
    fired_ranks_ = confirmed_;
  }
  return fired;
}

}  // namespace dynamix
