// DYNAMIX — what a plan change costs, measured online. On a real device a rank's first steps at a
// new batch size run slower (new tensor shapes: allocations, kernel and primitive set-up; on this
// CPU 1.2-2x for the first step and 1.1-1.2x for the second, docs/RESULTS.md §1), so a move whose
// gain over the coming window is smaller than that costs time. After each decision the first
// `steps` steps' critical compute time (the slowest rank's) is compared with the mean of the
// window's later steps, for windows that changed the plan and windows that kept it; the cost is
// the difference of the two running means, in steps of the later part's mean, less one standard
// error (0 until `min_changes` changed windows were seen, and where the difference is noise: the
// simulator without a switch cost). Only ratios: no unit or time scale matters.
#pragma once

#include <cstdint>
#include <vector>

#include "framework/core/stats.h"

namespace dynamix {

class SwitchCost {
 public:
  struct Options {
    int32_t steps = 3;        // first steps after a decision that may carry the cost
    int32_t min_later = 4;    // later steps a window needs to serve as the reference
    int32_t min_changes = 3;  // changed windows before any cost is reported
    double clamp = 2.0;       // at most this much excess per step (a stalled step is not a cost)
  };
  SwitchCost() : SwitchCost(Options{}) {}
  explicit SwitchCost(Options options);

  // A run (or simulated episode) starts: everything learned is dropped.
  void reset();
  // A decision was taken: the window before it is scored, and the next one is a changed one
  // (`changed`: the new plan differs from the one in force) or a kept one.
  void decided(bool changed);
  // One step's compute times, one per rank.
  void observe(const std::vector<double>& compute_s);
  // The window since the last decision is not scored: a rank slowed within it for reasons of its
  // own (a spell, agent/short_spells.h), which a comparison of its first steps with its later ones
  // would count for or against the plan change. Held through spells, the kept windows began slow
  // and the cost read 0.5-0.9 steps where it was 1.
  void disturb() { window_open_ = false; }
  // Excess time of a plan change, in steps (>= 0).
  double cost() const;
  int64_t changes_seen() const { return changed_.n; }

 private:
  void score_window();

  Options options_;
  std::vector<double> critical_;  // this window's slowest-rank compute time per step
  RunningMean changed_, kept_;
  bool window_changed_ = false;
  bool window_open_ = false;  // a decision started the window being observed
};

}  // namespace dynamix
