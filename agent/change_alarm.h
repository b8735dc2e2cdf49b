// DYNAMIX — per-step change detection between decisions. A rank whose step compute time stays
// outside [expected / factor, expected · factor] for `steps` consecutive steps has changed speed
// (a slowdown, interference that starts or ends): a decision then should not wait for the window
// to end. Only ratios are compared, so no unit or time scale matters.
#pragma once

#include <cstdint>
#include <vector>

namespace dynamix {

class ChangeAlarm {
 public:
  struct Options {
    double factor = 2.0;  // a rank this many times slower or faster than expected has changed
    int32_t steps = 3;    // consecutive steps it must stay so (one step alone is noise)
    // > 0: the rank's mean since the arming must also be off its expected time by more than this
    // share (the restart rule of RankTimeModels), or the alarm waits: a decision on a window whose
    // mean does not show the change would keep the plan (DynamixPolicy) and only cut the window
    // short. Under drifting speeds, 3 slow steps late in a window did that every few windows.
    double confirm = 0;
  };
  ChangeAlarm() : ChangeAlarm(Options{}) {}
  explicit ChangeAlarm(Options options);
  // Steps from a change to the plan that answers it: the alarm's steps and one more (the request
  // rides on the next step's exchange).
  static double latency_steps() { return Options{}.steps + 1; }

  // After a decision: each rank's expected compute time per step under the new plan (seconds; a
  // value <= 0 or non-finite never alarms). An empty vector disarms the alarm. `by_recent` (one
  // flag per rank, or empty): ranks the next decision judges by the window's last quarter (a rank
  // in a slowdown, whose return RankTimeModels reads there), confirmed by that quarter's mean too.
  // Their mean since the arming mixes the slowdown's last steps with the speed back: a rank
  // followed at a spell's end ran at a third of its expected time for 12 steps before the mean
  // confirmed it, at a plan that gave it half its share.
  void arm(std::vector<double> expected_s, std::vector<bool> by_recent = {});
  // One step's compute times, one per rank. True once per arming, at the step that shows a change.
  bool observe(const std::vector<double>& compute_s);
  bool armed() const { return armed_; }

 private:
  Options options_;
  std::vector<double> expected_;
  std::vector<int32_t> outside_;  // consecutive steps each rank has been outside the band
  std::vector<double> sum_;       // each rank's compute time summed since the arming
  std::vector<bool> by_recent_;
  std::vector<std::vector<double>> steps_;  // the compute times since the arming of by_recent ranks
  int32_t observed_ = 0;                    // steps since the arming
  int32_t deferred_ = 0;                    // steps a change confirmed by a quarter has waited
  bool armed_ = false;
};

}  // namespace dynamix
