// DYNAMIX — per-step change detection between decisions. A rank whose step compute time stays
// outside [expected / factor, expected · factor] for `steps` consecutive steps has changed speed
// (a slowdown, interference that starts or ends): a decision then should not wait for the window
// to end. Only ratios are compared, so no unit or time scale matters.
#pragma once

#include <cstdint>
#include <deque>
#include <vector>

namespace dynamix {

class ChangeAlarm {
 public:
  struct Options {
    double factor = 2.0;  // a rank this many times slower or faster than expected has changed
    // Consecutive steps it must stay so (one step alone is noise); one fewer for a rank arm() names
    // as slowed that runs `factor` times faster than expected: the end of a followed slowdown, where
    // each step at the plan that followed it costs (on the real spells cell 4.6 steps at 11.6 ms
    // over an even step, for 32 ms gained in the spell; docs/AGENT.md item 40).
    int32_t steps = 3;
    // > 0: the rank's mean since the arming must also be off its expected time by more than this
    // share (the restart rule of RankTimeModels), or the alarm waits: a decision on a window whose
    // mean does not show the change would keep the plan (DynamixPolicy) and only cut the window
    // short. Under drifting speeds, 3 slow steps late in a window did that every few windows.
    double confirm = 0;
    // With confirm: the mean of the last quarter of the steps since the arming (recent_steps, the
    // window's compute_recent_s at the decision) confirms a change too, where the quarter holds
    // `steps` steps or more, or at any length for the ranks arm() names (a rank in a slowdown,
    // whose return RankTimeModels reads by the quarter). The mean since the arming lags a change
    // late in a long window, and one just after a decision that followed a spell holds its last
    // slow steps: real runs saw spells of 6-9 steps 4-6 steps in, and some of their ends 12-16
    // steps late, at a plan that gave the spell's ranks half their share. DynamixPolicy reads the
    // ranks that fired (fired_ranks()) by the same quarter where it holds `steps` steps.
    bool recent = false;
  };
  ChangeAlarm() : ChangeAlarm(Options{}) {}
  explicit ChangeAlarm(Options options);
  // Steps from a change to the plan that answers it: the alarm's steps and one more (the request
  // rides on the next step's exchange).
  static double latency_steps() { return Options{}.steps + 1; }

  // After a decision: each rank's expected compute time per step under the new plan (seconds; a
  // value <= 0 or non-finite never alarms). An empty vector disarms the alarm. `slowed` (one flag
  // per rank, or empty): the ranks whose quarter confirms at any length (Options::recent).
  void arm(std::vector<double> expected_s, std::vector<bool> slowed = {});
  // One step's compute times, one per rank. True once per arming, at the step that shows a change.
  bool observe(const std::vector<double>& compute_s);
  bool armed() const { return armed_; }
  // The ranks outside the band whose mean since the arming, or whose last quarter (recent), shows
  // the change, at the step that fired (empty before the first).
  const std::vector<bool>& fired_ranks() const { return fired_ranks_; }
  // A last quarter of a window of `steps` steps holds as many as the alarm needs (Options::recent).
  bool quarter_readable(int64_t steps) const;

 private:
  Options options_;
  std::vector<double> expected_;
  std::vector<int32_t> outside_;  // consecutive steps each rank has been outside the band
  std::vector<double> sum_;       // each rank's compute time summed since the arming
  std::vector<bool> slowed_;
  std::vector<bool> confirmed_;  // this step: outside the band, the change showing
  std::vector<bool> fired_ranks_;
  // One rank's step into its quarter (Options::recent).
  void keep_quarter(std::deque<double>& quarter, double t) const;
  std::vector<std::deque<double>> quarter_;  // each rank's last recent_steps(observed_) compute times
  int32_t observed_ = 0;                     // steps since the arming
  int32_t deferred_ = 0;                     // steps a change confirmed by a quarter has waited
  bool armed_ = false;
};

}  // namespace dynamix
