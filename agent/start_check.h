// DYNAMIX — the first decision of a run, brought forward. A run starts from a guessed plan
// (usually the same batch everywhere) and has no fitted model yet for ChangeAlarm to compare
// with; when the ranks' compute times under that plan differ clearly and by much, every step
// until the window ends runs unbalanced. Only ratios are compared, so no unit or scale matters.
#pragma once

#include <cstdint>
#include <vector>

#include "agent/cluster_state.h"

namespace dynamix {

class StartCheck {
 public:
  struct Options {
    double spread = 1.25;   // slowest / fastest mean compute time that is worth a decision
    int32_t min_steps = 4;  // steps it needs (after the kStartupSteps that start-up costs inflate)
  };
  StartCheck() : StartCheck(Options{}) {}
  explicit StartCheck(Options options);

  // A run (or a simulated episode) starts: the next step observed is its first.
  void arm();
  // A decision was taken: the check has nothing left to do.
  void disarm() { armed_ = false; }
  bool armed() const { return armed_; }
  // One step's compute times, one per rank. True once, at the step where the slowest rank's
  // geometric mean exceeds `spread` times the fastest's even with each moved z standard errors
  // toward the other, on the log scale (the ranks' pooled step-to-step variance of log time; z =
  // 1 + sqrt(2 ln n) for the extremes of n ranks),
  // the standard error widened for the few steps it comes from (small_sample_widening): ranks
  // sharing cores trade the free one for a few steps at a time, and 3 steps' spread alone let a
  // real homogeneous run's start through (docs/AGENT.md, item 18).
  bool observe(const std::vector<double>& compute_s);

 private:
  Options options_;
  std::vector<double> sum_, sum_sq_;  // per rank: sums of log compute time and of its square
  int32_t steps_ = 0;
  int32_t startup_left_ = kStartupSteps;  // start-up steps still to set aside
  bool armed_ = true;
};

}  // namespace dynamix
